package pipeline

import (
	"context"
	"io"
	"time"

	"github.com/weir-etl/weir/pipeline/view"
)

// The progress display: one line, redrawn in place every interval, with the
// rates of records in and out, the totals, the errors, and the slowest
// partition. The line is a rendering of the read model (view.ProgressLine
// of view.ProgressOf); here is the goroutine that redraws it, fitting the
// width of the terminal when the writer says it (ProgressWidth).

// ProgressWidth is an optional interface of the writer given to
// WithProgress: Width returns the columns the line may take (a terminal's
// width), or 0 for no limit. It is asked at every redraw, so a resized
// terminal is followed.
type ProgressWidth interface {
	Width() int
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
		var p view.Progress
		for {
			select {
			case <-done:
				io.WriteString(w, view.ClearLine)
				return
			case now := <-ticks:
				p.In, p.Out = rt.totalIn.Load(), rt.totalOut.Load()
				if sec := now.Sub(last).Seconds(); sec > 0 {
					p.InRate, p.OutRate = float64(p.In-lastIn)/sec, float64(p.Out-lastOut)/sec
				}
				view.ProgressOf(rt.model(ctx, true), &p)
				io.WriteString(w, view.ProgressLine(p, width()))
				lastIn, lastOut, last = p.In, p.Out, now
			}
		}
	}()
	return func() { cancel(); close(done); <-stopped }
}
