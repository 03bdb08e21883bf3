package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// sinkRunner is the one goroutine that calls a sink. It groups records, calls
// Write per chunk and Flush per group, and gives the group's references their
// outcome only when the outcome is known: Delivered after Flush returned nil,
// or the failure policy's after retries gave up.
//
// A sink that implements connector.Sealer is flushed in two steps instead:
// Seal on this goroutine, which starts the next group at once, and Persist on
// a second one, the persister, which waits for the sealed group to become
// durable while this goroutine goes on writing. Up to Batch.Overlap sealed
// groups wait there, each with its records; a group's references get their
// outcome when its Persist returned. A failed Persist brings everything back
// to this goroutine: it waits for the other sealed groups and retries the
// failed ones, with the current group, synchronously (see recover).
//
// References stay on the group's records until then, rather than moving into
// an AckSet at once, so that a record the sink rejects on a retry can still be
// resolved alone. The AckSet is filled at the outcome: one pass over the group
// with no atomic operation per record, and one atomic add per batch run.
type sinkRunner struct {
	rt   *runtime
	idx  int
	spec SinkSpec
	in   chan chunk
	dl   *sinkRunner // dead letter sink, or nil
	log  *slog.Logger

	// The sink's metric children, looked up once: they are counted per chunk
	// and per group.
	mRecordsIn, mRecordsOut prometheus.Counter
	mFlushTime              prometheus.Observer

	group      []record.Record
	groupBytes int64
	size       groupSizer // the record count at which a group closes (linger.go)
	set        checkpoint.AckSet
	timer      *time.Timer
	timerOn    bool
	halted     bool

	// The linger check (BatchSettings.Linger): lastIn is when the last chunk
	// arrived. One timer per group, not one reset per chunk: when it fires
	// early it is set again for the rest of the idle time.
	lastIn   time.Time
	linger   *time.Timer
	lingerOn bool

	// For the Report, read after the sink goroutine returned (written also
	// by the status while it runs). The sink goroutine and the persister
	// add to written.
	written atomic.Int64
	failed  int64

	// held lists the batches the current group, and the groups at the
	// persister, hold references of (held.go).
	held    heldLists
	lastRef checkpoint.AckRef // last reference noted in held (compared, never released)

	// With a Sealer (nil otherwise): groups go to the persister on toPersist
	// and come back on persisted; both hold Batch.Overlap groups, as many as
	// may be out at once, so neither send ever blocks.
	sealer    connector.Sealer
	toPersist chan *sealedGroup
	persisted chan *sealedGroup
	out       int            // groups sent and not yet back
	spare     []*sealedGroup // groups back, for reuse with their slices
	// pers is the persister's alone: the sink goroutine never touches it.
	// written (an atomic), toPersist and persisted are what cross.
	pers persisterState
	// round counts the recoveries from a failed Seal or Persist. For a
	// PositionKeeper the persister persists nothing more of the round in
	// which a Persist failed: groups become durable strictly in sealing
	// order, so a stored position never passes a group that is not durable.
	round uint64

	// Per-sink progress (sinkprogress.go): by source index, then partition.
	// entries are the current group's accepted chunks, kept the positions
	// given with it to a PositionKeeper (nil otherwise).
	prog     [][]*partProgress
	entries  []progressEntry
	kept     []keptPosition
	keeper   connector.PositionKeeper
	gpos     []connector.GroupPosition
	stamp    uint64
	skipped  atomic.Int64 // records a replay skipped: added by the sink goroutine, read by the status and the Report
	mSkipped prometheus.Counter
	mHeld    prometheus.Counter // weir_sink_already_held_total, for an exactly-once sink; nil otherwise

	health    sinkHealth
	mFailures prometheus.Gauge
	// call is the connector call the sink goroutine is in, pcall the
	// persister's (sinkcall.go).
	call, pcall callWatch

	caughtUpAt time.Time  // the last flush because a source caught up
	caughtSeen [][]uint64 // by source, then worker: the last caught-up request seen (caughtup.go)
	giveUps    int        // groups given up on, for logging with backoff
}

// persisterState is the persister's alone (seal.go): the sink goroutine
// never touches it.
type persisterState struct {
	pset checkpoint.AckSet // acknowledges the groups the persister made durable
}

