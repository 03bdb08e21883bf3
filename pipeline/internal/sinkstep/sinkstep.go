// Package sinkstep holds the decisions a sink goroutine takes when a write
// fails, as pure steps in the style of the commit policy
// (pipeline/internal/policy): each is a function of what the goroutine knows
// (a view) and returns what to do. The goroutine carries it out: the
// writes, flushes, aborts, waits, dead letters and acknowledgements are its
// own, and no step touches a record.
//
//   - Retry: after a failed attempt, write the group in parts (too large),
//     wait and try again, or give up.
//   - GiveUp: once the retries ran out, which failure policy applies (the
//     sink's on_failure, or on_give_up once the sink has failed for
//     give_up_after), whether to look for the failing records (Isolation)
//     and whether to log.
//   - Isolation: under dead_letter, which part of the group to write next,
//     which record goes to the dead letter alone, and when to stop.
package sinkstep

import (
	"math/bits"
	"time"
)

// Policy is a failure policy: what happens to records whose write failed
// for good.
type Policy uint8

// The failure policies (pipeline.FailurePolicy).
const (
	Rewind Policy = iota
	Halt
	DeadLetter
)

// Settings are the sink's retry settings (pipeline.RetrySettings).
type Settings struct {
	MaxAttempts int
	MaxElapsed  time.Duration
	MaxBackoff  time.Duration
}

// RetryView is what the sink goroutine knows after an attempt to write and
// flush the group failed.
type RetryView struct {
	Attempt  int           // attempts so far, the failed one included (1 for the first)
	Elapsed  time.Duration // since the retry began
	Backoff  time.Duration // the current backoff step
	TooLarge bool          // the error says the group was too large to write at once
	Records  int           // records in the group
	Split    bool          // the group was written in parts already, in this retry
	Stopping bool          // the sink's context is done
	// Rand is a random number, for the jitter: the step itself draws
	// nothing.
	Rand uint64
}

// RetryReady is what to do after a failed attempt: exactly one of
// WriteInParts, GiveUp, or a wait of Wait before the next attempt.
type RetryReady struct {
	// WriteInParts: write the group again in smaller parts, then step again
	// with Split set if that failed too.
	WriteInParts bool
	// GiveUp: the retries ran out; GiveUp decides what happens next.
	GiveUp bool
	// Wait is the backoff before writing the group again, with full jitter
	// between half and all of the step; NextBackoff the step after it.
	Wait, NextBackoff time.Duration
}

// Retry decides what follows a failed attempt. A group too large for what
// is left (a full disk, a broker's size limit) is written in parts once per
// retry; then the attempt waits its backoff, unless that would pass
// MaxAttempts or MaxElapsed, or the sink is stopping.
func Retry(s Settings, v RetryView) RetryReady {
	if v.TooLarge && v.Records > 1 && !v.Split {
		return RetryReady{WriteInParts: true}
	}
	half := max(v.Backoff/2, 0)
	wait := half + time.Duration(v.Rand%uint64(half+1))
	if v.Attempt >= s.MaxAttempts || v.Elapsed+wait > s.MaxElapsed || v.Stopping {
		return RetryReady{GiveUp: true}
	}
	return RetryReady{Wait: wait, NextBackoff: min(v.Backoff*2, s.MaxBackoff)}
}

// GiveUpView is what the sink goroutine knows when the retries of a group
// ran out.
type GiveUpView struct {
	OnFailure Policy
	// GiveUpAfter is the sink's give_up_after (0: never), OnGiveUp the
	// policy that replaces Rewind past it (Halt or DeadLetter).
	GiveUpAfter time.Duration
	OnGiveUp    Policy
	FailingFor  time.Duration // how long the sink has failed without a success
	Records     int           // records in the group
	Stopping    bool          // the sink's context is done
	GiveUps     int           // groups given up on before this one, since the last success
	// NoIsolation keeps a dead-lettered group whole (a broken variant of
	// the tests).
	NoIsolation bool
}

// GiveUpReady is what happens to a group whose retries ran out.
type GiveUpReady struct {
	Policy Policy // the policy that applies
	// GaveUp: the sink has failed for GiveUpAfter, and Policy is its
	// OnGiveUp in place of Rewind.
	GaveUp bool
	// Isolate: look for the records that fail (Isolation) rather than
	// apply Policy to the whole group.
	Isolate bool
	Log     bool // log it: the first give-up, then at doubling counts, and every switch of policy
	GiveUps int  // the count to keep, this one included
}

