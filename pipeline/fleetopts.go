package pipeline

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// WithGatherer calls f with the registry of the run's metrics as soon as
// Run has made it, before anything is counted, so that a program running
// several pipelines (internal/fleet) can export them under one /metrics
// with a label of its own and carry the counters of one run into the next.
// The registry keeps its final values after Run returns.
func WithGatherer(f func(prometheus.Gatherer)) Option { return func(o *options) { o.gatherer = f } }

// Pause holds the sources of the runs given it (WithPause) before their next
// poll while it is paused: nothing new is read, the partitions stay
// assigned, and what is in flight is still written and committed. A pause
// holds across runs, so a reload of a paused pipeline starts it paused.
// The zero value is not paused; a Pause is safe for concurrent use.
type Pause struct {
	// resume is nil while not paused; while paused, the channel Resume
	// closes. Pause and Resume swap it; the pollers only load it, once per
	// poll, so a pause costs them no lock.
	resume atomic.Pointer[chan struct{}]
}

// WithPause makes every source of the run wait on p before each poll.
func WithPause(p *Pause) Option { return func(o *options) { o.pause = p } }

// Pause stops polling at each source's next poll.
func (p *Pause) Pause() {
	ch := make(chan struct{})
	p.resume.CompareAndSwap(nil, &ch)
}

// Resume lets the sources poll again.
func (p *Pause) Resume() {
	if ch := p.resume.Swap(nil); ch != nil {
		close(*ch)
	}
}

// Paused reports whether p is paused.
func (p *Pause) Paused() bool { return p.resume.Load() != nil }

// wait returns once p is not paused, or ctx is done (false).
func (p *Pause) wait(ctx context.Context) bool {
	if p == nil {
		return ctx.Err() == nil
	}
	ch := p.resume.Load()
	if ch == nil {
		return true
	}
	select {
	case <-*ch:
		return true
	case <-ctx.Done():
		return false
	}
}
