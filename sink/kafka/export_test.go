package kafka

import "log/slog"

// SetLogger replaces the sink's logger, before Open, for tests that read
// what the sink logs.
func SetLogger(s *Sink, l *slog.Logger) { s.setLogger(l) }
