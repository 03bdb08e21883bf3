package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

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
