package pipeline

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
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
			s.kept = s.givePositions(s.entries, s.kept)
			if err = s.spec.Sink.Flush(ctx); err == nil {
				s.ackGroup()
				return
			}
		}
		if len(s.group) == 0 {
			// Every record was rejected and resolved alone; the holds keep
			// them from being skipped.
			resolveEntries(s.entries, entryDone)
			s.resetGroup()
			return
		}
	}
	s.log.Error("write failed; giving up", "records", len(s.group), "policy", s.spec.OnFailure.String(), "err", err)
	recs := s.group
	s.group = nil // policy may keep the slice (dead letters copy it first)
	resolveEntries(s.entries, entryFailed)
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
			s.holdRejected(&recs[i])
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
		if s.spec.NoAcknowledgements {
			s.log.Error("records dropped: the sink does not hold the watermark (acknowledgements off)", "records", len(recs), "err", err)
		}
		s.fail(recs, st)
	}
}
