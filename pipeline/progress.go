package pipeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// noteCommitted keeps a short summary of s's committed positions for the
// progress display.
func (rt *runtime) noteCommitted(s *sourceRunner, states []checkpoint.PartitionState) {
	if rt.o.progress == nil {
		return
	}
	var b strings.Builder
	b.WriteString(s.spec.Name)
	for i, ps := range states {
		if i == 3 {
			fmt.Fprintf(&b, " +%d", len(states)-3)
			break
		}
		fmt.Fprintf(&b, " %s=%d", s.partName(ps.Partition), ps.Committed)
	}
	rt.commitMu.Lock()
	if rt.committedBy == nil {
		rt.committedBy = make([]string, len(rt.sources))
	}
	rt.committedBy[s.idx] = b.String()
	rt.commitMu.Unlock()
}

// progress starts the one-line live display, if asked for, and returns the
// function that stops it.
func (rt *runtime) progress() func() {
	w := rt.o.progress
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(rt.o.interval)
		defer t.Stop()
		lastIn, lastOut, last := rt.totalIn.Load(), rt.totalOut.Load(), time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				in, out := rt.totalIn.Load(), rt.totalOut.Load()
				sec := now.Sub(last).Seconds()
				rt.commitMu.Lock()
				committed := strings.Join(rt.committedBy, "; ")
				rt.commitMu.Unlock()
				fmt.Fprintf(w, "\r\033[Kin %.0f rec/s  out %.0f rec/s  committed %s", float64(in-lastIn)/sec, float64(out-lastOut)/sec, committed)
				lastIn, lastOut, last = in, out, now
			}
		}
	}()
	return func() { close(done); <-stopped }
}
