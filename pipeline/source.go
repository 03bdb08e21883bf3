package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// sourceRunner runs one source: a polling goroutine (poll), which owns the
// AckIssuer and is the source's connector.Host, and a checkpointer goroutine
// (checkpoint), which owns the Checkpointer and calls Commit.
type sourceRunner struct {
	rt   *runtime
	idx  int
	spec SourceSpec
	src  connector.Source
	log  *slog.Logger
	cp   *checkpoint.Checkpointer
	iss  *checkpoint.AckIssuer // polling goroutine only

	namesMu sync.Mutex
	names   []string // partition names by id
	byName  map[string]checkpoint.Partition
	// gens counts the assignments of each partition (Host.Assign, not a
	// rewind): a sink's progress in a partition belongs to one assignment,
	// since another process may have written the partition in between.
	gens []uint64
	// starts is where each partition's next batch begins: the Assign's
	// start, a rewind's watermark, or the last batch's end (poller only,
	// besides Assign).
	starts []checkpoint.Position

	// committedPos is every partition's last committed position, published
	// by the checkpointer goroutine for the sinks (see partProgress.holds).
	committedMu  sync.RWMutex
	committedPos []checkpoint.Position

	// In-flight accounting. The poller adds when it issues a batch; the
	// checkpointer goroutine subtracts when Drain reports the batch resolved,
	// and then signals credit. Nothing on the ack path touches these.
	inflightBatches atomic.Int64
	inflightBytes   atomic.Int64
	credit          chan struct{} // capacity 1
	tableMu         sync.Mutex
	table           map[checkpoint.BatchID]batchInfo

	// Rewind requests from the checkpointer goroutine to the poller, which
	// owns the issuer and so must Seek and Assign itself. A request also
	// cancels rewindCtx, the context of the Poll in progress: a Poll blocked
	// on an idle partition would otherwise hold the rewind until new data
	// arrived. The poller replaces a cancelled rewindCtx (under rewindMu,
	// after taking the requests), so a request made after that cancels the
	// new one; an uncancelled one is reused, so polling allocates no context.
	rewindMu     sync.Mutex
	rewinds      []rewindReq
	rewindSig    chan struct{} // capacity 1
	rewindCtx    context.Context
	rewindCancel context.CancelCauseFunc
	pollCtx      context.Context // set before Open; the poller's stop

	reqs     chan hostReq  // Revoke and Lost, poller to checkpointer
	notify   chan struct{} // capacity 1: the poller reached or left the end of input
	eof      atomic.Bool
	finished chan struct{} // closed when a finite source is fully committed
	cpDone   chan struct{} // closed when the checkpointer goroutine returns

	batches batchList

	// The source's metric children, looked up once: issue runs per batch.
	mIssued, mRecordsOut prometheus.Counter

	// For the Report: read is written by the poller, finalParts and finalPos
	// by the checkpointer goroutine at its final commit; both are read only
	// after those goroutines returned.
	read       int64
	finalParts int
	finalPos   int64
	skips      skipCounts
}

// pauseHook, when set (by tests, before Run), is called each time a poller
// pauses for backpressure, with the in-flight batches and bytes.
var pauseHook func(source string, batches, bytes int64)

type batchInfo struct {
	bytes  int64
	issued time.Time
}

type rewindReq struct {
	p     checkpoint.Partition
	epoch checkpoint.Epoch
	pos   checkpoint.Position
}

type hostReq struct {
	ps       []checkpoint.Partition
	lost     bool
	deadline time.Time  // a revoke's drain deadline
	done     chan error // capacity 1
}

