package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/sinkstep"
	"github.com/weir-etl/weir/record"
)

// failGroup resolves every record of the group with st, without the policy.
func (s *sinkRunner) failGroup(st checkpoint.AckStatus) {
	resolveEntries(s.entries, entryFailed)
	s.failed += int64(len(s.group))
	s.fail(s.group, st)
	s.resetGroup()
}
func (s *sinkRunner) fail(recs []record.Record, st checkpoint.AckStatus) {
	for i := range recs {
		if !refOf(&recs[i]).IsZero() {
			s.set.Add(refOf(&recs[i]))
		}
	}
	s.set.Fail(st)
}

// retry aborts the failed group and writes it again with exponential backoff
// and full jitter, within the sink's RetrySettings; when they run out it
// applies the failure policy to the whole group (or, once the sink has failed
// for GiveUpAfter, its OnGiveUp). A group that fails because it is too large
// for what is left (a full disk, a broker's size limit) is written again in
// smaller parts first.
func (s *sinkRunner) retry(ctx context.Context, err error) {
	r := s.spec.Retry
	set := sinkstep.Settings{MaxAttempts: r.MaxAttempts, MaxElapsed: r.MaxElapsed, MaxBackoff: r.MaxBackoff}
	start := time.Now()
	v := sinkstep.RetryView{Backoff: r.InitialBackoff}
	for v.Attempt = 1; ; v.Attempt++ {
		s.rt.m.writeErrors.WithLabelValues(s.spec.Name).Inc()
		s.noteFailure(err, "write")
		if aerr := s.sinkAbort(ctx); aerr != nil {
			s.log.Warn("abort failed", "err", aerr)
		}
		v.TooLarge, v.Records, v.Elapsed, v.Stopping, v.Rand = tooLarge(err), len(s.group), time.Since(start), ctx.Err() != nil, rand.Uint64()
		rd := sinkstep.Retry(set, v)
		if rd.WriteInParts {
			v.Split = true
			if err = s.writeInParts(ctx); err == nil {
				return
			}
			v.TooLarge, v.Records, v.Elapsed, v.Stopping = tooLarge(err), len(s.group), time.Since(start), ctx.Err() != nil
			rd = sinkstep.Retry(set, v)
		}
		if rd.GiveUp {
			break
		}
		t := time.NewTimer(rd.Wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		v.Backoff = rd.NextBackoff
		var recs []record.Record
		if recs, err = s.rewrite(ctx, s.group); err == nil {
			s.group = recs
			s.kept = s.givePositions(s.entries, s.kept)
			if err = s.sinkFlush(ctx); err == nil {
				s.ackGroup()
				return
			}
		}
		s.group = recs
		if len(s.group) == 0 {
			// Every record was rejected and resolved alone; the holds keep
			// them from being skipped.
			resolveEntries(s.entries, entryDone)
			s.resetGroup()
			return
		}
	}
	s.giveUp(ctx, err)
}

// giveUp applies what sinkstep.GiveUp decides to the group whose retries ran
// out: its failure policy, on the whole group or through isolate.
func (s *sinkRunner) giveUp(ctx context.Context, err error) {
	d := s.health.failingFor(s.rt.now())
	g := sinkstep.GiveUp(sinkstep.GiveUpView{OnFailure: stepPolicy(s.spec.OnFailure), GiveUpAfter: s.spec.GiveUpAfter,
		OnGiveUp: stepGiveUp(s.spec.OnGiveUp), FailingFor: d, Records: len(s.group), Stopping: ctx.Err() != nil,
		GiveUps: s.giveUps, NoIsolation: unsafeIsolate == "whole"})
	s.giveUps = g.GiveUps
	policy := failurePolicy(g.Policy)
	if g.GaveUp {
		s.health.giveUp()
		err = fmt.Errorf("gave up after failing for %v (give_up_after %v): %w", d.Round(time.Second), s.spec.GiveUpAfter, err)
		s.rt.events.add(Event{Kind: EventGaveUp, Sink: s.spec.Name, Message: fmt.Sprintf("on_give_up %s: %v", policy, err)})
	}
	if g.Isolate {
		// A failure may belong to a few records only: find them, rather than
		// send the whole group to the dead letter.
		s.isolate(ctx, err, g.Log)
		return
	}
	if g.Log {
		s.log.Error("write failed; giving up on the group", "records", len(s.group), "policy", policy.String(), "times", s.giveUps, "err", err)
	}
	recs := s.group
	s.group = nil // policy may keep the slice (dead letters copy it first)
	resolveEntries(s.entries, entryFailed)
	s.applyPolicy(ctx, policy, recs, checkpoint.Failed, err)
	clear(recs)
	s.group = recs[:0]
	s.resetGroup()
}

// stepPolicy, stepGiveUp and failurePolicy translate the Spec's failure
// policies to and from sinkstep's.
func stepPolicy(p FailurePolicy) sinkstep.Policy {
	switch p {
	case Halt:
		return sinkstep.Halt
	case DeadLetter:
		return sinkstep.DeadLetter
	}
	return sinkstep.Rewind
}

func stepGiveUp(p GiveUpPolicy) sinkstep.Policy {
	if p == GiveUpDeadLetter {
		return sinkstep.DeadLetter
	}
	return sinkstep.Halt
}

func failurePolicy(p sinkstep.Policy) FailurePolicy {
	switch p {
	case sinkstep.Halt:
		return Halt
	case sinkstep.DeadLetter:
		return DeadLetter
	}
	return Rewind
}

// tooLarge reports whether err says a group was too large to be written as
// one: a full disk, a file grown past its limit, or a sink's ErrTooLarge.
func tooLarge(err error) bool {
	return errors.Is(err, connector.ErrTooLarge) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG)
}

