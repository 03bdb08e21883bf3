package pipeline

import (
	"context"
	"sync/atomic"
)

// A source that caught up (connector.Batch.CaughtUp) asks the sinks to
// flush their groups now, so that a backlog's tail is not left to MaxAge.
// The request must reach a sink behind every record the source read before
// it, and those went through several workers (one per partition shard):
// sent through one worker only, it could overtake another worker's last
// batch, whose records would then wait for MaxAge in the next group (the
// sink honours one request per MaxAge).
//
// So the poller sends the request through every worker it sent a batch to
// since its last request, numbering its requests, and notes for each worker
// the number of the last request sent through it (caughtSent) before it
// sends it. A sink notes, per source and worker, the number of the last
// request it saw through that worker, and flushes only when it has seen, for
// every worker, the last request sent through it: every batch the source
// read before then reached the sink first, since a worker keeps the order of
// what it is sent. A later request that overtakes an earlier one's stragglers
// only raises what is waited for; when the stragglers come, the latest
// request is complete, which covers the earlier one too.

// noteDispatch marks worker w as holding a batch of s sent after the last
// caught-up request. Called by the poller.
func (s *sourceRunner) noteDispatch(w int) {
	if s.poller.dispatched == nil {
		n := len(s.rt.workers)
		s.poller.dispatched, s.caughtSent = make([]bool, n), make([]atomic.Uint64, n)
	}
	s.poller.dispatched[w] = true
}

// caughtUp asks every sink to flush now, behind every batch of s already
// sent: the source has nothing more for now. It reports false when ctx ended
// first. Called by the poller.
func (rt *runtime) caughtUp(ctx context.Context, s *sourceRunner) bool {
	s.poller.caughtSeq++
	for i, d := range s.poller.dispatched {
		if !d {
			continue
		}
		s.poller.dispatched[i] = false
		// Noted before it is sent, so that no sink takes the request as
		// complete before this worker passed it on.
		s.caughtSent[i].Store(s.poller.caughtSeq)
		select {
		case rt.workers[i].in <- work{src: s, flush: true, caughtUp: true, seq: s.poller.caughtSeq}:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// caughtUpEverywhere notes a caught-up request that came through a worker,
// and reports whether every worker that the source sent batches through has
// passed on the last request sent through it.
func (s *sinkRunner) caughtUpEverywhere(c chunk) bool {
	src := c.src
	if s.caughtSeen == nil {
		s.caughtSeen = make([][]uint64, len(s.rt.sources))
	}
	seen := s.caughtSeen[src.idx]
	if seen == nil {
		seen = make([]uint64, len(src.caughtSent))
		s.caughtSeen[src.idx] = seen
	}
	seen[c.worker] = max(seen[c.worker], c.seq)
	for w := range seen {
		if seen[w] < src.caughtSent[w].Load() {
			return false
		}
	}
	return true
}