func newSourceRunner(rt *runtime, idx int, spec SourceSpec) *sourceRunner {
	s := &sourceRunner{
		rt: rt, idx: idx, spec: spec, src: spec.Source,
		log:       rt.log.With("source", spec.Name),
		cp:        checkpoint.New(),
		byName:    map[string]checkpoint.Partition{},
		credit:    make(chan struct{}, 1),
		table:     map[checkpoint.BatchID]batchInfo{},
		rewindSig: make(chan struct{}, 1),
		reqs:      make(chan hostReq),
		notify:    make(chan struct{}, 1),
		finished:  make(chan struct{}),
		cpDone:    make(chan struct{}),
	}
	s.iss = s.cp.NewIssuer()
	s.mIssued = rt.m.issued.WithLabelValues(spec.Name)
	s.mRecordsOut = rt.m.recordsOut.WithLabelValues(spec.Name)
	s.batches = make(batchList, freeListSize)
	return s
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Assign implements connector.Host.
func (s *sourceRunner) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	s.namesMu.Lock()
	p, ok := s.byName[name]
	if !ok {
		p = checkpoint.Partition(len(s.names))
		s.byName[name] = p
		s.names = append(s.names, name)
		s.gens = append(s.gens, 0)
		s.starts = append(s.starts, 0)
	}
	s.gens[p]++
	s.starts[p] = start
	s.namesMu.Unlock()
	s.iss.Assign(p, start)
	return p
}

// Revoke implements connector.Host: the checkpointer goroutine waits until the
// partitions are drained (or DrainTimeout), commits their final watermarks,
// and forgets them.
//
// The sinks are asked to flush their current groups at once, behind each
// partition's last batch, so that the revoke waits for the writes rather than
// for the sinks' MaxAge.
//
// The drain timeout counts from the call and is shared by all the
// partitions: a worker stuck behind a stalled sink delays the flush requests
// only that long, and a rebalance revoking many partitions waits for one
// timeout, not one per partition.
func (s *sourceRunner) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	if len(ps) == 0 {
		return nil
	}
	ctx, stop := s.hostCtx(ctx)
	defer stop()
	for _, p := range ps {
		s.iss.Revoke(p)
	}
	timeout := s.rt.g.spec.Checkpoint.DrainTimeout
	deadline := s.rt.now().Add(timeout)
	fctx, cancel := context.WithTimeout(ctx, timeout)
	s.rt.flushPartitions(fctx, s, ps)
	cancel()
	return s.hostRequest(ctx, hostReq{ps: slices.Clone(ps), deadline: deadline})
}

// errRewind is the cause with which a rewind request cancels the context of
// the Poll in progress.
var errRewind = errors.New("pipeline: poll interrupted to rewind a partition")

// hostCtx returns ctx minus the cancellation of a rewind request. A source
// calls Revoke from inside Poll with the Poll's context (a file source giving
// up a file); that context is cancelled to apply a rewind, which must not cut
// the revoke's wait short. The result is done when ctx is done for another
// reason, or when polling stops.
func (s *sourceRunner) hostCtx(ctx context.Context) (context.Context, func()) {
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop1 := context.AfterFunc(ctx, func() {
		if c := context.Cause(ctx); !errors.Is(c, errRewind) {
			cancel(c)
		}
	})
	stop2 := func() bool { return false }
	if s.pollCtx != nil {
		stop2 = context.AfterFunc(s.pollCtx, func() { cancel(context.Cause(s.pollCtx)) })
	}
	return hctx, func() {
		stop1()
		stop2()
		cancel(nil)
	}
}

// Lost implements connector.Host: the partitions are forgotten, nothing committed.
func (s *sourceRunner) Lost(ps ...checkpoint.Partition) {
	if len(ps) == 0 {
		return
	}
	for _, p := range ps {
		s.iss.Revoke(p)
	}
	_ = s.hostRequest(context.Background(), hostReq{ps: slices.Clone(ps), lost: true})
}

// Skip implements connector.Host.
func (s *sourceRunner) Skip(reason string, records int64) {
	s.skips.add(&s.skips.skipped, reason, records)
	s.rt.m.skipped.WithLabelValues(s.spec.Name, reason).Add(float64(records))
}

// Unread implements connector.Host.
func (s *sourceRunner) Unread(reason string, bytes int64) {
	s.skips.add(&s.skips.unread, reason, bytes)
	s.rt.m.unread.WithLabelValues(s.spec.Name, reason).Add(float64(bytes))
}

