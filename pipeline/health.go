package pipeline

import (
	"sync"
	"time"
)

// A failure that persists must be visible from outside: each sink keeps its
// failure state here, for the stall explainer, /readyz, the status metrics
// and the give-up rule, and logs repeated failures with backoff instead of at
// every attempt.

// sinkHealth is a sink's failure state: since when it has failed without a
// successful flush in between, how often, and the last error. The sink
// goroutine (and its persister) write it; readers are the HTTP handlers and
// the checkpointer goroutines, so a mutex guards it (touched per group, never
// per record).
type sinkHealth struct {
	mu       sync.Mutex
	since    time.Time // first failure of the current run of failures; zero when healthy
	failures int       // consecutive failed writes, flushes or persists
	lastErr  string
	gaveUp   bool
}

// SinkFailure describes a sink that is failing, for /debug/stalls and
// /readyz.
type SinkFailure struct {
	Sink             string `json:"sink"`
	Error            string `json:"error"`
	Failures         int    `json:"consecutive_failures"`
	FailingForMillis int64  `json:"failing_for_ms"`
	GaveUp           bool   `json:"gave_up,omitempty"`
}

// failed records a failed attempt. It returns the number of consecutive
// failures, and whether this one should be logged: the first, then at
// doubling counts (2, 4, 8, ...), so a sink failing for an hour logs a dozen
// lines, not thousands.
func (h *sinkHealth) failed(now time.Time, err error) (n int, log bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 {
		h.since = now
	}
	h.failures++
	h.lastErr = err.Error()
	return h.failures, h.failures&(h.failures-1) == 0
}

// succeeded records a successful flush; it returns how many failures came
// before it (0 when the sink was healthy).
func (h *sinkHealth) succeeded() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.failures
	h.failures, h.since, h.lastErr = 0, time.Time{}, ""
	return n
}

// failingFor returns how long the sink has been failing (0 if it is not).
func (h *sinkHealth) failingFor(now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 {
		return 0
	}
	return now.Sub(h.since)
}

func (h *sinkHealth) giveUp() {
	h.mu.Lock()
	h.gaveUp = true
	h.mu.Unlock()
}

// failure returns the sink's failure, or false when it is healthy.
func (h *sinkHealth) failure(sink string, now time.Time) (SinkFailure, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 && !h.gaveUp {
		return SinkFailure{}, false
	}
	f := SinkFailure{Sink: sink, Error: h.lastErr, Failures: h.failures, GaveUp: h.gaveUp}
	if h.failures > 0 {
		f.FailingForMillis = now.Sub(h.since).Milliseconds()
	}
	return f, true
}

// noteFailure records a failed attempt of the sink, with its metrics, and
// logs it with backoff.
func (s *sinkRunner) noteFailure(err error, what string) {
	n, log := s.health.failed(s.rt.now(), err)
	s.mFailures.Set(float64(n))
	if log {
		s.log.Warn(what+" failed", "consecutive_failures", n, "failing_for", s.health.failingFor(s.rt.now()).Round(time.Millisecond), "err", err)
		s.rt.events.add(Event{Kind: EventSinkFailing, Sink: s.spec.Name, Message: failingMessage(what, n, err)})
	}
}

// noteSuccess records a successful flush.
func (s *sinkRunner) noteSuccess() {
	if n := s.health.succeeded(); n > 0 {
		s.mFailures.Set(0)
		s.log.Info("sink recovered", "after_failures", n)
		s.rt.events.add(Event{Kind: EventSinkRecovered, Sink: s.spec.Name, Message: recoveredMessage(n)})
	}
}
