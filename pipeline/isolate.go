package pipeline

import (
	"context"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline/internal/sinkstep"
)

// A group that failed for good under the dead_letter policy is not sent to
// the dead letter whole: a failure often belongs to one record (its path
// cannot be made, the destination refuses its value) while the sink reports
// it for the group. isolate writes the group again in halves, and halves of
// the halves that fail, in order, down to single records; each part that
// becomes durable is acknowledged at once, and a record that fails alone
// goes to the dead letter alone, with its own error. The retries come first:
// isolate runs only after they ran out.
//
// The cost is bounded. With k records that fail among n, it is about
// 2k·log2(n/k) attempts; a part that succeeds after a failed one says the
// other half fails and that half is split without being tried. A sink that
// fails everything (a destination that is down while on_give_up is
// dead_letter) would need an attempt per record to prove it, so isolate stops
// once 2·log2(n) parts of more than one record have failed in a row, none
// written in between, and sends the rest of the group to the dead letter as
// it is: about 4·log2(n) attempts then, 30 for a group of 100, 56 for 10,000.
//
// The watermark stays contiguous: the records' references are resolved one
// by one as each part is written or dead-lettered, and a batch is complete
// only when all of its records are. A record dead-lettered alone is held
// (see partProgress.holds) as a rejected one is, so that no replay skips it
// and no PositionKeeper stores a position past it before its dead letter is
// durable; the group's progress entries resolve as delivered at the end.
// When the rest went to the dead letter as it is, they resolve as failed,
// as a group given up on whole does.

// isolate finds the records of the group that fail alone and dead-letters
// them alone, writing the rest (see above): sinkstep.Isolation decides each
// step, this carries it out. err is the group's error; logIt says whether
// to log the outcome.
func (s *sinkRunner) isolate(ctx context.Context, err error, logIt bool) {
	group := s.group
	recs := group
	written, alone, whole := 0, 0, 0
	iso := sinkstep.NewIsolation(len(recs), unsafeIsolate != "unbounded")
	var v sinkstep.IsoView
	for {
		v.Left, v.Stopping = len(recs), ctx.Err() != nil
		rd := iso.Step(v)
		v = sinkstep.IsoView{}
		if rd.Action == sinkstep.Stop {
			break
		}
		if rd.Action == sinkstep.DeadLetterOne {
			if unsafeIsolate != "nohold" {
				s.holdRejected(&recs[0])
			}
			if unsafeIsolate == "deliver" {
				ref := *refOf(&recs[0])
				*refOf(&recs[0]) = checkpoint.AckRef{}
				ref.Release(checkpoint.Delivered)
			}
			s.applyPolicy(ctx, DeadLetter, recs[:1], checkpoint.Failed, err)
			clear(recs[:1])
			recs = recs[1:]
			alone++
			continue
		}
		part, perr := s.rewrite(ctx, recs[:rd.N])
		if perr == nil {
			s.kept = s.givePartPositions(recs[rd.N:], s.kept)
			perr = s.sinkFlush(ctx)
		}
		// Records rejected on the way left the part: close the gap.
		recs = append(part, recs[rd.N:]...)
		v.OK, v.Kept = perr == nil, len(part)
		if perr == nil {
			noteStored(s.kept)
			s.ack(&s.set, part)
			clear(recs[:len(part)])
			recs = recs[len(part):]
			written += len(part)
			continue
		}
		s.rt.m.writeErrors.WithLabelValues(s.spec.Name).Inc()
		if aerr := s.sinkAbort(ctx); aerr != nil {
			s.log.Warn("abort failed", "err", aerr)
		}
		err = perr
	}
	if len(recs) > 0 {
		whole = len(recs)
		s.applyPolicy(ctx, DeadLetter, recs, checkpoint.Failed, err)
		resolveEntries(s.entries, entryFailed)
	} else {
		resolveEntries(s.entries, entryDone)
	}
	if written > 0 {
		s.noteSuccess()
	}
	if logIt {
		s.log.Error("write failed; the group was written in parts, and what fails went to the dead letter",
			"records", len(group), "written", written, "dead_lettered_alone", alone, "dead_lettered_as_a_part", whole,
			"times", s.giveUps, "err", err)
	}
	clear(group)
	s.group = group[:0]
	s.resetGroup()
}