// Logger implements connector.Host.
func (s *sourceRunner) Logger() *slog.Logger { return s.log }

func (s *sourceRunner) hostRequest(ctx context.Context, r hostReq) error {
	r.done = make(chan error, 1)
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.cpDone:
		return errors.New("pipeline: source stopped")
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s *sourceRunner) partName(p checkpoint.Partition) string {
	name, _ := s.partInfo(p)
	return name
}

// partInfo returns a partition's name and assignment generation.
func (s *sourceRunner) partInfo(p checkpoint.Partition) (string, uint64) {
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	if int(p) < len(s.names) {
		return s.names[p], s.gens[p]
	}
	return fmt.Sprint(p), 0
}

// committedOf returns p's last committed position, or -1 if none is known.
func (s *sourceRunner) committedOf(p checkpoint.Partition) checkpoint.Position {
	s.committedMu.RLock()
	defer s.committedMu.RUnlock()
	if int(p) < len(s.committedPos) {
		return s.committedPos[p]
	}
	return -1
}

// publishCommitted makes the committed positions of states visible to the
// sinks.
func (s *sourceRunner) publishCommitted(states []checkpoint.PartitionState) {
	s.committedMu.Lock()
	defer s.committedMu.Unlock()
	for _, ps := range states {
		for int(ps.Partition) >= len(s.committedPos) {
			s.committedPos = append(s.committedPos, -1)
		}
		s.committedPos[ps.Partition] = ps.Committed
	}
}

func (s *sourceRunner) putBatch(b *connector.Batch) {
	s.batches.put(b)
}

// poll is the polling goroutine. It returns when pollCtx is done or the
// source fails; the runtime then closes the workers' input.
func (s *sourceRunner) poll(pollCtx, hardCtx context.Context) {
	s.pollCtx = pollCtx
	if err := s.src.Open(pollCtx, s); err != nil {
		if pollCtx.Err() == nil {
			s.rt.fail(fmt.Errorf("pipeline: source %s: open: %w", s.spec.Name, err))
		}
		return
	}
	s.rewindMu.Lock()
	s.rewindCtx, s.rewindCancel = context.WithCancelCause(pollCtx)
	s.rewindMu.Unlock()
	defer func() {
		s.rewindMu.Lock()
		s.rewindCancel(nil)
		s.rewindMu.Unlock()
	}()
	for {
		if err := s.doRewinds(pollCtx, hardCtx); err != nil {
			s.rt.fail(err)
			return
		}
		// Backpressure: wait until in-flight batches and bytes are under the
		// limits; resolutions come back through the checkpointer goroutine.
		// At the end of input, wait for a rewind or the stop.
		if s.eof.Load() || s.inflightBatches.Load() >= int64(s.spec.MaxInFlightBatches) || s.inflightBytes.Load() >= s.spec.MaxInFlightBytes {
			if pauseHook != nil && !s.eof.Load() {
				pauseHook(s.spec.Name, s.inflightBatches.Load(), s.inflightBytes.Load())
			}
			select {
			case <-s.credit:
			case <-s.rewindSig:
				signal(s.rewindSig) // for doRewinds, at the top of the loop
			case <-pollCtx.Done():
				return
			}
			continue
		}
		b := s.batches.get()
		rctx := s.rewindCtx // only the poller replaces it
		err := s.src.Poll(rctx, b)
		if err != nil {
			s.putBatch(b)
			switch {
			case errors.Is(err, connector.ErrEndOfInput):
				s.eof.Store(true)
				signal(s.notify)
				s.rt.flushSinks(s)
				continue
			case pollCtx.Err() != nil:
				return
			case rctx.Err() != nil:
				// A rewind interrupted the Poll: no batch, rewind at the top
				// of the loop. An error that is not the interruption comes
				// back from the next Poll.
				continue
			}
			s.rt.fail(fmt.Errorf("pipeline: source %s: poll: %w", s.spec.Name, err))
			return
		}
		// A Poll that returns a batch although a rewind cancelled it is
		// issued like any other: it belongs to the epoch before the rewind,
		// so its acknowledgements are stale once doRewinds starts the new one.
		if s.iss.Epoch(b.Partition) == 0 {
			s.putBatch(b)
			s.rt.fail(fmt.Errorf("pipeline: source %s: poll returned a batch of partition %d, which it never assigned (call Host.Assign first)", s.spec.Name, b.Partition))
			return
		}
		if err := s.checkPositions(b); err != nil {
			s.putBatch(b)
			s.rt.fail(err)
			return
		}
		gen := s.issue(b)
		if !s.rt.dispatch(hardCtx, s, b, gen) {
			return
		}
	}
}

