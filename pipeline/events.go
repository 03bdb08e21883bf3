package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline/view"
)

// The recent events of a run, for the status page and /api/v1/status:
// assignments, revokes and losses of partitions, rewinds, commits that fail
// and recover, sinks that fail, give up or recover, and the run stopping.
// Events are rare (a rebalance, a failure logged with backoff), never per
// record or batch, so a mutex guarding a small ring is enough. Where an
// event repeats (a sink failing for an hour, a partition rewound again and
// again) it is added at the same doubling counts as its log line.

// EventKind names what happened (view.EventKind).
type EventKind = view.EventKind

// The kinds of Event.
const (
	EventAssigned        EventKind = "assigned"         // a source took partitions (Host.Assign)
	EventRevoking        EventKind = "revoking"         // a source gives partitions up: draining before the final commit
	EventRevoked         EventKind = "revoked"          // a revoke finished: final positions committed (or not, said why), partitions forgotten
	EventLost            EventKind = "lost"             // partitions taken away without a commit (Host.Lost)
	EventRewind          EventKind = "rewind"           // a partition replays from its watermark after a failure
	EventCommitFailed    EventKind = "commit_failed"    // Source.Commit failed; retried with backoff
	EventCommitRecovered EventKind = "commit_recovered" // a commit succeeded after failures
	EventSinkFailing     EventKind = "sink_failing"     // a sink's write, flush or persist failed; retried
	EventGaveUp          EventKind = "gave_up"          // a sink failed for give_up_after and applied on_give_up
	EventSinkRecovered   EventKind = "sink_recovered"   // a failing sink flushed successfully again
	EventStopping        EventKind = "stopping"         // the run began to stop, and why
)

// Event is one thing that happened to a run, as /api/v1/status lists it
// (view.Event): events of the same kind, component and message that come
// within a second of the first are merged into one.
type Event = view.Event

const (
	eventRingSize   = 100         // events kept
	eventPartitions = 8           // partition names kept per event
	eventMerge      = time.Second // window in which repeats merge
	eventMsgMax     = 600         // bytes of a message kept (an error can be long)
)

// eventRing keeps the last eventRingSize events.
type eventRing struct {
	now func() time.Time // the runtime's clock; set before the run starts

	mu   sync.Mutex
	buf  [eventRingSize]Event
	next int // slot of the next event
	n    int // events in buf
	// gaveUp lists the sinks whose give-up is recorded: a sink that gave up
	// with on_give_up dead_letter gives up again on every group after.
	gaveUp map[string]bool
}

// add records e, stamped with the runtime's clock, or merges it into the
// last event when that is the same event repeated within eventMerge. A
// sink's give-up is recorded once.
func (r *eventRing) add(e Event) {
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if len(e.Message) > eventMsgMax {
		e.Message = strings.ToValidUTF8(e.Message[:eventMsgMax], "") + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Kind == EventGaveUp {
		if r.gaveUp[e.Sink] {
			return
		}
		if r.gaveUp == nil {
			r.gaveUp = map[string]bool{}
		}
		r.gaveUp[e.Sink] = true
	}
	if r.n > 0 {
		last := &r.buf[(r.next+eventRingSize-1)%eventRingSize]
		if last.Kind == e.Kind && last.Source == e.Source && last.Sink == e.Sink && last.Message == e.Message && now.Sub(last.Time) < eventMerge {
			last.Count++
			for _, p := range e.Partitions {
				if len(last.Partitions) < eventPartitions && !slices.Contains(last.Partitions, p) {
					last.Partitions = append(last.Partitions, p)
				}
			}
			return
		}
	}
	e.Time, e.Count = now, 1
	if len(e.Partitions) > eventPartitions {
		e.Partitions = slices.Clone(e.Partitions[:eventPartitions])
	}
	r.buf[r.next] = e
	r.next = (r.next + 1) % eventRingSize
	r.n = min(r.n+1, eventRingSize)
}

// snapshot returns the events, newest first.
func (r *eventRing) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, r.n)
	for i := 1; i <= r.n; i++ {
		e := r.buf[(r.next+eventRingSize-i)%eventRingSize]
		e.Partitions = slices.Clone(e.Partitions)
		out = append(out, e)
	}
	return out
}

// partNames returns the names of ps, at most eventPartitions of them, for an
// event. It takes hostMu: not for callers that hold it.
func (s *sourceRunner) partNames(ps []checkpoint.Partition) []string {
	names := make([]string, 0, min(len(ps), eventPartitions))
	for _, p := range ps[:min(len(ps), eventPartitions)] {
		names = append(names, s.partName(p))
	}
	return names
}

// The messages of events whose callers keep to one line.

func failingMessage(what string, n int, err error) string {
	return fmt.Sprintf("%s failed (%d in a row), retrying: %v", what, n, err)
}

func recoveredMessage(failures int) string {
	return fmt.Sprintf("flushed again after %d failures", failures)
}

func revokedMessage(commitErr error) string {
	if commitErr != nil {
		return "revoked; the final commit failed, so the next owner reads again from the last committed position: " + commitErr.Error()
	}
	return "revoked: final positions committed"
}
