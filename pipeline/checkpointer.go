package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

// The checkpointer goroutine: one per source, the owner of its
// Checkpointer. It is a thin loop in the style of etcd-io/raft's node.go:
// wait for an event, drain the resolutions, ask the commit policy
// (package pipeline/internal/policy) what to do, do it. Everything it decides is the policy's; what
// it does is I/O (Source.Commit), messages to the poller (rewinds) and to the
// callers of Revoke, metrics and logs.

// cpLoop is the checkpointer goroutine's state.
type cpLoop struct {
	s       *sourceRunner
	pol     *policy.Policy
	states  []checkpoint.PartitionState
	commits []checkpoint.Commit
	pending []policy.Pending
	nextID  int
	waiting map[int]hostReq // revokes by policy id
	lastErr error           // the last failed commit's error
}

// checkpoint is the checkpointer goroutine. It returns after a final drain
// and commit once final is closed.
func (s *sourceRunner) checkpoint(ctx context.Context, final <-chan struct{}) {
	defer close(s.cpDone)
	cfg := s.rt.g.spec.Checkpoint
	l := &cpLoop{s: s, waiting: map[int]hostReq{}, pol: policy.New(policy.Config{
		CommitInterval: cfg.CommitInterval, CommitFailureTimeout: cfg.CommitFailureTimeout, StallWarning: cfg.StallWarning,
		Prompt: commitsPromptly(s.src)})}
	s.ck.pol = l.pol
	tick := time.NewTicker(cfg.CommitInterval)
	defer tick.Stop()
	stallTicker := time.NewTicker(stallRefresh(cfg.StallWarning))
	defer stallTicker.Stop()
	stall := stallTicker.C
	if t := s.rt.o.hooks.stallTicks; t != nil {
		stall = t
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		isTick, refresh := false, false
		select {
		case <-s.cp.Wake():
		case <-tick.C:
			isTick = true
		case <-stall:
			refresh = true
		case r := <-s.reqs:
			s.drain()
			l.request(r)
		case <-timer.C:
		case <-s.notify:
		case <-s.statusWake():
		case <-final:
			s.cpw.stepBegin()
			l.final(ctx)
			s.publishFinalStatus(l)
			s.cpw.stepEnd()
			return
		}
		s.cpw.stepBegin()
		s.drain()
		rd := l.pol.Step(l.view(isTick))
		l.carryOut(ctx, &rd)
		if h := s.rt.o.hooks.stepped; h != nil {
			h(s.spec.Name)
		}
		if isTick {
			l.published()
		}
		if refresh || len(rd.Stalled) > 0 {
			s.refreshStalls(l, rd.Stalled)
		}
		if !rd.WakeAt.IsZero() {
			timer.Reset(max(rd.WakeAt.Sub(s.rt.now()), 0))
		}
		s.publishStatus(l)
		s.cpw.stepEnd()
	}
}

// commitsPromptly reports whether src asks to be committed as soon as its
// watermarks move (connector.PromptCommitter).
func commitsPromptly(src connector.Source) bool {
	p, ok := src.(connector.PromptCommitter)
	return ok && p.CommitPromptly()
}

// request takes a Revoke or a Lost from the source.
func (l *cpLoop) request(r hostReq) {
	if r.lost {
		for _, p := range r.ps {
			l.forget(p)
		}
		r.done <- nil
		return
	}
	l.nextID++
	l.waiting[l.nextID] = r
	l.pol.AddRevoke(l.nextID, r.ps, r.deadline)
}

// view gathers what the policy looks at.
func (l *cpLoop) view(tick bool) *policy.View {
	s := l.s
	// States before EOF, on purpose: a rewind clears EOF before its new
	// epoch unblocks the partition (doRewinds), so a view that sees the
	// partition unblocked by a rewind also sees the source not at its end.
	l.states = s.cp.States(l.states[:0])
	l.commits = s.cp.Committable(l.commits[:0])
	l.pending = s.pending(l.pending, l.states)
	return &policy.View{
		Now: s.rt.now(), States: l.states, Committable: l.commits,
		Pending: l.pending, EOF: s.eof.Load(), InFlight: s.inflightBatches.Load(),
		Stopping: s.rt.stopping.Load(), Tick: tick,
	}
}