// checkPositions checks that b's records carry their own positions: offsets
// from where the batch begins, in order, below its end. Everything that
// skips records a sink already holds relies on it (see sinkprogress.go), so
// a source that breaks the rule stops the run at once, rather than have its
// records skipped wrongly.
func (s *sourceRunner) checkPositions(b *connector.Batch) error {
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	start := s.starts[b.Partition]
	if b.End < start {
		return fmt.Errorf("pipeline: source %s: partition %s: a batch ends at %d, before where it begins (%d): positions must not go back (see connector.Position)",
			s.spec.Name, s.names[b.Partition], b.End, start)
	}
	last := start
	for i := range b.Records {
		off := checkpoint.Position(b.Records[i].Origin.Offset)
		if off < last || off >= b.End {
			return fmt.Errorf("pipeline: source %s: partition %s: record %d of a batch has offset %d, outside the batch's positions [%d, %d) or before the record ahead of it: set each record's Origin.Offset to its own position (see connector.Position)",
				s.spec.Name, s.names[b.Partition], i, off, start, b.End)
		}
		last = off
	}
	s.starts[b.Partition] = b.End
	return nil
}

// issue gives b's records their references: one AckRef per batch, a clone per
// record, the first reference to the last record. It returns the partition's
// assignment generation.
func (s *sourceRunner) issue(b *connector.Batch) uint64 {
	ref := s.iss.Issue(b.Partition, b.End)
	var bytes int64
	name, gen := s.partInfo(b.Partition)
	for i := range b.Records {
		r := &b.Records[i]
		bytes += int64(r.Size())
		if r.Origin.Source == "" {
			r.Origin.Source = s.spec.Name
		}
		if r.Origin.Partition == "" {
			r.Origin.Partition = name
		}
	}
	// The table entry must exist before any reference is released: the
	// checkpointer looks it up when it drains the resolution.
	s.tableMu.Lock()
	s.table[ref.Batch()] = batchInfo{bytes: bytes, issued: s.rt.now()}
	s.tableMu.Unlock()
	s.inflightBatches.Add(1)
	s.inflightBytes.Add(bytes)
	s.mIssued.Inc()
	s.mRecordsOut.Add(float64(len(b.Records)))
	s.rt.totalIn.Add(int64(len(b.Records)))
	s.read += int64(len(b.Records))
	n := len(b.Records)
	if n == 0 {
		ref.Release(checkpoint.Delivered)
		return gen
	}
	for i := range n - 1 {
		b.Records[i].Ack = ref.Clone()
	}
	b.Records[n-1].Ack = ref
	return gen
}

