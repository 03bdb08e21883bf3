package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/deadletter"
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
}

// sealedGroup is a group sealed and handed to the persister.
type sealedGroup struct {
	recs   []record.Record // keeping their references until the outcome; acknowledged and cleared by the persister
	held   []checkpoint.BatchID
	sg     connector.SealedGroup
	sealed time.Time
	err    error // Persist's
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

// persist is the persister: it makes sealed groups durable one at a time,
// in the order they were sealed, and sends each back with its outcome. It
// acknowledges a durable group itself, so that the sink goroutine spends no
// time on it; a failed one goes back whole.
func (s *sinkRunner) persist(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for g := range s.toPersist {
		g.err = g.sg.Persist(ctx)
		if g.err != nil {
			if err := g.sg.Discard(ctx); err != nil {
				s.log.Warn("discarding a group whose persist failed", "err", err)
			}
		} else {
			s.mFlushTime.Observe(time.Since(g.sealed).Seconds())
			s.ack(&s.pset, g.recs)
			clear(g.recs)
			g.recs = g.recs[:0]
		}
		g.sg = nil
		s.persisted <- g
	}
}

// lingering reports whether the linger check applies: MaxAge would flush no
// later otherwise.
func (s *sinkRunner) lingering() bool {
	return s.spec.Batch.Linger > 0 && s.spec.Batch.Linger < s.spec.Batch.MaxAge
}

// noteInput records the arrival of records and makes sure the linger timer
// runs while the group holds any.
func (s *sinkRunner) noteInput() {
	if !s.lingering() {
		return
	}
	s.lastIn = s.rt.now()
	if len(s.group) > 0 && !s.lingerOn {
		s.linger.Reset(s.spec.Batch.Linger)
		s.lingerOn = true
	}
}

// checkLinger flushes the group if no records arrived for Linger; otherwise
// it waits for the rest of the idle time.
func (s *sinkRunner) checkLinger(ctx context.Context) {
	if len(s.group) == 0 || !s.lingering() {
		return
	}
	idle := s.rt.now().Sub(s.lastIn)
	if idle >= s.spec.Batch.Linger {
		s.flush(ctx)
		return
	}
	s.linger.Reset(s.spec.Batch.Linger - idle)
	s.lingerOn = true
}

func (s *sinkRunner) handle(ctx context.Context, c chunk) {
	if c.flush {
		s.flush(ctx)
		return
	}
	recs := *c.recs
	s.mRecordsIn.Add(float64(len(recs)))
	if !s.spec.Acknowledgements {
		// The sink never holds the watermark back: handing a record over is
		// its delivery.
		for i := range recs {
			recs[i].Ack.Release(checkpoint.Delivered)
		}
	}
	if s.halted || ctx.Err() != nil {
		// After a halt nothing more is written; after the shutdown deadline
		// nothing more can be. Either way these records are not delivered.
		s.failed += int64(len(recs))
		s.fail(recs, checkpoint.Failed)
	} else {
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
	if err := s.spec.Sink.Flush(ctx); err != nil {
		s.retry(ctx, err)
		return
	}
	s.mFlushTime.Observe(time.Since(start).Seconds())
	s.ackGroup()
}

func (s *sinkRunner) ackGroup() {
	s.ack(&s.set, s.group)
	s.resetGroup()
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
	sg, err := s.sealer.Seal(ctx)
	if err != nil {
		s.recover(ctx, nil, err)
		return
	}
	var g *sealedGroup
	if n := len(s.spare); n > 0 {
		g, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		g = &sealedGroup{}
	}
	g.sg, g.sealed, g.err = sg, start, nil
	g.recs, s.group = s.group, g.recs[:0]
	s.heldMu.Lock()
	g.held, s.held = s.held, g.held[:0]
	s.sealed = append(s.sealed, g)
	s.heldMu.Unlock()
	s.resetGroup()
	s.out++
	s.toPersist <- g // never blocks: out <= Overlap, the channel's capacity
}

// back waits for the persister to return a group.
func (s *sinkRunner) back() *sealedGroup { return s.returned(<-s.persisted) }

// returned notes that g came back from the persister.
func (s *sinkRunner) returned(g *sealedGroup) *sealedGroup {
	s.out--
	s.heldMu.Lock()
	if i := slices.Index(s.sealed, g); i >= 0 {
		s.sealed = slices.Delete(s.sealed, i, i+1)
	}
	s.heldMu.Unlock()
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
	g.recs, g.held = g.recs[:0], g.held[:0]
	s.spare = append(s.spare, g)
}

// recover handles a failed Seal (failed is nil) or Persist (failed is the
// group). It waits for every group still at the persister, acknowledging
// those that became durable, puts the records of the failed ones in front of
// the current group's, and retries the lot synchronously: retry's Abort
// discards the current group in the sink, and its Flush writes everything
// again. Groups sealed later may so become visible before the failed one's
// records do; the runtime acknowledges by batch, never by order.
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
	if len(back) > 0 {
		var recs []record.Record
		s.heldMu.Lock()
		for _, g := range back {
			recs = append(recs, g.recs...)
			s.held = append(s.held, g.held...)
		}
		s.heldMu.Unlock()
		recs = append(recs, s.group...)
		clear(s.group)
		s.group = recs // groupBytes stays stale: retry resets the group whatever its outcome
		for _, g := range back {
			s.reuse(g)
		}
	}
	s.retry(ctx, err)
}

func (s *sinkRunner) resetGroup() {
	clear(s.group)
	s.group = s.group[:0]
	s.groupBytes = 0
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

// failGroup resolves every record of the group with st, without the policy.
func (s *sinkRunner) failGroup(st checkpoint.AckStatus) {
	s.failed += int64(len(s.group))
	s.fail(s.group, st)
	s.resetGroup()
}

func (s *sinkRunner) fail(recs []record.Record, st checkpoint.AckStatus) {
	for i := range recs {
		if !recs[i].Ack.IsZero() {
			s.set.Add(&recs[i].Ack)
		}
	}
	s.set.Fail(st)
}

// retry aborts the failed group and writes it again with exponential backoff
// and full jitter, within the sink's RetrySettings; when they run out it
// applies the failure policy to the whole group.
func (s *sinkRunner) retry(ctx context.Context, err error) {
	r := s.spec.Retry
	start := time.Now()
	backoff := r.InitialBackoff
	for attempt := 1; ; attempt++ {
		s.rt.m.writeErrors.WithLabelValues(s.spec.Name).Inc()
		if aerr := s.spec.Sink.Abort(ctx); aerr != nil {
			s.log.Warn("abort failed", "err", aerr)
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		if attempt >= r.MaxAttempts || time.Since(start)+wait > r.MaxElapsed || ctx.Err() != nil {
			break
		}
		s.log.Warn("write failed; retrying", "attempt", attempt, "backoff", wait, "records", len(s.group), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(backoff*2, r.MaxBackoff)
		if err = s.rewrite(ctx); err == nil {
			if err = s.spec.Sink.Flush(ctx); err == nil {
				s.ackGroup()
				return
			}
		}
		if len(s.group) == 0 {
			s.resetGroup() // every record was rejected and resolved alone
			return
		}
	}
	s.log.Error("write failed; giving up", "records", len(s.group), "policy", s.spec.OnFailure.String(), "err", err)
	recs := s.group
	s.group = nil // policy may keep the slice (dead letters copy it first)
	s.policy(ctx, recs, checkpoint.Failed, err)
	clear(recs)
	s.group = recs[:0]
	s.resetGroup()
}

// rewrite writes the group again after an Abort. A record rejected now is
// taken out of the group and resolved alone.
func (s *sinkRunner) rewrite(ctx context.Context) error {
	recs := s.group
	for off := 0; off < len(recs); {
		err := s.spec.Sink.Write(ctx, recs[off:])
		if err == nil {
			return nil
		}
		var rej *connector.RejectError
		if !errors.As(err, &rej) || rej.Index < 0 || off+rej.Index >= len(recs) {
			return err
		}
		k := off + rej.Index
		bad := recs[k]
		copy(recs[k:], recs[k+1:])
		recs[len(recs)-1] = record.Record{}
		recs = recs[:len(recs)-1]
		s.group = recs
		s.policy(ctx, []record.Record{bad}, checkpoint.Rejected, err)
		off = k
	}
	return nil
}

// policy applies the sink's OnFailure to records whose write failed for good.
func (s *sinkRunner) policy(ctx context.Context, recs []record.Record, st checkpoint.AckStatus, err error) {
	s.failed += int64(len(recs))
	if st == checkpoint.Rejected {
		s.rt.m.rejected.WithLabelValues(s.spec.Name).Add(float64(len(recs)))
		for i := range recs {
			if !recs[i].Ack.IsZero() {
				s.rt.noteReject(&rejection{component: "sink " + s.spec.Name, origin: recs[i].Origin, batch: recs[i].Ack.Batch(), err: err})
			}
		}
	}
	switch s.spec.OnFailure {
	case DeadLetter:
		s.deadLetter(ctx, recs, err)
	case Halt:
		he := &HaltError{Sink: s.spec.Name, Err: err}
		for i := range recs {
			if !recs[i].Ack.IsZero() {
				he.Batch = recs[i].Ack.Batch()
				he.Source, he.Partition = recs[i].Origin.Source, recs[i].Origin.Partition
				break
			}
		}
		if he.Source == "" && len(recs) > 0 {
			he.Source, he.Partition = recs[0].Origin.Source, recs[0].Origin.Partition
		}
		s.halted = true
		// Halt before releasing: the checkpointer must see the pipeline
		// stopping before it sees the failed batch, or it would rewind it.
		s.rt.fail(he)
		s.fail(recs, st)
	default: // Rewind: the checkpointer sees the partition blocked and replays it.
		if !s.spec.Acknowledgements {
			s.log.Error("records dropped: the sink does not hold the watermark (acknowledgements off)", "records", len(recs), "err", err)
		}
		s.fail(recs, st)
	}
}

// deadLetter sends recs, each wrapped with its error and origin, to the dead
// letter sink. Their references go along: they are delivered once that sink
// has flushed them.
func (s *sinkRunner) deadLetter(ctx context.Context, recs []record.Record, err error) {
	p := s.rt.chunks.get()
	for i := range recs {
		env := deadLetterRecord(componentSink, s.spec.Name, &recs[i], err)
		env.Ack = recs[i].Ack
		recs[i].Ack = checkpoint.AckRef{}
		*p = append(*p, env)
	}
	select {
	case s.dl.in <- chunk{recs: p}:
	case <-ctx.Done():
		s.fail(*p, checkpoint.Failed)
	}
}

// Kinds of component a dead letter names, as its envelope field and header.
const (
	componentSink      = "sink"
	componentTransform = "transform"
)

// deadLetterRecord wraps r with the error of the component (kind "sink" or
// "transform") that failed on it, in the envelope of package deadletter. The
// result has no reference: the caller moves or clones r's onto it.
func deadLetterRecord(kind, name string, r *record.Record, err error) record.Record {
	return deadletter.Record(kind, name, r, err, time.Now())
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
