package pipeline

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option changes how Run runs a pipeline.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	progress io.Writer
	interval time.Duration
	report   func(*Report)
	mux      *http.ServeMux
	handover *Handover
	started  func()
	gatherer func(prometheus.Gatherer)
	pause    *Pause
	hooks    testHooks
}

// testHooks let tests drive the runtime's time and observe its states without
// sleeping. They are the runtime's one kind of test seam: the clock and every
// hook are fields here, set only through Options (those of export_test.go
// for the external tests; the internal tests write an Option of their own),
// never through package variables. In production every field is nil. The
// build-tagged broken variants (unsafe_*.go) are not seams: they are
// constants in a normal build.
type testHooks struct {
	now           func() time.Time // the runtime's clock (runtime.now): batch ages, revoke deadlines, the checkpointer's waits, events, dead letters, taps
	stallTicks    <-chan time.Time // replaces the stall refresh ticker
	progressTicks <-chan time.Time // replaces the progress display's ticker
	lingerTicks   <-chan time.Time // replaces every sink's linger timer
	listening     func(addr string)
	// committed is called by a checkpointer goroutine after each commit
	// round, once the watermark and committed gauges are up to date.
	committed func(source string)
	// started is called with the runtime once every goroutine started
	// (tests in package pipeline look at its tables).
	started func(*runtime)
	// stepped is called by a checkpointer goroutine after each step of the
	// commit policy; rewound by a poller right after a rewind's new epoch
	// started, with a function that wakes the checkpointer goroutine.
	stepped func(source string)
	rewound func(s *sourceRunner, wake func())
	// paused is called by a poller each time it pauses for backpressure,
	// with the batches and bytes in flight.
	paused func(source string, batches, bytes int64)
}

// WithLogger overrides the default logger (slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithStarted calls f once the run has started: its endpoints listen (on
// Metrics.Address or the mux of WithServeMux), every sink is open and every
// goroutine runs. It is not called when Run fails before that. f runs on
// Run's goroutine and must not block; the command line uses it to tell
// systemd it is ready.
func WithStarted(f func()) Option { return func(o *options) { o.started = f } }

// WithServeMux registers the runtime's endpoints (/metrics, /healthz,
// /readyz, /debug/stalls) on mux, for a program that serves HTTP itself;
// Metrics.Address may then stay empty.
func WithServeMux(mux *http.ServeMux) Option { return func(o *options) { o.mux = mux } }

// WithProgress writes a one-line live progress display to w every interval,
// overriding the default of no display: records per second in and out, the
// totals, the errors, and the slowest partition (the longest stalled, then
// the largest lag). Each write is one whole line that starts by returning
// to the start of the line and erasing it; the last write only erases it.
// When w implements ProgressWidth the line keeps within its width. The
// command line passes stderr when it is a terminal.
func WithProgress(w io.Writer, interval time.Duration) Option {
	return func(o *options) { o.progress, o.interval = w, interval }
}
