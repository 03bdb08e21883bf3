package pipeline

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// The progress display: one line, redrawn in place every interval, with the
// rates of records in and out, the totals, the errors, and the slowest
// partition (the one a status read ranks first: the longest stalled, then
// the largest lag). It fits the width of the terminal when the writer says
// it (ProgressWidth), dropping what matters least first.

// ProgressWidth is an optional interface of the writer given to
// WithProgress: Width returns the columns the line may take (a terminal's
// width), or 0 for no limit. It is asked at every redraw, so a resized
// terminal is followed.
type ProgressWidth interface {
	Width() int
}

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\033[K"

// progressStats is what one redraw shows.
type progressStats struct {
	in, out         int64   // records read by the sources, and made durable by the sinks, since the start
	inRate, outRate float64 // records per second over the last interval
	errors          int64   // sink errors, failed commits and records rejected, since the start
	// slowest is the slowest partition, "" if none is known; lag is its
	// distance to the end of its partition (-1 when the source does not
	// say), stalled how long its watermark has waited.
	slowest string
	lag     int64
	stalled time.Duration
}

// progressLine is one refresh of the progress display: it overwrites the
// line with p, in at most width columns (0: no limit).
func progressLine(p progressStats, width int) string {
	// Segments in the order shown; keep lists the order they are dropped in
	// when the line is too long, the first dropped first.
	segs := []string{
		fmt.Sprintf("in %s/s  out %s/s", human(p.inRate), human(p.outRate)),
		fmt.Sprintf("read %s  written %s", human(float64(p.in)), human(float64(p.out))),
		fmt.Sprintf("errors %d", p.errors),
		"",
	}
	if p.slowest != "" {
		s := "slowest " + shorten(p.slowest, 40)
		if p.lag >= 0 {
			s += " lag " + human(float64(p.lag))
		}
		if p.stalled >= time.Second {
			s += " stalled " + p.stalled.Round(time.Second).String()
		}
		segs[3] = s
	}
	drop := []int{1, 3, 2} // totals, then the slowest partition, then errors; the rates stay
	line := joinSegs(segs)
	for _, i := range drop {
		if width <= 0 || utf8.RuneCountInString(line) < width {
			break
		}
		segs[i] = ""
		line = joinSegs(segs)
	}
	if width > 0 && utf8.RuneCountInString(line) >= width {
		// The last column is left free: writing into it makes some
		// terminals wrap, and the next redraw would start a new line.
		line = string([]rune(line)[:max(width-1, 0)])
	}
	return clearLine + line
}

func joinSegs(segs []string) string {
	var parts []string
	for _, s := range segs {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "  |  ")
}

// human writes n with at most three significant digits and a suffix:
// 950, 12.3k, 1.2M, 3.4G.
func human(n float64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%.0f", n)
	case n < 1e6:
		return trimZero(fmt.Sprintf("%.1f", n/1e3)) + "k"
	case n < 1e9:
		return trimZero(fmt.Sprintf("%.1f", n/1e6)) + "M"
	}
	return trimZero(fmt.Sprintf("%.1f", n/1e9)) + "G"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// shorten keeps s within n runes, cutting out its middle: a file partition's
// name is its path and identity, and both ends say most.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// progressStatsOf reads the slowest partition and the errors from a status
// read, which ranks each source's partitions worst first.
func (rt *runtime) progressStatsOf(ctx context.Context, p *progressStats) {
	st := rt.statusNow(ctx, 1)
	p.errors, p.slowest, p.lag, p.stalled = 0, "", -1, 0
	for _, n := range st.Nodes {
		p.errors += n.Errors
		if n.Kind == "sink" {
			p.errors += n.Rejected
		}
	}
	for _, s := range st.Sources {
		if len(s.Partitions) == 0 {
			continue
		}
		q := s.Partitions[0]
		stall := time.Duration(q.StallMillis) * time.Millisecond
		lag := int64(-1)
		if q.Lag != nil {
			lag = *q.Lag
		}
		if stall < time.Second && lag <= 0 {
			continue // neither stalled nor behind: not worth a place on the line
		}
		if p.slowest == "" || stall/time.Second > p.stalled/time.Second || (stall/time.Second == p.stalled/time.Second && lag > p.lag) {
			p.slowest, p.lag, p.stalled = s.Name+"/"+q.Name, lag, stall
		}
	}
}

// progress starts the one-line live display, if asked for, and returns the
// function that stops it.
func (rt *runtime) progress() func() {
	w := rt.o.progress
	if w == nil {
		return func() {}
	}
	width := func() int { return 0 }
	if pw, ok := w.(ProgressWidth); ok {
		width = pw.Width
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	// The first interval counts from zero: the pollers start before the
	// display does, and a baseline read inside the goroutine could already
	// include records read before it was scheduled.
	var lastIn, lastOut int64
	last := rt.now()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(stopped)
		t := time.NewTicker(rt.o.interval)
		defer t.Stop()
		ticks := t.C
		if rt.o.hooks.progressTicks != nil {
			ticks = rt.o.hooks.progressTicks
		}
		var p progressStats
		for {
			select {
			case <-done:
				io.WriteString(w, clearLine)
				return
			case now := <-ticks:
				p.in, p.out = rt.totalIn.Load(), rt.totalOut.Load()
				if sec := now.Sub(last).Seconds(); sec > 0 {
					p.inRate, p.outRate = float64(p.in-lastIn)/sec, float64(p.out-lastOut)/sec
				}
				rt.progressStatsOf(ctx, &p)
				io.WriteString(w, progressLine(p, width()))
				lastIn, lastOut, last = p.in, p.out, now
			}
		}
	}()
	return func() { cancel(); close(done); <-stopped }
}