// writeInParts writes the group in parts, halving a part whose write fails
// because it is too large, down to one record; each part that becomes
// durable is acknowledged at once. It returns nil when every part was
// written; otherwise the group keeps the records not written, and the error.
// The group's progress entries resolve as delivered only when all of it was
// written (a replay may so write a part again: at least once).
func (s *sinkRunner) writeInParts(ctx context.Context) error {
	recs := s.group
	size := (len(recs) + 1) / 2
	var err error
	for len(recs) > 0 {
		n := min(size, len(recs))
		if aerr := s.sinkAbort(ctx); aerr != nil {
			s.log.Warn("abort failed", "err", aerr)
		}
		var part []record.Record
		if part, err = s.rewrite(ctx, recs[:n]); err == nil {
			s.kept = s.givePartPositions(recs[n:], s.kept)
			err = s.sinkFlush(ctx)
		}
		if err != nil {
			if tooLarge(err) && n > 1 {
				size = (n + 1) / 2
				recs = append(part, recs[n:]...)
				continue
			}
			s.group = append(part, recs[n:]...)
			return err
		}
		noteStored(s.kept)
		s.ack(&s.set, part)
		clear(recs[:n])
		recs = recs[n:]
		s.log.Debug("wrote a part of a group too large to write at once", "records", len(part), "left", len(recs))
	}
	s.group = s.group[:0]
	s.ackGroup()
	return nil
}

// rewrite writes recs after an Abort and returns them without the records the
// sink rejected, which are resolved alone.
func (s *sinkRunner) rewrite(ctx context.Context, recs []record.Record) ([]record.Record, error) {
	for off := 0; off < len(recs); {
		err := s.sinkWrite(ctx, recs[off:])
		if err == nil {
			return recs, nil
		}
		var rej *connector.RejectError
		if !errors.As(err, &rej) || rej.Index < 0 || off+rej.Index >= len(recs) {
			return recs, err
		}
		k := off + rej.Index
		bad := recs[k]
		copy(recs[k:], recs[k+1:])
		recs[len(recs)-1] = record.Record{}
		recs = recs[:len(recs)-1]
		s.policy(ctx, []record.Record{bad}, checkpoint.Rejected, err)
		off = k
	}
	return recs, nil
}

// policy applies the sink's OnFailure to records whose write failed for good.
func (s *sinkRunner) policy(ctx context.Context, recs []record.Record, st checkpoint.AckStatus, err error) {
	s.applyPolicy(ctx, s.spec.OnFailure, recs, st, err)
}

// applyPolicy applies policy to records whose write failed for good.
func (s *sinkRunner) applyPolicy(ctx context.Context, policy FailurePolicy, recs []record.Record, st checkpoint.AckStatus, err error) {
	s.failed += int64(len(recs))
	if st == checkpoint.Rejected {
		s.rt.m.rejected.WithLabelValues(s.spec.Name).Add(float64(len(recs)))
		for i := range recs {
			s.holdRejected(&recs[i])
			if !refOf(&recs[i]).IsZero() {
				s.rt.noteReject(&rejection{component: "sink " + s.spec.Name, origin: recs[i].Origin, batch: refOf(&recs[i]).Batch(), err: err})
			}
		}
	}
	switch policy {
	case DeadLetter:
		s.deadLetter(ctx, recs, err)
	case Halt:
		he := &HaltError{Sink: s.spec.Name, Err: err}
		for i := range recs {
			if !refOf(&recs[i]).IsZero() {
				he.Batch = refOf(&recs[i]).Batch()
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
		if s.spec.NoAcknowledgements {
			s.log.Error("records dropped: the sink does not hold the watermark (acknowledgements off)", "records", len(recs), "err", err)
		}
		s.fail(recs, st)
	}
}
