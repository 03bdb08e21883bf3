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

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\033[K"

// progressLine is one refresh of the progress display: it overwrites the
// line with the rates of records in (read from sources) and out (flushed by
// sinks) over elapsed, and the committed positions.
func progressLine(in, out int64, elapsed time.Duration, committed string) string {
	sec := elapsed.Seconds()
	if sec <= 0 {
		sec = 1
	}
	if committed == "" {
		committed = "-"
	}
	return fmt.Sprintf("%sin %.0f rec/s  out %.0f rec/s  committed %s", clearLine, float64(in)/sec, float64(out)/sec, committed)
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
	// The first interval counts from zero: the pollers start before the
	// display does, and a baseline read inside the goroutine could already
	// include records read before it was scheduled.
	var lastIn, lastOut int64
	last := rt.now()
	go func() {
		defer close(stopped)
		t := time.NewTicker(rt.o.interval)
		defer t.Stop()
		ticks := t.C
		if rt.o.hooks.progressTicks != nil {
			ticks = rt.o.hooks.progressTicks
		}
		for {
			select {
			case <-done:
				fmt.Fprint(w, clearLine)
				return
			case now := <-ticks:
				in, out := rt.totalIn.Load(), rt.totalOut.Load()
				rt.commitMu.Lock()
				committed := strings.Join(rt.committedBy, "; ")
				rt.commitMu.Unlock()
				fmt.Fprint(w, progressLine(in-lastIn, out-lastOut, now.Sub(last), committed))
				lastIn, lastOut, last = in, out, now
			}
		}
	}()
	return func() { close(done); <-stopped }
}