// GiveUp decides which policy applies to a group whose retries ran out.
func GiveUp(v GiveUpView) GiveUpReady {
	r := GiveUpReady{Policy: v.OnFailure, GiveUps: v.GiveUps + 1}
	if v.OnFailure == Rewind && v.GiveUpAfter > 0 && v.FailingFor >= v.GiveUpAfter {
		r.Policy, r.GaveUp = Halt, true
		if v.OnGiveUp == DeadLetter {
			r.Policy = DeadLetter
		}
	}
	r.Log = r.GiveUps&(r.GiveUps-1) == 0 || r.Policy != v.OnFailure
	r.Isolate = r.Policy == DeadLetter && v.Records > 1 && !v.Stopping && !v.NoIsolation
	return r
}

// Action is what Isolation asks for next.
type Action uint8

// The actions of an Isolation.
const (
	// Try: write and flush the first N records left in the group, then
	// step again with the outcome.
	Try Action = iota
	// DeadLetterOne: the first record left failed alone; send it to the
	// dead letter alone (and hold it) and step again.
	DeadLetterOne
	// Stop: isolation is over. The records left (if any) go to the dead
	// letter as they are.
	Stop
)

func (a Action) String() string {
	switch a {
	case Try:
		return "try"
	case DeadLetterOne:
		return "dead-letter one"
	}
	return "stop"
}

// IsoView is what the sink goroutine knows at a step of an isolation.
type IsoView struct {
	Left     int  // records left in the group (rejected ones are gone)
	Stopping bool // the sink's context is done
	// The outcome of the Try the last step asked for: whether it was
	// written and flushed, and how many of its records it kept (the others
	// were rejected and resolved alone).
	OK   bool
	Kept int
}

// IsoReady is what to do next.
type IsoReady struct {
	Action Action
	N      int // records to try (Try)
}

// isoPart is a part of the group waiting: its length, whether it is the
// first half of a part that failed, and whether it is known to fail (its
// first half was written).
type isoPart struct {
	n      int
	first  bool
	failed bool
}

// Isolation finds the records of a group that fail alone, by halving: the
// group is written again in halves, and halves of the halves that fail, in
// order, down to single records. A part that is written after its parent
// failed marks its other half as failing, which is split without being
// tried. After 2·log2(n) parts of more than one record failed in a row,
// nothing written in between, it stops: the sink fails whatever it is
// given.
type Isolation struct {
	todo    []isoPart
	limit   int
	streak  int
	bounded bool
	tried   *isoPart // the part of the Try in progress
	last    isoPart
}

// NewIsolation starts the isolation of a group of n records. bounded false
// drops the bound on failed parts in a row (a broken variant of the tests).
func NewIsolation(n int, bounded bool) *Isolation {
	iso := &Isolation{limit: 2 * bits.Len(uint(n-1)), bounded: bounded}
	iso.split(n)
	return iso
}

// Step takes the outcome of the last Try (if the last step asked for one)
// and returns what to do next.
func (iso *Isolation) Step(v IsoView) IsoReady {
	if p := iso.tried; p != nil {
		iso.tried = nil
		switch {
		case v.OK:
			iso.streak = 0
			if p.first {
				// The other half, queued below it, holds what failed.
				iso.todo[len(iso.todo)-1].failed = true
			}
		case v.Kept == 0:
			// Every record of it was rejected, and resolved alone.
		case v.Kept == 1:
			return IsoReady{Action: DeadLetterOne}
		default:
			if iso.streak++; iso.streak > iso.limit && iso.bounded {
				return IsoReady{Action: Stop}
			}
			iso.split(v.Kept)
		}
	}
	for len(iso.todo) > 0 {
		p := iso.todo[len(iso.todo)-1]
		iso.todo = iso.todo[:len(iso.todo)-1]
		p.n = min(p.n, v.Left) // records rejected on the way are gone
		if p.n == 0 {
			continue
		}
		if p.failed {
			// Known to fail: split without trying (a single record's
			// halves are none and itself, which is tried).
			iso.split(p.n)
			continue
		}
		if v.Stopping {
			break
		}
		iso.last = p
		iso.tried = &iso.last
		return IsoReady{Action: Try, N: p.n}
	}
	return IsoReady{Action: Stop}
}

// split queues the two halves of a part of n records, the first on top.
// The second half's length only bounds it: Step takes what is left of the
// group, min'ed with it.
func (iso *Isolation) split(n int) {
	h := (n + 1) / 2
	iso.todo = append(iso.todo, isoPart{n: n - h}, isoPart{n: h, first: true})
}
