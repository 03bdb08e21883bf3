package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Per-sink progress: which positions of a partition a sink already holds.
//
// The source commits the contiguous watermark over all sinks; a rewind caused
// by one sink replays the partition from that watermark to every sink. A
// sink's own progress is what keeps the replay away from the sinks that do
// not need it: the records of a partition below the sink's durable position
// are already durable in it, so the sink goroutine releases them as delivered
// instead of writing them again. For a connector.PositionKeeper, which stores
// its positions in the same transaction as its data, the durable position
// starts from what it stored, and skipping is what makes it exactly-once.
//
// A chunk carries the records of one poll batch bound for one sink, so a
// chunk's batch end is the unit of progress: the durable position only ever
// moves to the end of a chunk whose records, and those of every chunk of the
// partition before it, were made durable by this sink. The chunks of a
// partition reach the sink in poll order (one worker per partition), so their
// entries are queued in order; a group resolves its entries as delivered
// (Flush or Persist returned nil) or failed (the failure policy took them),
// and the durable position advances over the delivered entries at the head
// of the queue. A failed entry stops it there until the replay that must
// follow brings the records back.
//
// A record the sink rejected is not in it, and its dead letter may still fail
// and need a replay, which must bring the record back to this sink to be
// rejected and dead-lettered again. Its offset is therefore held: nothing at
// or past it is skipped, nor stored by a PositionKeeper, until the source has
// committed past it (the dead letter is then durable).
//
// A replay shows itself as a chunk that starts below the end of what the sink
// has accepted. The sink then settles everything it has out (flushes the
// current group, waits for sealed ones), so that every entry is resolved, and
// skips the records below the skip position, and those of chunks it made
// durable after a failed one (their ranges are kept until the durable
// position passes them): at least once, never less. docs/DESIGN.md has the argument; sinkprogress_test.go checks it
// against a naive model.

// entryState is the resolution of one accepted chunk.
type entryState uint8

const (
	entryPending entryState = iota
	entryDone
	entryFailed
)

// partProgress is one sink's progress in one source partition, for one
// assignment of it (gen). It belongs to the sink goroutine.
type partProgress struct {
	src  *sourceRunner
	part checkpoint.Partition
	gen  uint64 // the assignment it belongs to (sourceRunner.gens)
	// name is the partition's name in that assignment, from its records'
	// origin. The id alone does not name it for long: a lost or revoked
	// partition's id goes to the next new partition once the checkpointer
	// forgot it, while the sink may still hold a group of its records, and
	// the positions stored with that group must name the partition the
	// records came from.
	name string
	// loaded is false until a PositionKeeper's stored position was read;
	// always true for other sinks.
	loaded bool
	// loadFailed: reading the stored position failed and the chunk's
	// records, from failedFrom on, were failed. Every later chunk above
	// failedFrom is failed too, until the rewind brings the failed records
	// again: a chunk written meanwhile would give a position that passes
	// them, and the replay would then skip them as stored.
	loadFailed bool
	failedFrom checkpoint.Position
	// durable: every record of the partition routed to the sink with an
	// offset below it is durable in the sink.
	durable checkpoint.Position
	// accepted is the highest chunk end the sink accepted (into a group):
	// a chunk starting below it is a replay.
	accepted checkpoint.Position
	// base is the sequence number of pending[0]; pending and ends hold the
	// entries not yet passed by durable, in acceptance order.
	base    uint64
	pending []entryState
	firsts  []checkpoint.Position // the offset of each entry's first record
	ends    []checkpoint.Position
	// ranges are the delivered chunks a failed one left behind the durable
	// position: [first, end) of each, ascending, all above durable.
	ranges []posRange
	// holds are the offsets of rejected records whose dead letters may not
	// be durable yet, ascending.
	holds []checkpoint.Position
	// stored is the highest position a PositionKeeper is known to hold.
	stored checkpoint.Position
	// stamp and groupEnd are givePositions' scratch space.
	stamp    uint64
	groupEnd checkpoint.Position
}

func newPartProgress(gen uint64, durable checkpoint.Position, loaded bool) *partProgress {
	return &partProgress{gen: gen, loaded: loaded, durable: durable, accepted: durable}
}

// current reports whether pp's assignment is its id's current one: the
// partition was not given up since (or given up and its id given to another).
func (pp *partProgress) current() bool {
	_, gen := pp.src.partInfo(pp.part)
	return gen == pp.gen
}

// posRange is the positions [first, end) of a delivered chunk.
type posRange struct{ first, end checkpoint.Position }

