package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// errEarlierGroupFailed is the outcome of a sealed group that a
// PositionKeeper's persister did not persist because a group sealed before
// it failed.
var errEarlierGroupFailed = errors.New("pipeline: not persisted: a group sealed before it failed")

// sealedGroup is a group sealed and handed to the persister.
type sealedGroup struct {
	recs    []record.Record // keeping their references until the outcome; acknowledged and cleared by the persister
	held    *heldBuf
	entries []progressEntry
	kept    []keptPosition
	round   uint64
	sg      connector.SealedGroup
	sealed  time.Time
	err     error // Persist's
	// For the adapted group size: the group's records and value bytes, how
	// long it took to fill, and how long Persist took.
	n          int
	bytes      int64
	fill, took time.Duration
}

// persist is the persister: it makes sealed groups durable one at a time,
// in the order they were sealed, and sends each back with its outcome. It
// acknowledges a durable group itself, so that the sink goroutine spends no
// time on it; a failed one goes back whole.
func (s *sinkRunner) persist(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	stopped, stopRound := false, uint64(0)
	for g := range s.toPersist {
		if stopped && g.round == stopRound {
			g.err = errEarlierGroupFailed
		} else {
			g.err = s.persistGroup(ctx, g.sg)
			if g.err != nil && s.keeper != nil {
				stopped, stopRound = true, g.round
			}
		}
		if g.err != nil {
			if err := s.discardGroup(ctx, g.sg); err != nil {
				s.log.Warn("discarding a group whose persist failed", "err", err)
			}
		} else {
			g.took = time.Since(g.sealed)
			s.mFlushTime.Observe(g.took.Seconds())
			s.ack(&s.pers.pset, g.recs)
			clear(g.recs)
			g.recs = g.recs[:0]
		}
		g.sg = nil
		s.persisted <- g
	}
}

// seal hands the current group to the persister, first waiting for one to
// come back if Batch.Overlap are out.
func (s *sinkRunner) seal(ctx context.Context) {
	if s.out == s.spec.Batch.Overlap {
		s.settle(ctx, s.back())
		if len(s.group) == 0 { // a failure came back and took the group along
			return
		}
	}
	start := time.Now()
	var g *sealedGroup
	if n := len(s.spare); n > 0 {
		g, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		g = &sealedGroup{}
	}
	g.kept = s.givePositions(s.entries, g.kept)
	sg, err := s.sinkSeal(ctx)
	if err != nil {
		s.reuse(g)
		s.recover(ctx, nil, err)
		return
	}
	g.sg, g.sealed, g.err, g.round = sg, start, nil, s.round
	g.n, g.bytes, g.fill = len(s.group), s.groupBytes, s.size.sealed(start)
	g.recs, s.group = s.group, g.recs[:0]
	g.entries, s.entries = s.entries, g.entries[:0]
	g.held = s.held.drop()
	s.held.sealedGroup(g.held)
	s.resetGroup()
	s.out++
	s.toPersist <- g // never blocks: out <= Overlap, the channel's capacity
}

// back waits for the persister to return a group.
func (s *sinkRunner) back() *sealedGroup { return s.returned(<-s.persisted) }

// returned notes that g came back from the persister.
func (s *sinkRunner) returned(g *sealedGroup) *sealedGroup {
	s.out--
	if g.err == nil {
		s.size.observe(g.n, g.bytes, g.fill, g.took, s.spec.Batch.MaxBytes)
		s.noteSuccess()
		resolveEntries(g.entries, entryDone)
		noteStored(g.kept)
	}
	s.held.returned(g.held)
	return g
}

// settle takes a group back from the persister: reused if it was durable
// (and so acknowledged), retried (see recover) if not.
func (s *sinkRunner) settle(ctx context.Context, g *sealedGroup) {
	if g.err != nil {
		s.recover(ctx, g, g.err)
		return
	}
	s.reuse(g)
}
func (s *sinkRunner) reuse(g *sealedGroup) {
	clear(g.recs)
	clear(g.entries)
	clear(g.kept)
	g.recs, g.held, g.entries, g.kept = g.recs[:0], nil, g.entries[:0], g.kept[:0]
	s.spare = append(s.spare, g)
}

// recover handles a failed Seal (failed is nil) or Persist (failed is the
// group). It waits for every group still at the persister, acknowledging
// those that became durable, and retries each failed one on its own, in
// sealing order, synchronously, so that none grows past MaxRecords: the
// first retry's Abort discards the current group in the sink too, and its
// records are written again after them, as the current group still (after
// a failed Seal, flushed at once). Groups sealed later may so become visible
// before the failed one's records do; the runtime acknowledges by batch,
// never by order.
func (s *sinkRunner) recover(ctx context.Context, failed *sealedGroup, err error) {
	var back []*sealedGroup
	if failed != nil {
		back = append(back, failed)
	}
	for s.out > 0 {
		g := s.back()
		if g.err == nil {
			s.reuse(g)
			continue
		}
		back = append(back, g)
	}
	s.round++
	if len(back) == 0 {
		s.retry(ctx, err)
		return
	}
	cur, entries := s.group, s.entries
	s.group, s.entries = nil, nil
	for _, g := range back {
		s.group, s.entries = g.recs, g.entries
		s.held.drop()
		for _, id := range g.held.list() {
			s.held.note(id)
		}
		s.lastRef = checkpoint.AckRef{}
		if s.halted || ctx.Err() != nil {
			s.failGroup(checkpoint.Failed)
		} else {
			s.retry(ctx, g.err)
		}
		g.recs, g.entries = s.group[:0], s.entries[:0]
		s.reuse(g)
	}
	// The current group again, in a slice of its own, written to the sink
	// anew (the first Abort discarded it there).
	s.group, s.entries = nil, entries
	s.groupBytes = 0
	s.held.drop()
	s.lastRef = checkpoint.AckRef{}
	if len(cur) == 0 {
		return
	}
	if s.halted || ctx.Err() != nil {
		s.group = cur
		s.failGroup(checkpoint.Failed)
		return
	}
	s.write(ctx, cur)
	clear(cur)
	if failed == nil {
		s.flush(ctx)
	}
}