func (s *sinkRunner) run(ctx context.Context) {
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
	s.linger = time.NewTimer(time.Hour)
	s.linger.Stop()
	lingerC := s.linger.C
	if t := s.rt.o.hooks.lingerTicks; t != nil {
		lingerC = t
	}
	defer s.linger.Stop()
	s.size = newGroupSizer(s.spec.Batch, time.Now())
	if k, ok := s.spec.Sink.(connector.PositionKeeper); ok && !s.spec.NoAcknowledgements {
		s.keeper = k
	}
	if sl, ok := s.spec.Sink.(connector.Sealer); ok {
		s.sealer = sl
		s.toPersist = make(chan *sealedGroup, s.spec.Batch.Overlap)
		s.persisted = make(chan *sealedGroup, s.spec.Batch.Overlap)
		done := make(chan struct{})
		go s.persist(ctx, done)
		defer func() {
			close(s.toPersist)
			<-done
		}()
	}
	for {
		select {
		case c, ok := <-s.in:
			if !ok {
				s.flush(ctx)
				for s.out > 0 {
					s.settle(ctx, s.back())
				}
				s.timer.Stop()
				return
			}
			s.handle(ctx, c)
		case <-s.timer.C:
			s.timerOn = false
			s.flush(ctx)
		case <-lingerC:
			s.lingerOn = false
			s.checkLinger(ctx)
		case g := <-s.persisted:
			s.settle(ctx, s.returned(g))
		}
	}
}
func (s *sinkRunner) handle(ctx context.Context, c chunk) {
	if c.flush {
		if c.pressure > 0 {
			// A source paused at its in-flight limits (caughtup.go).
			if !s.caughtUpEverywhere(c) || !s.holdsMuchOf(c.pressure) {
				return
			}
		} else if c.caughtUp {
			// The source has nothing more for now: flush rather than wait
			// for MaxAge, once the request came through every worker
			// (caughtup.go), unless that was done less than MaxAge ago (a
			// trickle would otherwise be written a record at a time).
			if !s.caughtUpEverywhere(c) {
				return
			}
			now := s.rt.now()
			if len(s.group) == 0 || now.Sub(s.caughtUpAt) < s.spec.Batch.MaxAge {
				return
			}
			s.caughtUpAt = now
		}
		s.flush(ctx)
		return
	}
	recs := *c.recs
	s.mRecordsIn.Add(float64(len(recs)))
	if s.spec.NoAcknowledgements {
		// The sink never holds the watermark back: handing a record over is
		// its delivery.
		for i := range recs {
			refOf(&recs[i]).Release(checkpoint.Delivered)
		}
	}
	var pp *partProgress
	if c.src != nil && !s.spec.NoAcknowledgements && len(recs) > 0 && !s.halted && ctx.Err() == nil {
		pp, recs = s.progressOf(ctx, &c, recs)
	}
	if len(recs) > 0 && !s.halted && ctx.Err() == nil {
		s.tapIn(recs)
	}
	for len(recs) > 0 {
		if s.halted || ctx.Err() != nil {
			// After a halt nothing more is written; after the shutdown deadline
			// nothing more can be. Either way these records are not delivered.
			if pp != nil {
				s.entries = append(s.entries, pp.accept(checkpoint.Position(recs[0].Origin.Offset), c.end))
			}
			s.failed += int64(len(recs))
			s.fail(recs, checkpoint.Failed)
			s.failEntries()
			break
		}
		// A chunk larger than what is left of the group is split: the group
		// never holds more than MaxRecords (see room).
		n := s.room(recs)
		if n == 0 {
			s.flush(ctx)
			continue
		}
		if pp != nil {
			end := c.end
			if n < len(recs) {
				end = min(end, checkpoint.Position(recs[n].Origin.Offset))
			}
			s.entries = append(s.entries, pp.accept(checkpoint.Position(recs[0].Origin.Offset), end))
		}
		s.write(ctx, recs[:n])
		recs = recs[n:]
		if len(s.group) >= s.groupMax() || s.groupBytes >= s.spec.Batch.MaxBytes {
			s.flush(ctx)
		}
	}
	s.rt.chunks.put(c.recs)
	s.noteInput()
}

// room returns how many of recs, a chunk's records, the current group takes:
// as many as fit below MaxRecords, but never a part of the records that
// share one offset (a transform's outputs of one input), since a part's
// progress entry ends at the offset of the first record left out. It is
// zero when not even those fit but the group is not empty: the group is
// flushed first. An empty group takes at least the first run of equal
// offsets, however long.
func (s *sinkRunner) room(recs []record.Record) int {
	free := s.groupMax() - len(s.group)
	if free >= len(recs) {
		return len(recs)
	}
	n := max(free, 0)
	for n > 0 && recs[n].Origin.Offset == recs[n-1].Origin.Offset {
		n--
	}
	if n == 0 && len(s.group) == 0 {
		for n = 1; n < len(recs) && recs[n].Origin.Offset == recs[0].Origin.Offset; n++ {
		}
	}
	return n
}