// doRewinds seeks every partition the checkpointer asked to replay back to
// its watermark and starts a new epoch there. Batches polled before are of the
// old epoch: their acknowledgements are stale. It gives the next Poll a fresh
// context if a request cancelled the last one.
func (s *sourceRunner) doRewinds(pollCtx, ctx context.Context) error {
	select {
	case <-s.rewindSig:
	default:
		// The request cancels before it signals: a Poll may have seen the
		// cancellation first.
		if s.rewindCtx.Err() == nil {
			return nil
		}
	}
	s.rewindMu.Lock()
	reqs := s.rewinds
	s.rewinds = nil
	if s.rewindCtx.Err() != nil && pollCtx.Err() == nil {
		s.rewindCtx, s.rewindCancel = context.WithCancelCause(pollCtx)
	}
	s.rewindMu.Unlock()
	for _, r := range reqs {
		if s.iss.Epoch(r.p) != r.epoch {
			continue // revoked or re-assigned since
		}
		if err := s.src.Seek(ctx, r.p, r.pos); err != nil {
			return fmt.Errorf("pipeline: source %s: seek partition %s to %d for a rewind: %w", s.spec.Name, s.partName(r.p), r.pos, err)
		}
		s.iss.Assign(r.p, r.pos)
		s.namesMu.Lock()
		s.starts[r.p] = r.pos
		s.namesMu.Unlock()
		s.eof.Store(false)
		s.rt.m.rewinds.WithLabelValues(s.spec.Name).Inc()
		s.log.Info("partition rewound to its watermark", "partition", s.partName(r.p), "position", r.pos)
	}
	return nil
}

// cpState is the checkpointer goroutine's own bookkeeping.
type cpState struct {
	pending  []checkpoint.Commit
	states   []checkpoint.PartitionState
	rewound  map[checkpoint.Partition]checkpoint.Epoch // rewind requested for this epoch
	revokes  []revokeWait
	warned   map[string]bool
	finished bool
}

type revokeWait struct {
	r        hostReq
	deadline time.Time
}

// checkpoint is the checkpointer goroutine: it drains resolutions, commits on
// the interval, serves Revoke and Lost, asks for rewinds, and reports stalls.
// It returns after a final drain and commit once final is closed.
func (s *sourceRunner) checkpoint(ctx context.Context, final <-chan struct{}) {
	defer close(s.cpDone)
	cs := &cpState{rewound: map[checkpoint.Partition]checkpoint.Epoch{}, warned: map[string]bool{}}
	cfg := s.rt.g.spec.Checkpoint
	tick := time.NewTicker(cfg.CommitInterval)
	defer tick.Stop()
	stallTicker := time.NewTicker(min(cfg.StallWarning/2, 5*time.Second))
	defer stallTicker.Stop()
	stall := stallTicker.C
	if t := s.rt.o.hooks.stallTicks; t != nil {
		stall = t
	}
	revokeTimer := time.NewTimer(time.Hour)
	defer revokeTimer.Stop()
	for {
		select {
		case <-s.cp.Wake():
			s.drain()
		case <-tick.C:
			s.drain()
			s.commit(ctx, cs)
		case <-stall:
			s.drain()
			s.warnStalls(cs)
		case r := <-s.reqs:
			s.drain()
			if r.lost {
				for _, p := range r.ps {
					s.cp.Forget(p)
					s.forgetMetrics(p)
				}
				r.done <- nil
			} else {
				cs.revokes = append(cs.revokes, revokeWait{r: r, deadline: r.deadline})
				revokeTimer.Reset(max(r.deadline.Sub(s.rt.now()), 0))
			}
		case <-revokeTimer.C:
			s.drain()
		case <-s.notify:
			s.drain()
		case <-final:
			s.drain()
			s.commit(ctx, cs)
			s.finalParts = len(cs.states)
			for _, ps := range cs.states {
				s.finalPos += int64(ps.Committed)
			}
			for _, w := range cs.revokes {
				w.r.done <- errors.New("pipeline: shutting down before the partition drained")
			}
			return
		}
		s.after(ctx, cs)
	}
}

// drain applies resolutions and returns their in-flight budget to the poller.
func (s *sourceRunner) drain() {
	s.tableMu.Lock()
	var batches, bytes int64
	st := s.cp.DrainFunc(func(m checkpoint.AckMsg, _ checkpoint.ResolveOutcome) {
		if bi, ok := s.table[m.ID]; ok {
			delete(s.table, m.ID)
			batches++
			bytes += bi.bytes
		}
	})
	s.tableMu.Unlock()
	if batches > 0 {
		s.inflightBatches.Add(-batches)
		s.inflightBytes.Add(-bytes)
		signal(s.credit)
	}
	s.rt.m.drained(s.spec.Name, st)
}