// carryOut does what the policy decided.
func (l *cpLoop) carryOut(ctx context.Context, rd *policy.Ready) {
	s := l.s
	for _, w := range rd.RevokesDone {
		var cs []checkpoint.Commit
		for _, c := range s.cp.Committable(nil) {
			if slices.Contains(w.Partitions, c.Partition) {
				cs = append(cs, c)
			}
		}
		err := l.commit(ctx, cs)
		s.rt.events.add(Event{Kind: EventRevoked, Source: s.spec.Name, Partitions: s.partNames(w.Partitions), Message: revokedMessage(err)})
		for _, p := range w.Partitions {
			l.forget(p)
		}
		if r, ok := l.waiting[w.ID]; ok {
			delete(l.waiting, w.ID)
			r.done <- err
		}
	}
	if rd.Halt != nil {
		s.rt.fail(s.rejectedError(*rd.Halt))
	}
	if rd.HaltCommits {
		n, since := l.pol.CommitFailing()
		s.rt.fail(fmt.Errorf("pipeline: source %s: %d commits in a row have failed since %s (commit_failure_timeout %v): %w; the positions stay where they were, so input after them is read again next time",
			s.spec.Name, n, since.Format(time.RFC3339), s.rt.g.spec.Checkpoint.CommitFailureTimeout, l.lastErr))
	}
	if len(rd.Rewinds) > 0 {
		for _, r := range rd.Rewinds {
			// Logged at the first rewind of a partition and then at doubling
			// counts: a sink failing for good must not flood the log.
			if _, n := l.pol.Stall(r.Partition, s.rt.now()); n&(n-1) == 0 {
				s.log.Info("rewinding partition to its watermark to replay failed data", "partition", s.partName(r.Partition), "position", r.Position, "rewinds", n)
				s.rt.events.add(Event{Kind: EventRewind, Source: s.spec.Name, Partitions: []string{s.partName(r.Partition)}, Message: fmt.Sprintf("rewound to its watermark, position %d, to replay failed data (rewind %d)", r.Position, n)})
			}
		}
		s.requestRewinds(rd.Rewinds)
	}
	if len(rd.Commit) > 0 {
		err := l.commit(ctx, rd.Commit)
		l.pol.CommitDone(err == nil, s.rt.now())
		if err == nil && s.eof.Load() {
			// A finished source's commit may be its last: step again now,
			// so that the policy sees nothing left and the run ends without
			// waiting for another wake-up (the next commit interval).
			signal(s.notify)
		}
	}
	if rd.Finished {
		s.rt.sourceFinished()
	}
}

// commit hands cs to the source and confirms them to the Checkpointer when
// the source took them. The source has CommitTimeout to answer: a commit
// that has not answered by then fails like any other, so nothing is marked
// committed and the policy retries it with backoff. A failure is logged when
// it starts and then at doubling counts, not at every retry.
func (l *cpLoop) commit(ctx context.Context, cs []checkpoint.Commit) error {
	if len(cs) == 0 {
		return nil
	}
	s := l.s
	timeout := s.rt.g.spec.Checkpoint.CommitTimeout
	t0 := time.Now()
	s.cpw.commitBegin(cs)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	if unsafeBlindCheckpointer {
		cctx, cancel = context.WithCancel(ctx)
	}
	err := s.src.Commit(cctx, cs)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within commit_timeout %v: %w", timeout, err)
	}
	cancel()
	s.cpw.commitEnd(err)
	s.rt.m.commitTime.WithLabelValues(s.spec.Name).Observe(time.Since(t0).Seconds())
	if err != nil {
		s.rt.m.commitErrors.WithLabelValues(s.spec.Name).Inc()
		l.lastErr = err
		n, since := l.pol.CommitFailing()
		if n++; n&(n-1) == 0 {
			if n == 1 {
				since = s.rt.now()
			}
			s.log.Warn("commit failed; retrying with backoff", "failures", n, "since", since.Format(time.RFC3339), "err", err)
			s.rt.events.add(Event{Kind: EventCommitFailed, Source: s.spec.Name, Message: fmt.Sprintf("commit failed (%d in a row), retrying with backoff: %v", n, err)})
		}
		return fmt.Errorf("pipeline: source %s: commit: %w", s.spec.Name, err)
	}
	if n, _ := l.pol.CommitFailing(); n > 0 {
		s.log.Info("commit succeeded again", "failures", n)
		s.rt.events.add(Event{Kind: EventCommitRecovered, Source: s.spec.Name, Message: fmt.Sprintf("commit succeeded again after %d failures", n)})
	}
	s.cp.MarkCommitted(cs)
	return nil
}

