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
//
// A source paused at its in-flight limits sends its request the same way,
// numbered in the same sequence (pressed, below): the names caughtSeq,
// caughtSent and caughtUpEverywhere serve both.

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
	return rt.requestFlush(ctx, s, work{src: s, flush: true, caughtUp: true})
}

// pressed asks every sink whose open group holds much of what s has in
// flight to flush it now, behind every batch of s already sent: s paused at
// its in-flight limits, with inflight batches in flight.
//
// Without it a group that holds records of most of the batches in flight
// waits for MaxAge, and the source with it: a filter that keeps one record
// in a thousand spreads a group of 10,000 records over 10,000 batches, ten
// times the default max_in_flight_batches, so the source read 1,024
// batches and then waited for MaxAge, again and again. A group holds "much" when it spans at least one share
// of the batches in flight, a share being what the open group and the groups
// being made durable (batch.overlap) would each have if they split them
// evenly, plus one share for reading ahead (pressureShares): then sealing it
// frees the source soonest, and in a pipeline whose groups fill well before
// the limit it is never asked.
func (rt *runtime) pressed(ctx context.Context, s *sourceRunner, inflight int64) bool {
	return rt.requestFlush(ctx, s, work{src: s, flush: true, pressure: max(inflight, 1)})
}

// requestFlush sends the flush request w through every worker s sent a batch
// to since its last request.
func (rt *runtime) requestFlush(ctx context.Context, s *sourceRunner, w work) bool {
	s.poller.caughtSeq++
	w.seq = s.poller.caughtSeq
	for i, d := range s.poller.dispatched {
		if !d {
			continue
		}
		s.poller.dispatched[i] = false
		// Noted before it is sent, so that no sink takes the request as
		// complete before this worker passed it on.
		s.caughtSent[i].Store(s.poller.caughtSeq)
		select {
		case rt.workers[i].in <- w:
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

// pressureShares is how many shares of its source's batches in flight a
// sink's open group may span before a pressure request seals it (see
// pressed): the open group's, one for each group being made durable, and
// one for reading ahead.
func (s *sinkRunner) pressureShares() int64 {
	if s.sealer != nil {
		return int64(s.spec.Batch.Overlap) + 2
	}
	return 2
}

// holdsMuchOf reports whether the open group spans at least one share of
// inflight batches (see pressed).
func (s *sinkRunner) holdsMuchOf(inflight int64) bool {
	return holdsMuch(len(s.group), len(s.held.cur.Load().list()), s.pressureShares(), inflight)
}

// holdsMuch is holdsMuchOf's decision: an open group of records records that
// spans held batches holds much of inflight batches when it spans at least
// one of shares shares of them.
func holdsMuch(records, held int, shares, inflight int64) bool {
	return records > 0 && int64(held)*shares >= inflight
}