// after runs after every event: it finishes revokes, asks for rewinds of
// blocked partitions, and notices when a finite source is done.
func (s *sourceRunner) after(ctx context.Context, cs *cpState) {
	now := s.rt.now()
	keep := cs.revokes[:0]
	for _, w := range cs.revokes {
		drained := true
		for _, p := range w.r.ps {
			drained = drained && s.cp.Drained(p)
		}
		if !drained && now.Before(w.deadline) {
			keep = append(keep, w)
			continue
		}
		w.r.done <- s.finalCommit(ctx, w.r.ps)
	}
	clear(cs.revokes[len(keep):])
	cs.revokes = keep

	cs.states = s.cp.States(cs.states[:0])
	blocked := false
	for _, ps := range cs.states {
		if !ps.Blocked {
			continue
		}
		blocked = true
		if s.rt.stopping.Load() || cs.rewound[ps.Partition] == ps.Epoch {
			continue
		}
		id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.FailedSeq}
		if ps.FailedStatus == checkpoint.Rejected {
			// Replaying a rejected record fails the same way: stop rather
			// than loop, and say how to let such records through.
			s.rt.fail(s.rejectedError(id))
			continue
		}
		cs.rewound[ps.Partition] = ps.Epoch
		s.rewindMu.Lock()
		s.rewinds = append(s.rewinds, rewindReq{p: ps.Partition, epoch: ps.Epoch, pos: ps.Watermark})
		if s.rewindCancel != nil {
			s.rewindCancel(errRewind) // wake a Poll waiting for data
		}
		signal(s.rewindSig)
		s.rewindMu.Unlock()
	}
	if !cs.finished && s.eof.Load() && !blocked && s.inflightBatches.Load() == 0 {
		s.commit(ctx, cs)
		if len(s.cp.Committable(cs.pending[:0])) == 0 {
			cs.finished = true
			close(s.finished)
		}
	}
}

func (s *sourceRunner) rejectedError(id checkpoint.BatchID) error {
	he := &HaltError{Source: s.spec.Name, Partition: s.partName(id.Partition), Batch: id,
		Err: errors.New("a record was rejected and replay cannot fix it; send such records to a dead_letter sink (on_failure: dead_letter) to let the pipeline go on")}
	if rj := s.rt.rejection(id); rj != nil {
		he.Err = fmt.Errorf("%s rejected a record (offset %d): %w; replay cannot fix it", rj.component, rj.origin.Offset, rj.err)
	}
	return he
}

// commit hands every committable position to the source.
func (s *sourceRunner) commit(ctx context.Context, cs *cpState) {
	cs.pending = s.cp.Committable(cs.pending[:0])
	s.commitList(ctx, cs)
	cs.states = s.cp.States(cs.states[:0])
	s.publishCommitted(cs.states)
	s.rt.noteCommitted(s, cs.states)
	for _, ps := range cs.states {
		name := s.partName(ps.Partition)
		s.rt.m.watermark.WithLabelValues(s.spec.Name, name).Set(float64(ps.Watermark))
		s.rt.m.committed.WithLabelValues(s.spec.Name, name).Set(float64(ps.Committed))
	}
	s.rt.m.inflightB.WithLabelValues(s.spec.Name).Set(float64(s.inflightBatches.Load()))
	s.rt.m.inflightBy.WithLabelValues(s.spec.Name).Set(float64(s.inflightBytes.Load()))
	if h := s.rt.o.hooks.committed; h != nil {
		h(s.spec.Name)
	}
}

