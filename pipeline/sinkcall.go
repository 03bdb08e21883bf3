package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// A sink call that does not return is a failure too, one the sink's health
// never hears of: no error comes back to count. A connector that waits out
// its server inside a call (a receiver's long Retry-After, a catalog call
// with a long timeout, a connection that hangs) holds its group and its
// partitions meanwhile. So the sink goroutine and the persister note here
// when they enter a call of the connector and when it returns; the readers
// (/readyz, /debug/stalls, the status, the summary and the watcher) age the
// call in progress against the clock, and once it has lasted stall_warning
// the sink shows as failing with "its flush has not returned for 45s" where
// a failing sink shows its last error (sinkRunner.failure).

// callKind names a call of the connector.
type callKind int32

const (
	callWrite callKind = iota + 1
	callFlush
	callAbort
	callSeal
	callPersist
	callDiscard
)

func (k callKind) String() string {
	switch k {
	case callWrite:
		return "write"
	case callFlush:
		return "flush"
	case callAbort:
		return "abort"
	case callSeal:
		return "seal"
	case callPersist:
		return "persist"
	case callDiscard:
		return "discard"
	}
	return "call"
}

// callWatch is the call one goroutine of a sink is in. Only that goroutine
// writes it, twice a call (never per record); the readers load it.
type callWatch struct {
	since atomic.Int64 // UnixNano of the runtime's clock when the call began; 0 when none
	kind  atomic.Int32
	// warned is the since of the call last logged: the watcher's alone.
	warned int64
}

func (w *callWatch) begin(k callKind, now time.Time) {
	w.kind.Store(int32(k))
	w.since.Store(now.UnixNano())
}

func (w *callWatch) end() { w.since.Store(0) }

// sinkCall is a call in progress.
type sinkCall struct {
	kind  callKind
	since time.Time
	at    int64 // since, as stored: the watcher's key
}

func (w *callWatch) load() (sinkCall, bool) {
	at := w.since.Load()
	if at == 0 {
		return sinkCall{}, false
	}
	return sinkCall{kind: callKind(w.kind.Load()), since: time.Unix(0, at), at: at}, true
}

func (c sinkCall) message(now time.Time) string {
	return fmt.Sprintf("its %s has not returned for %v", c.kind, now.Sub(c.since).Round(time.Millisecond))
}

// sinkWrite, sinkFlush, sinkAbort and sinkSeal are the sink goroutine's
// calls of the connector, noted in s.call.
func (s *sinkRunner) sinkWrite(ctx context.Context, recs []record.Record) error {
	s.call.begin(callWrite, s.rt.now())
	defer s.call.end()
	return s.spec.Sink.Write(ctx, recs)
}

func (s *sinkRunner) sinkFlush(ctx context.Context) error {
	s.call.begin(callFlush, s.rt.now())
	defer s.call.end()
	return s.spec.Sink.Flush(ctx)
}

func (s *sinkRunner) sinkAbort(ctx context.Context) error {
	s.call.begin(callAbort, s.rt.now())
	defer s.call.end()
	return s.spec.Sink.Abort(ctx)
}

func (s *sinkRunner) sinkSeal(ctx context.Context) (connector.SealedGroup, error) {
	s.call.begin(callSeal, s.rt.now())
	defer s.call.end()
	return s.sealer.Seal(ctx)
}

// persistGroup and discardGroup are the persister's calls, noted in
// s.pcall.
func (s *sinkRunner) persistGroup(ctx context.Context, sg connector.SealedGroup) error {
	s.pcall.begin(callPersist, s.rt.now())
	defer s.pcall.end()
	return sg.Persist(ctx)
}

func (s *sinkRunner) discardGroup(ctx context.Context, sg connector.SealedGroup) error {
	s.pcall.begin(callDiscard, s.rt.now())
	defer s.pcall.end()
	return sg.Discard(ctx)
}

// hungCall returns the oldest call of the sink's goroutines that has lasted
// warn or more.
func (s *sinkRunner) hungCall(now time.Time, warn time.Duration) (sinkCall, bool) {
	var out sinkCall
	found := false
	for _, cw := range []*callWatch{&s.call, &s.pcall} {
		if c, ok := cw.load(); ok && now.Sub(c.since) >= warn && (!found || c.since.Before(out.since)) {
			out, found = c, true
		}
	}
	return out, found
}

// failure returns the sink's failure: its health's when it is failing,
// otherwise a call that has not returned for stall_warning; false when it
// has neither.
func (s *sinkRunner) failure(now time.Time) (SinkFailure, bool) {
	if f, ok := s.health.failure(s.spec.Name, now); ok {
		return f, true
	}
	if c, ok := s.hungCall(now, s.rt.g.spec.Checkpoint.StallWarning); ok {
		return SinkFailure{Sink: s.spec.Name, Error: c.message(now), FailingForMillis: now.Sub(c.since).Milliseconds(), Waiting: true}, true
	}
	return SinkFailure{}, false
}

// watchCall logs a call of the sink that has lasted warn, once per call; it
// returns how long until the call in progress lasts warn (0 for none). The
// watcher calls it.
func (s *sinkRunner) watchCall(now time.Time, warn time.Duration) time.Duration {
	var next time.Duration
	for _, w := range []*callWatch{&s.call, &s.pcall} {
		c, ok := w.load()
		if !ok || w.warned == c.at {
			continue
		}
		if d := now.Sub(c.since); d < warn {
			if next == 0 || warn-d < next {
				next = warn - d
			}
			continue
		}
		w.warned = c.at
		s.log.Warn("sink call stalled: it has not returned for stall_warning", "call", c.kind.String(), "for", now.Sub(c.since).Round(time.Millisecond))
		s.rt.events.add(Event{Kind: EventSinkFailing, Sink: s.spec.Name, Message: "stalled: " + c.message(now)})
	}
	return next
}
