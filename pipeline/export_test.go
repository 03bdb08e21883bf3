package pipeline

import (
	"time"

	"github.com/weir-etl/weir/pipeline/view"
)

// WithPauseHook calls f from a poller each time it pauses for backpressure,
// with the batches and bytes in flight.
func WithPauseHook(f func(source string, batches, bytes int64)) Option {
	return func(o *options) { o.hooks.paused = f }
}

// WithClock makes the runtime read time from now (batch ages, revoke
// deadlines, the checkpointer's waits, events, dead letters, taps) and refresh stall reports when stallTicks delivers, instead of on
// its own ticker.
func WithClock(now func() time.Time, stallTicks <-chan time.Time) Option {
	return func(o *options) { o.hooks.now, o.hooks.stallTicks = now, stallTicks }
}

// WithProgressTicks refreshes the progress display when ticks delivers.
func WithProgressTicks(ticks <-chan time.Time) Option {
	return func(o *options) { o.hooks.progressTicks = ticks }
}

// WithListening calls f with the metrics endpoint's address once it listens.
func WithListening(f func(addr string)) Option {
	return func(o *options) { o.hooks.listening = f }
}

// WithCommitted calls f from a source's checkpointer goroutine after every
// commit round, once the watermark and committed gauges are up to date. The
// runtime waits for f: a test may inspect the running pipeline from it.
func WithCommitted(f func(source string)) Option {
	return func(o *options) { o.hooks.committed = f }
}

// ProgressLine exposes the progress display's line format.
func ProgressLine(in, out int64, inRate, outRate float64, errors int64, slowest string, lag int64, stalled time.Duration, width int) string {
	return view.ProgressLine(view.Progress{In: in, Out: out, InRate: inRate, OutRate: outRate, Errors: errors, Slowest: slowest, Lag: lag, Stalled: stalled}, width)
}

// WithLingerTicks makes every sink check its linger (see
// BatchSettings.Linger) when ticks delivers, against the clock of WithClock,
// instead of on its own timer.
func WithLingerTicks(ticks <-chan time.Time) Option {
	return func(o *options) { o.hooks.lingerTicks = ticks }
}