// write hands recs to the sink, resolving a record it rejects alone.
func (s *sinkRunner) write(ctx context.Context, recs []record.Record) {
	for len(recs) > 0 {
		err := s.sinkWrite(ctx, recs)
		if err == nil {
			s.add(recs)
			return
		}
		var rej *connector.RejectError
		if errors.As(err, &rej) && rej.Index >= 0 && rej.Index < len(recs) {
			s.add(recs[:rej.Index])
			s.policy(ctx, recs[rej.Index:rej.Index+1], checkpoint.Rejected, err)
			recs = recs[rej.Index+1:]
			continue
		}
		s.add(recs)
		s.retry(ctx, err)
		return
	}
}

// add appends accepted records to the group.
func (s *sinkRunner) add(recs []record.Record) {
	if len(recs) == 0 {
		return
	}
	if len(s.group) == 0 && !s.timerOn {
		s.timer.Reset(s.spec.Batch.MaxAge)
		s.timerOn = true
	}
	for i := range recs {
		s.groupBytes += int64(recs[i].Size())
		if r := *refOf(&recs[i]); !r.IsZero() && r != s.lastRef {
			s.held.note(r.Batch())
			s.lastRef = r
		}
	}
	s.group = append(s.group, recs...)
}

// flush makes the group durable and acknowledges it, or retries. For a
// Sealer it seals the group and hands it to the persister instead.
func (s *sinkRunner) flush(ctx context.Context) {
	if len(s.group) == 0 {
		return
	}
	if s.halted || ctx.Err() != nil {
		s.failGroup(checkpoint.Failed)
		return
	}
	if s.sealer != nil {
		s.seal(ctx)
		return
	}
	start := time.Now()
	fill, n, bytes := s.size.sealed(start), len(s.group), s.groupBytes
	s.kept = s.givePositions(s.entries, s.kept)
	if err := s.sinkFlush(ctx); err != nil {
		s.retry(ctx, err)
		return
	}
	took := time.Since(start)
	s.mFlushTime.Observe(took.Seconds())
	s.size.observe(n, bytes, fill, took, s.spec.Batch.MaxBytes)
	s.ackGroup()
}
func (s *sinkRunner) ackGroup() {
	s.noteSuccess()
	s.giveUps = 0
	resolveEntries(s.entries, entryDone)
	noteStored(s.kept)
	s.ack(&s.set, s.group)
	s.resetGroup()
}

// failEntries resolves the current group's entries as failed: its records
// are not in the sink and come again with the replay.
func (s *sinkRunner) failEntries() {
	resolveEntries(s.entries, entryFailed)
	clear(s.entries)
	s.entries = s.entries[:0]
}

// ack acknowledges recs, which the sink has made durable, through set.
func (s *sinkRunner) ack(set *checkpoint.AckSet, recs []record.Record) {
	for i := range recs {
		if !refOf(&recs[i]).IsZero() {
			set.Add(refOf(&recs[i]))
		}
	}
	set.Ack()
	n := len(recs)
	s.mRecordsOut.Add(float64(n))
	s.rt.totalOut.Add(int64(n))
	s.written.Add(int64(n))
}
func (s *sinkRunner) resetGroup() {
	clear(s.group)
	s.group = s.group[:0]
	s.groupBytes = 0
	clear(s.entries)
	s.entries = s.entries[:0]
	s.held.drop()
	s.lastRef = checkpoint.AckRef{}
	if s.timerOn {
		s.timer.Stop()
		s.timerOn = false
	}
	if s.lingerOn {
		s.linger.Stop()
		s.lingerOn = false
	}
}

// heldBatches appends the batches the sink's current group, and its groups at
// the persister, hold to dst.
func (s *sinkRunner) heldBatches(dst []checkpoint.BatchID) []checkpoint.BatchID {
	return s.held.batches(dst)
}

func newSinkRunner(rt *runtime, idx int, sk SinkSpec) *sinkRunner {
	return &sinkRunner{rt: rt, idx: idx, spec: sk, in: make(chan chunk, 4), log: rt.log.With("sink", sk.Name),
		mRecordsIn: rt.m.recordsIn.WithLabelValues(sk.Name), mRecordsOut: rt.m.recordsOut.WithLabelValues(sk.Name),
		mFlushTime: rt.m.flushTime.WithLabelValues(sk.Name), mSkipped: rt.m.sinkSkipped.WithLabelValues(sk.Name),
		mFailures: rt.m.sinkFailures.WithLabelValues(sk.Name), mHeld: heldCounter(rt.m, sk)}
}

// exactlyOnce reports whether the runtime uses sk's sink as an exactly-once
// sink: a connector.PositionKeeper whose acknowledgements are on.
func exactlyOnce(sk SinkSpec) bool {
	_, ok := sk.Sink.(connector.PositionKeeper)
	return ok && !sk.NoAcknowledgements
}

func heldCounter(m *metrics, sk SinkSpec) prometheus.Counter {
	if !exactlyOnce(sk) {
		return nil
	}
	return m.alreadyHeld.WithLabelValues(sk.Name)
}
