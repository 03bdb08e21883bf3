package pipeline

import (
	"io"
	"log/slog"
	"time"
)

// Option changes how Run runs a pipeline.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	progress io.Writer
	interval time.Duration
}

// WithLogger overrides the default logger (slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithProgress writes a one-line live progress display to w every interval
// (records per second in and out, committed positions), overriding the default
// of no display. The command line passes stderr when it is a terminal.
func WithProgress(w io.Writer, interval time.Duration) Option {
	return func(o *options) { o.progress, o.interval = w, interval }
}