// progressEntry is a group's reference to one accepted chunk.
type progressEntry struct {
	pp  *partProgress
	seq uint64
	end checkpoint.Position
}

// replay reports whether a chunk whose first record has offset first is (at
// least in part) a replay of what the sink accepted before.
func (pp *partProgress) replay(first checkpoint.Position) bool { return first < pp.accepted }

// accept queues a chunk whose first record is at first and that ends at end.
func (pp *partProgress) accept(first, end checkpoint.Position) progressEntry {
	e := progressEntry{pp: pp, seq: pp.base + uint64(len(pp.pending)), end: end}
	pp.pending = append(pp.pending, entryPending)
	pp.firsts = append(pp.firsts, first)
	pp.ends = append(pp.ends, end)
	pp.accepted = max(pp.accepted, end)
	return e
}

// resolve records the outcome of an accepted chunk and moves durable over
// the delivered entries at the head of the queue. An entry already passed
// (a restart dropped it) is ignored, and a failure stays a failure.
func (pp *partProgress) resolve(seq uint64, st entryState) {
	if seq < pp.base || seq-pp.base >= uint64(len(pp.pending)) {
		return
	}
	i := seq - pp.base
	if pp.pending[i] == entryFailed {
		return
	}
	pp.pending[i] = st
	n := 0
	for n < len(pp.pending) && pp.pending[n] == entryDone {
		pp.durable = max(pp.durable, pp.ends[n])
		n++
	}
	if n > 0 {
		pp.pending = pp.pending[:copy(pp.pending, pp.pending[n:])]
		pp.firsts = pp.firsts[:copy(pp.firsts, pp.firsts[n:])]
		pp.ends = pp.ends[:copy(pp.ends, pp.ends[n:])]
		pp.base += uint64(n)
		pp.dropRanges()
	}
}

// dropRanges forgets the ranges the durable position has passed.
func (pp *partProgress) dropRanges() {
	n := 0
	for n < len(pp.ranges) && pp.ranges[n].end <= pp.durable {
		n++
	}
	if n > 0 {
		pp.ranges = pp.ranges[:copy(pp.ranges, pp.ranges[n:])]
	}
}

// hold notes a rejected record's offset.
func (pp *partProgress) hold(off checkpoint.Position) {
	i, found := slices.BinarySearch(pp.holds, off)
	if !found {
		pp.holds = slices.Insert(pp.holds, i, off)
	}
}

// release drops the holds the source has committed past: their dead letters
// are durable.
func (pp *partProgress) release(committed checkpoint.Position) {
	n := 0
	for n < len(pp.holds) && pp.holds[n] < committed {
		n++
	}
	if n > 0 {
		pp.holds = pp.holds[:copy(pp.holds, pp.holds[n:])]
	}
}

// skipBelow is the offset below which a replayed record is already in the
// sink and is skipped.
func (pp *partProgress) skipBelow() checkpoint.Position {
	if len(pp.holds) > 0 && pp.holds[0] < pp.durable {
		return pp.holds[0]
	}
	return pp.durable
}

// skips reports whether a replayed record at offset o is in the sink.
func (pp *partProgress) skips(o checkpoint.Position) bool {
	if o < pp.skipBelow() {
		return true
	}
	i, _ := slices.BinarySearchFunc(pp.ranges, o, func(r posRange, o checkpoint.Position) int {
		switch {
		case r.end <= o:
			return -1
		case r.first > o:
			return 1
		}
		return 0
	})
	if i == len(pp.ranges) || o < pp.ranges[i].first || o >= pp.ranges[i].end {
		return false
	}
	_, held := slices.BinarySearch(pp.holds, o)
	return !held
}

// settled reports whether every accepted entry is resolved.
func (pp *partProgress) settled() bool {
	return !slices.Contains(pp.pending, entryPending)
}

// restart forgets the resolved entries after a replay began: the sink holds
// nothing of the partition out, and the records from the skip position on
// come again. It is called only when settled.
func (pp *partProgress) restart() {
	for i, st := range pp.pending {
		if st == entryDone {
			r := posRange{pp.firsts[i], pp.ends[i]}
			j, _ := slices.BinarySearchFunc(pp.ranges, r.first, func(x posRange, f checkpoint.Position) int { return cmp.Compare(x.first, f) })
			pp.ranges = slices.Insert(pp.ranges, j, r)
		}
	}
	pp.base += uint64(len(pp.pending))
	pp.pending = pp.pending[:0]
	pp.firsts = pp.firsts[:0]
	pp.ends = pp.ends[:0]
	pp.dropRanges()
	pp.accepted = pp.skipBelow()
}