// forget drops a revoked or lost partition everywhere the checkpointer
// goroutine keeps it.
func (l *cpLoop) forget(p checkpoint.Partition) {
	l.s.cp.Forget(p)
	l.pol.Forget(p)
	l.s.forgetMetrics(p)
	l.s.release(p)
}

// published refreshes what others read of the committed state: the gauges,
// the positions the sinks' progress reads, the progress display, and the
// committed hook of the tests.
func (l *cpLoop) published() {
	s := l.s
	l.states = s.cp.States(l.states[:0])
	s.publishCommitted(l.states)
	for _, ps := range l.states {
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

// final is the last round: everything that will ever resolve has (the sinks
// are done), so it drains, commits once more and answers the revokes still
// waiting.
func (l *cpLoop) final(ctx context.Context) {
	s := l.s
	s.drain()
	if err := l.commit(ctx, s.cp.Committable(nil)); err != nil {
		s.log.Error("the final commit failed: the input after the last committed positions is read again next time", "err", err)
	}
	l.published()
	s.ck.finalParts = len(l.states)
	for _, ps := range l.states {
		s.ck.finalPos += int64(ps.Committed)
		if ps.Blocked || ps.Watermark > ps.Committed || s.readBeyond(ps.Partition, ps.Committed) {
			s.ck.leftBehind = append(s.ck.leftBehind, s.partName(ps.Partition))
		}
	}
	s.ck.leftInFlight = s.inflightBatches.Load()
	for id, r := range l.waiting {
		delete(l.waiting, id)
		r.done <- errors.New("pipeline: shutting down before the partition drained")
	}
}

// drain applies resolutions and returns their in-flight budget to the poller.
func (s *sourceRunner) drain() {
	s.issued.takeInto(s.ck.table, checkpoint.BatchID{})
	var batches, bytes int64
	st := s.cp.DrainFunc(func(m checkpoint.AckMsg, _ checkpoint.ResolveOutcome) {
		bi, ok := s.ck.table[m.ID]
		if !ok && s.issued.takeInto(s.ck.table, m.ID) {
			// Sent before any reference of the batch was released: it was
			// in the channel, behind the ones taken before the drain.
			bi, ok = s.ck.table[m.ID]
		}
		if ok {
			delete(s.ck.table, m.ID)
			batches++
			bytes += bi.bytes
		}
	})
	if batches > 0 {
		s.inflightBatches.Add(-batches)
		s.inflightBytes.Add(-bytes)
		signal(s.credit)
	}
	s.rt.m.drained(s.spec.Name, st)
}

// pending fills, for each of states, whether its oldest unresolved batch has
// been issued, and when: the policy's view of the table.
func (s *sourceRunner) pending(dst []policy.Pending, states []checkpoint.PartitionState) []policy.Pending {
	dst = dst[:0]
	for _, ps := range states {
		bi, in := s.ck.table[checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}]
		dst = append(dst, policy.Pending{Issued: bi.issued, Pending: in})
	}
	return dst
}

// requestRewinds asks the poller, which owns the issuer, to seek each
// partition back to its watermark and start a new epoch there. It also
// cancels the context of the Poll in progress, which may wait for data on an
// idle partition.
func (s *sourceRunner) requestRewinds(rs []policy.Rewind) { s.rewinds.request(rs) }

func (s *sourceRunner) rejectedError(id checkpoint.BatchID) error {
	he := &HaltError{Source: s.spec.Name, Partition: s.partName(id.Partition), Batch: id,
		Err: errors.New("a record was rejected and replay cannot fix it; send such records to a dead_letter sink (on_failure: dead_letter) to let the pipeline go on")}
	if rj := s.rt.rejection(id); rj != nil {
		he.Err = fmt.Errorf("%s rejected a record (offset %d): %w; replay cannot fix it", rj.component, rj.origin.Offset, rj.err)
	}
	return he
}

func (s *sourceRunner) forgetMetrics(p checkpoint.Partition) {
	name := s.partName(p)
	s.rt.m.watermark.DeleteLabelValues(s.spec.Name, name)
	s.rt.m.committed.DeleteLabelValues(s.spec.Name, name)
	s.rt.m.stalled.DeleteLabelValues(s.spec.Name, name)
}