func (s *sourceRunner) commitList(ctx context.Context, cs *cpState) error {
	if len(cs.pending) == 0 {
		return nil
	}
	t0 := time.Now()
	err := s.src.Commit(ctx, cs.pending)
	s.rt.m.commitTime.WithLabelValues(s.spec.Name).Observe(time.Since(t0).Seconds())
	if err != nil {
		s.rt.m.commitErrors.WithLabelValues(s.spec.Name).Inc()
		s.log.Warn("commit failed; retrying next interval", "err", err)
		return fmt.Errorf("pipeline: source %s: commit: %w", s.spec.Name, err)
	}
	s.cp.MarkCommitted(cs.pending)
	return nil
}

// finalCommit commits revoked partitions' last watermarks and forgets them.
func (s *sourceRunner) finalCommit(ctx context.Context, ps []checkpoint.Partition) error {
	var cs cpState
	for _, c := range s.cp.Committable(nil) {
		if slices.Contains(ps, c.Partition) {
			cs.pending = append(cs.pending, c)
		}
	}
	err := s.commitList(ctx, &cs)
	for _, p := range ps {
		s.cp.Forget(p)
		s.forgetMetrics(p)
	}
	return err
}

func (s *sourceRunner) forgetMetrics(p checkpoint.Partition) {
	name := s.partName(p)
	s.rt.m.watermark.DeleteLabelValues(s.spec.Name, name)
	s.rt.m.committed.DeleteLabelValues(s.spec.Name, name)
}

// Stall is one partition whose oldest unresolved batch has waited long.
type Stall struct {
	Source    string   `json:"source"`
	Partition string   `json:"partition"`
	Batch     string   `json:"batch"`
	AgeMillis int64    `json:"age_ms"`
	Status    string   `json:"status"`            // "pending", or the failure that blocks it
	HeldBy    []string `json:"held_by,omitempty"` // sinks whose current group holds references of it
	Note      string   `json:"note,omitempty"`
}

// stalls appends the oldest unresolved batch of every partition older than
// minAge. It reads the Checkpointer, so only the checkpointer goroutine calls
// it; /debug/stalls gets a snapshot.
func (s *sourceRunner) stalls(dst []Stall, states []checkpoint.PartitionState, minAge time.Duration) []Stall {
	now := s.rt.now()
	for _, ps := range states {
		id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}
		s.tableMu.Lock()
		bi, ok := s.table[id]
		s.tableMu.Unlock()
		if !ok && !ps.Blocked {
			continue // nothing unresolved in this partition
		}
		var age time.Duration
		if ok {
			age = now.Sub(bi.issued)
		}
		if ok && age < minAge {
			continue
		}
		st := Stall{Source: s.spec.Name, Partition: s.partName(ps.Partition), Batch: id.String(), AgeMillis: age.Milliseconds(), Status: "pending"}
		if ps.Blocked {
			st.Status = ps.FailedStatus.String()
		}
		var held []checkpoint.BatchID
		for _, sk := range s.rt.sinks {
			held = sk.heldBatches(held[:0])
			for _, h := range held {
				if h == id {
					st.HeldBy = append(st.HeldBy, sk.spec.Name)
					break
				}
			}
		}
		if len(st.HeldBy) == 0 {
			st.Note = "no sink's current group holds it: it is queued before a transform or sink"
		}
		dst = append(dst, st)
	}
	return dst
}

// warnStalls refreshes the /debug/stalls snapshot and logs, once per batch,
// every partition stalled longer than StallWarning.
func (s *sourceRunner) warnStalls(cs *cpState) {
	cs.states = s.cp.States(cs.states[:0])
	list := s.stalls(nil, cs.states, 0)
	s.rt.setStalls(s.idx, list)
	for _, st := range list {
		if time.Duration(st.AgeMillis)*time.Millisecond < s.rt.g.spec.Checkpoint.StallWarning {
			continue
		}
		if cs.warned[st.Batch] {
			continue
		}
		cs.warned[st.Batch] = true
		s.log.Warn("partition stalled: its oldest batch is unresolved", "partition", st.Partition, "batch", st.Batch, "age", time.Duration(st.AgeMillis)*time.Millisecond, "status", st.Status, "held_by", st.HeldBy)
	}
	if len(cs.warned) > 4096 {
		clear(cs.warned)
	}
}