// keepPosition returns the position a PositionKeeper may store for a group
// whose chunks of this partition end at most at end: end, unless an entry
// accepted before failed for good (its records are not in the sink and will
// come again) or a rejected record is held, in which case the position stops
// before them. Every entry still pending before the group's own belongs to
// an earlier group, which the runtime persists first, or to this one.
func (pp *partProgress) keepPosition(end checkpoint.Position) checkpoint.Position {
	if i := slices.Index(pp.pending, entryFailed); i >= 0 {
		capAt := pp.durable
		if i > 0 {
			capAt = pp.ends[i-1]
		}
		end = min(end, capAt)
	}
	if len(pp.holds) > 0 {
		end = min(end, pp.holds[0])
	}
	return end
}

// The sink goroutine's side: finding a chunk's progress, skipping what a
// replay brings again, resolving entries with their groups, and the positions
// a PositionKeeper stores.

// progressOf returns the progress of the chunk's partition, starting a new
// one for a new assignment, and the chunk's records without those the sink
// already holds, which it releases as delivered. A PositionKeeper whose stored
// position cannot be read gets nothing written: the records fail (and are
// replayed), since writing them might duplicate what it holds.
func (s *sinkRunner) progressOf(ctx context.Context, c *chunk, recs []record.Record) (*partProgress, []record.Record) {
	src := c.src
	for len(s.prog) <= src.idx {
		s.prog = append(s.prog, nil)
	}
	for len(s.prog[src.idx]) <= int(c.part) {
		s.prog[src.idx] = append(s.prog[src.idx], nil)
	}
	pp := s.prog[src.idx][c.part]
	if pp == nil || pp.gen != c.gen {
		if s.keeper != nil && pp != nil {
			// Groups of the old assignment still out must be stored before
			// the stored position is read.
			s.settleAll(ctx)
		}
		pp = newPartProgress(c.gen, 0, s.keeper == nil)
		pp.src, pp.part, pp.name = src, c.part, recs[0].Origin.Partition
		s.prog[src.idx][c.part] = pp
	}
	first := checkpoint.Position(recs[0].Origin.Offset)
	if pp.loadFailed {
		if first > pp.failedFrom {
			s.failed += int64(len(recs))
			s.fail(recs, checkpoint.Failed)
			return pp, nil
		}
		pp.loadFailed = false // the replay of the failed records
	}
	if !pp.loaded && !s.loadStored(ctx, pp) {
		pp.loadFailed, pp.failedFrom = true, first
		s.failed += int64(len(recs))
		s.fail(recs, checkpoint.Failed)
		return pp, nil
	}
	if !pp.replay(checkpoint.Position(recs[0].Origin.Offset)) {
		if len(pp.ranges) > 0 {
			return pp, s.skip(pp, recs) // a replay going on past a failed chunk
		}
		return pp, recs
	}
	if len(pp.pending) > 0 {
		// Entries of what the replay brings again are still out: settle them
		// so that the durable position is exact.
		s.settleAll(ctx)
		if !pp.settled() {
			return pp, recs // cannot tell: write again (at least once)
		}
	}
	pp.restart()
	return pp, s.skip(pp, recs)
}

// skip releases the records of recs that the sink holds as delivered, and
// returns the others.
func (s *sinkRunner) skip(pp *partProgress, recs []record.Record) []record.Record {
	kept := recs[:0]
	var skipped int64
	for i := range recs {
		if pp.skips(checkpoint.Position(recs[i].Origin.Offset)) {
			refOf(&recs[i]).Release(checkpoint.Delivered)
			skipped++
			continue
		}
		kept = append(kept, recs[i])
	}
	clear(recs[len(kept):])
	if skipped > 0 {
		s.skipped.Add(skipped)
		s.mSkipped.Add(float64(skipped))
		if s.mHeld != nil {
			s.mHeld.Add(float64(skipped))
		}
	}
	return kept
}

// settleAll flushes the current group and waits for every sealed group, so
// that every accepted entry is resolved.
func (s *sinkRunner) settleAll(ctx context.Context) {
	s.flush(ctx)
	for s.out > 0 {
		s.settle(ctx, s.back())
	}
}

