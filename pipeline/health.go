package pipeline

import (
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/pipeline/view"
)

// A failure that persists must be visible from outside: each sink keeps its
// failure state here, for the stall explainer, /readyz, the status metrics
// and the give-up rule, and logs repeated failures with backoff instead of at
// every attempt.

// sinkHealth is a sink's failure state: since when it has failed without a
// successful flush in between, how often, and the last error. Only the sink
// goroutine writes it, publishing a new healthState at each change (per
// failure, and at the first success after failures: never per record, and
// not per group while healthy); the HTTP handlers, the watcher and the
// checkpointer goroutines load it.
type sinkHealth struct {
	p atomic.Pointer[healthState]
	// warnedSince is the since of the run of failures logged as lasting
	// stall_warning: the watcher's alone.
	warnedSince time.Time
}

// healthState is one state of a sink's health, never changed once published.
type healthState struct {
	since    time.Time // first failure of the current run of failures; zero when healthy
	failures int       // consecutive failed writes, flushes or persists
	lastErr  string
	gaveUp   bool
}

func (h *sinkHealth) load() healthState {
	if st := h.p.Load(); st != nil {
		return *st
	}
	return healthState{}
}

// SinkFailure describes a sink that is failing, for /debug/stalls and
// /readyz (view.SinkFailure).
type SinkFailure = view.SinkFailure

// failed records a failed attempt. It returns the number of consecutive
// failures, and whether this one should be logged: the first, then at
// doubling counts (2, 4, 8, ...), so a sink failing for an hour logs a dozen
// lines, not thousands.
func (h *sinkHealth) failed(now time.Time, err error) (n int, log bool) {
	st := h.load()
	if st.failures == 0 {
		st.since = now
	}
	st.failures++
	st.lastErr = err.Error()
	h.p.Store(&st)
	return st.failures, st.failures&(st.failures-1) == 0
}

// succeeded records a successful flush; it returns how many failures came
// before it (0 when the sink was healthy).
func (h *sinkHealth) succeeded() int {
	st := h.load()
	if st.failures == 0 {
		return 0
	}
	h.p.Store(&healthState{gaveUp: st.gaveUp})
	return st.failures
}

// overdue reports, once per run of failures, that the sink has failed for
// warn; otherwise it returns how long until it has (0 when it is healthy or
// was reported).
func (h *sinkHealth) overdue(now time.Time, warn time.Duration) (d time.Duration, n int, lastErr string, due bool, wait time.Duration) {
	st := h.load()
	if st.failures == 0 || h.warnedSince.Equal(st.since) {
		return 0, 0, "", false, 0
	}
	if d = now.Sub(st.since); d < warn {
		return 0, 0, "", false, warn - d
	}
	h.warnedSince = st.since
	return d, st.failures, st.lastErr, true, 0
}

// failingFor returns how long the sink has been failing (0 if it is not).
func (h *sinkHealth) failingFor(now time.Time) time.Duration {
	st := h.load()
	if st.failures == 0 {
		return 0
	}
	return now.Sub(st.since)
}

func (h *sinkHealth) giveUp() {
	st := h.load()
	if !st.gaveUp {
		st.gaveUp = true
		h.p.Store(&st)
	}
}

// failure returns the sink's failure, or false when it is healthy.
func (h *sinkHealth) failure(sink string, now time.Time) (SinkFailure, bool) {
	st := h.load()
	if st.failures == 0 && !st.gaveUp {
		return SinkFailure{}, false
	}
	f := SinkFailure{Sink: sink, Error: st.lastErr, Failures: st.failures, GaveUp: st.gaveUp}
	if st.failures > 0 {
		f.FailingForMillis = now.Sub(st.since).Milliseconds()
	}
	return f, true
}

// noteFailure records a failed attempt of the sink, with its metrics, and
// logs it with backoff; it reports whether it logged this one.
func (s *sinkRunner) noteFailure(err error, what string) bool {
	n, log := s.health.failed(s.rt.now(), err)
	s.mFailures.Set(float64(n))
	if log {
		s.log.Warn(what+" failed", "consecutive_failures", n, "failing_for", s.health.failingFor(s.rt.now()).Round(time.Millisecond), "err", err)
		s.rt.events.add(Event{Kind: EventSinkFailing, Sink: s.spec.Name, Message: failingMessage(what, n, err)})
	}
	return log
}

// watchHealth logs, once per run of failures, that the sink has failed for
// warn: whatever its on_failure does with the records meanwhile (rewind
// holds the partitions' watermarks, and their stall warnings name the sink;
// dead_letter sends them on, and nothing else would say that the sink
// itself has not written for so long). The watcher calls it; it returns how
// long until the failure lasts warn (0 for none).
func (s *sinkRunner) watchHealth(now time.Time, warn time.Duration) time.Duration {
	d, n, lastErr, due, wait := s.health.overdue(now, warn)
	if due {
		s.log.Warn("sink failing: it has not written successfully for stall_warning", "failing_for", d.Round(time.Millisecond),
			"consecutive_failures", n, "on_failure", s.spec.OnFailure.String(), "err", lastErr)
	}
	return wait
}

// noteSuccess records a successful flush.
func (s *sinkRunner) noteSuccess() {
	if n := s.health.succeeded(); n > 0 {
		s.mFailures.Set(0)
		s.log.Info("sink recovered", "after_failures", n)
		s.rt.events.add(Event{Kind: EventSinkRecovered, Sink: s.spec.Name, Message: recoveredMessage(n)})
	}
}
