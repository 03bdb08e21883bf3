package file

import (
	"fmt"
	"time"
)

// waitFailure is a failure the polling goroutine waits out by itself,
// retrying at every scan: since when, how many attempts in a row, the last
// error. The zero value is no failure. Written by the polling goroutine
// under Source.failMu.
type waitFailure struct {
	since    time.Time
	attempts int
	err      error
}

// fail notes a failed attempt made at now and returns the failure.
func (w *waitFailure) fail(now time.Time, err error) waitFailure {
	if w.attempts == 0 {
		w.since = now
	}
	w.attempts++
	w.err = err
	return *w
}

// end ends the failure and returns it (the zero value when there was none).
func (w *waitFailure) end() waitFailure {
	was := *w
	*w = waitFailure{}
	return was
}

// Failing returns the failure the source is waiting out, if any: the state
// store refusing to record new, rotated or truncated files (which wait
// unread meanwhile), or a file whose first bytes cannot be read to name it
// (it waits unread). With nothing in flight neither stalls a partition, so
// without this the source would look healthy: the runtime shows it in
// /readyz, /debug/stalls and the status (pipeline.FailureReporter). Safe
// for concurrent use.
func (s *Source) Failing() (time.Time, int, error) {
	// Not mu: a read that hangs on a failing disk holds it, and /readyz
	// must answer then.
	s.failMu.Lock()
	defer s.failMu.Unlock()
	switch {
	case s.storeFail.attempts > 0:
		f := s.storeFail
		return f.since, f.attempts, fmt.Errorf("source %s: new, rotated and truncated files wait until the state store records them: %w", s.name, f.err)
	case s.nameFail.attempts > 0:
		f := s.nameFail
		return f.since, f.attempts, fmt.Errorf("source %s: a file waits until its first bytes can be read: %w", s.name, f.err)
	}
	return time.Time{}, 0, nil
}
