package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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

	// For the Report, read after the sink goroutine returned. The persister
	// counts written too.
	written atomic.Int64
	failed  int64

	// held lists the batches the current group holds references of, for the
	// stall explainer; the sink goroutine writes it, /debug/stalls reads it.
	// sealed lists the groups at the persister, whose held lists count too.
	heldMu  sync.Mutex
	held    []checkpoint.BatchID
	sealed  []*sealedGroup
	lastRef checkpoint.AckRef // last reference noted in held (compared, never released)

	// With a Sealer (nil otherwise): groups go to the persister on toPersist
	// and come back on persisted; both hold Batch.Overlap groups, as many as
	// may be out at once, so neither send ever blocks.
	sealer    connector.Sealer
	toPersist chan *sealedGroup
	persisted chan *sealedGroup
	out       int               // groups sent and not yet back
	spare     []*sealedGroup    // groups back, for reuse with their slices
	pset      checkpoint.AckSet // the persister's
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
	skipped  atomic.Int64
	mSkipped prometheus.Counter

	health    sinkHealth
	mFailures prometheus.Gauge

	caughtUpAt time.Time  // the last flush because a source caught up
	caughtSeen [][]uint64 // by source, then worker: the last caught-up request seen (caughtup.go)
	giveUps    int        // groups given up on, for logging with backoff
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
		if c.caughtUp {
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
			recs[i].Ack.Release(checkpoint.Delivered)
		}
	}
	if c.src != nil && !s.spec.NoAcknowledgements && len(recs) > 0 && !s.halted && ctx.Err() == nil {
		var pp *partProgress
		pp, recs = s.progressOf(ctx, &c, recs)
		if len(recs) > 0 {
			s.entries = append(s.entries, pp.accept(checkpoint.Position(recs[0].Origin.Offset), c.end))
		}
	}
	if s.halted || ctx.Err() != nil {
		// After a halt nothing more is written; after the shutdown deadline
		// nothing more can be. Either way these records are not delivered.
		s.failed += int64(len(recs))
		s.fail(recs, checkpoint.Failed)
		s.failEntries()
	} else if len(recs) > 0 {
		s.tapIn(recs)
		s.write(ctx, recs)
	}
	s.rt.chunks.put(c.recs)
	if len(s.group) >= s.spec.Batch.MaxRecords || s.groupBytes >= s.spec.Batch.MaxBytes {
		s.flush(ctx)
	}
	s.noteInput()
}

// write hands recs to the sink, resolving a record it rejects alone.
func (s *sinkRunner) write(ctx context.Context, recs []record.Record) {
	for len(recs) > 0 {
		err := s.spec.Sink.Write(ctx, recs)
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
	noted := false
	for i := range recs {
		s.groupBytes += int64(recs[i].Size())
		if r := recs[i].Ack; !r.IsZero() && r != s.lastRef {
			if !noted {
				s.heldMu.Lock()
				noted = true
			}
			s.held = append(s.held, r.Batch())
			s.lastRef = r
		}
	}
	if noted {
		s.heldMu.Unlock()
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
	s.kept = s.givePositions(s.entries, s.kept)
	if err := s.spec.Sink.Flush(ctx); err != nil {
		s.retry(ctx, err)
		return
	}
	s.mFlushTime.Observe(time.Since(start).Seconds())
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
		if !recs[i].Ack.IsZero() {
			set.Add(&recs[i].Ack)
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
	s.heldMu.Lock()
	s.held = s.held[:0]
	s.heldMu.Unlock()
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
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	dst = append(dst, s.held...)
	for _, g := range s.sealed {
		dst = append(dst, g.held...)
	}
	return dst
}

func newSinkRunner(rt *runtime, idx int, sk SinkSpec) *sinkRunner {
	return &sinkRunner{rt: rt, idx: idx, spec: sk, in: make(chan chunk, 4), log: rt.log.With("sink", sk.Name),
		mRecordsIn: rt.m.recordsIn.WithLabelValues(sk.Name), mRecordsOut: rt.m.recordsOut.WithLabelValues(sk.Name),
		mFlushTime: rt.m.flushTime.WithLabelValues(sk.Name), mSkipped: rt.m.sinkSkipped.WithLabelValues(sk.Name),
		mFailures: rt.m.sinkFailures.WithLabelValues(sk.Name)}
}