// loadStored reads a PositionKeeper's stored position of pp's partition,
// retrying within the sink's RetrySettings. It reports whether it succeeded.
// A failed read is a failure of the sink like a failed flush (noteFailure):
// while the store is unreachable no flush may be tried, and the sink must
// still show as failing within stall_warning.
func (s *sinkRunner) loadStored(ctx context.Context, pp *partProgress) bool {
	name := pp.name
	r := s.spec.Retry
	backoff := r.InitialBackoff
	start := time.Now()
	for attempt := 1; ; attempt++ {
		stored, err := s.keeper.StoredPositions(ctx, pp.src.spec.Name, []string{name})
		if err == nil {
			if pos, ok := stored[name]; ok {
				pp.durable, pp.accepted, pp.stored = pos, pos, pos
			}
			pp.loaded = true
			return true
		}
		s.rt.m.writeErrors.WithLabelValues(s.spec.Name).Inc()
		logged := s.noteFailure(fmt.Errorf("reading the stored position of partition %s: %w", name, err), "reading stored positions")
		wait := backoff/2 + rand.N(backoff/2+1)
		if attempt >= r.MaxAttempts || time.Since(start)+wait > r.MaxElapsed || ctx.Err() != nil {
			if logged {
				s.log.Error("reading stored positions failed; the partition's records are failed and replayed", "partition", name, "err", err)
			}
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(backoff*2, r.MaxBackoff)
	}
}

// resolveEntries gives every entry of a group its outcome.
func resolveEntries(entries []progressEntry, st entryState) {
	for _, e := range entries {
		e.pp.resolve(e.seq, st)
	}
}

// holdRejected notes a record the sink rejected (see partProgress.holds).
func (s *sinkRunner) holdRejected(rec *record.Record) {
	if s.spec.NoAcknowledgements || refOf(rec).IsZero() {
		return
	}
	src := s.rt.sourceNamed(rec.Origin.Source)
	if src == nil || src.idx >= len(s.prog) {
		return
	}
	p := refOf(rec).Batch().Partition
	if int(p) >= len(s.prog[src.idx]) || s.prog[src.idx][p] == nil {
		return
	}
	if pp := s.prog[src.idx][p]; pp.name == rec.Origin.Partition {
		// (Not a later assignment of the id to another partition's.)
		pp.hold(checkpoint.Position(rec.Origin.Offset))
	}
}

// keptPosition is a position given to a PositionKeeper with a group, noted
// as stored once the group is durable.
type keptPosition struct {
	pp  *partProgress
	pos checkpoint.Position
}

// givePositions tells a PositionKeeper the positions of the group whose
// entries are given, and returns them in kept (reusing its slice) for when
// the group is durable.
func (s *sinkRunner) givePositions(entries []progressEntry, kept []keptPosition) []keptPosition {
	kept = kept[:0]
	if s.keeper == nil {
		return kept
	}
	s.stamp++
	for _, e := range entries {
		pp := e.pp
		if pp.stamp != s.stamp {
			pp.stamp, pp.groupEnd = s.stamp, e.end
			kept = append(kept, keptPosition{pp: pp})
		} else {
			pp.groupEnd = max(pp.groupEnd, e.end)
		}
	}
	s.gpos = s.gpos[:0]
	for i := range kept {
		pp := kept[i].pp
		if len(pp.holds) > 0 && pp.current() {
			// The committed positions are the id's: its current
			// assignment's. A partition given up keeps its holds.
			pp.release(pp.src.committedOf(pp.part))
		}
		pos := max(pp.stored, pp.keepPosition(pp.groupEnd))
		kept[i].pos = pos
		s.gpos = append(s.gpos, connector.GroupPosition{Source: pp.src.spec.Name, Partition: pp.name, Position: pos})
	}
	s.keeper.GroupPositions(s.gpos)
	return kept
}

// noteStored records that a group's positions are stored.
func noteStored(kept []keptPosition) {
	for _, k := range kept {
		k.pp.stored = max(k.pp.stored, k.pos)
	}
}

// givePartPositions is givePositions for a part of the group, written when the
// whole was too large: a partition with records still to write stops at the
// first of them.
func (s *sinkRunner) givePartPositions(rest []record.Record, kept []keptPosition) []keptPosition {
	kept = s.givePositions(s.entries, kept)
	if s.keeper == nil || len(rest) == 0 {
		return kept
	}
	s.gpos = s.gpos[:0]
	for i := range kept {
		pp := kept[i].pp
		name := pp.name
		for j := range rest {
			r := &rest[j]
			if r.Origin.Source == pp.src.spec.Name && r.Origin.Partition == name {
				kept[i].pos = min(kept[i].pos, max(pp.stored, checkpoint.Position(r.Origin.Offset)))
			}
		}
		s.gpos = append(s.gpos, connector.GroupPosition{Source: pp.src.spec.Name, Partition: name, Position: kept[i].pos})
	}
	s.keeper.GroupPositions(s.gpos)
	return kept
}
