package pipeline

import (
	"io"
	"log/slog"
	"net/http"
	"time"
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
	hooks    testHooks
}

// testHooks let tests drive the runtime's time and observe its states without
// sleeping. They are set only through options defined in export_test.go; in
// production every field is nil.
type testHooks struct {
	now           func() time.Time // the clock of batch ages and revoke deadlines
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
}

// WithLogger overrides the default logger (slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

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
