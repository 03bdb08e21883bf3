// Package policy is the commit policy of the pipeline's checkpointer
// goroutine: every decision it takes, as a pure step.
package policy

import (
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// The commit policy: every decision the checkpointer goroutine takes, as a
// pure step in the style of etcd-io/raft's Ready. The goroutine
// (checkpointer.go) gathers a view of its Checkpointer and of the poller's
// state, calls Step, and carries out what the returned Ready says: commit
// these positions, rewind these partitions, halt, finish these revokes, the
// source is done. The policy has no goroutines, channels, locks, clocks or
// I/O; time enters in the view. testdata/scripts/*.txt drive it
// against a real Checkpointer (policy_test.go).

// Config is what the policy needs of the pipeline's checkpoint settings.
type Config struct {
	CommitInterval time.Duration
	// CommitFailureTimeout ends the run when commits keep failing that
	// long; 0 never does.
	CommitFailureTimeout time.Duration
	StallWarning         time.Duration
	// Prompt commits whenever the watermark moved, not only on the commit
	// interval's tick: for a source whose commit somebody waits on (an HTTP
	// source answers a request once its records are committed; see
	// connector.PromptCommitter). Failed commits still back off.
	Prompt bool
}

// Commit retries back off from commitRetryMin, doubling up to
// commitRetryMax (or the commit interval, if longer): a commit that keeps
// failing (a full disk, an unreachable broker) is neither retried in a tight
// loop nor forgotten.
const (
	commitRetryMin = time.Second
	commitRetryMax = 30 * time.Second
)

// Policy is the policy's state for one source.
type Policy struct {
	cfg   Config
	parts []partState // by partition id
	// revokes waiting for their partitions to drain or their deadline.
	revokes []Revoke
	// Commit failures: how many in a row, since when, and when to try again.
	commitFails  int
	failingSince time.Time
	retryAt      time.Time
	finished     bool
	halted       bool
}

// partState is the policy's view of one partition across its epochs.
type partState struct {
	known   bool
	rewound checkpoint.Epoch // a rewind was asked for this epoch
	rewinds int              // rewinds so far
	// The stall clock: since when the watermark has not moved while the
	// partition had data pending (zero when nothing is pending). Rewinds
	// and new epochs do not reset it; only progress does.
	lastWatermark checkpoint.Position
	movedAt       time.Time // when the watermark was seen moving last
	stalledSince  time.Time
	warned        bool // the stall warning was given for this stall
	// replaying is set from a rewind until the watermark moves: the
	// partition waits for its replay even before the new epoch's first
	// batch is issued (the new epoch reaches the checkpointer first).
	replaying bool
}

// Revoke is a Host.Revoke waiting for its partitions to drain.
type Revoke struct {
	ID         int
	Partitions []checkpoint.Partition
	Deadline   time.Time
}

// Rewind asks the poller to seek Partition back to Position, its
// watermark, and start a new epoch there, unless Epoch ended meanwhile.
type Rewind struct {
	Partition checkpoint.Partition
	Epoch     checkpoint.Epoch
	Position  checkpoint.Position
}

// View is what the policy looks at: the Checkpointer's states and
// committable positions after a drain, and the poller's state.
type View struct {
	Now         time.Time
	States      []checkpoint.PartitionState
	Committable []checkpoint.Commit
	// Pending says, for each of States (same index), whether the partition
	// has an issued batch the watermark waits for (its oldest unresolved
	// batch), and when it was issued. Shorter than States (nil, say): the
	// partitions past its end have nothing pending.
	Pending  []Pending
	EOF      bool  // the source reached its end of input
	InFlight int64 // batches issued and not resolved
	Stopping bool  // the run is shutting down: no more rewinds
	Tick     bool  // the commit interval elapsed
}

// Ready is what the checkpointer goroutine must do after a step.
type Ready struct {
	// Commit is to be handed to Source.Commit now; its result goes back
	// through CommitDone.
	Commit []checkpoint.Commit
	// Rewinds are partitions to seek back to their watermarks.
	Rewinds []Rewind
	// Halt, when set, is the batch of a partition blocked by a rejected
	// record: replay cannot fix it, the run stops.
	Halt *checkpoint.BatchID
	// HaltCommits is set when commits have failed longer than the timeout.
	HaltCommits bool
	// RevokesDone are revokes whose partitions drained or whose deadline
	// passed: commit what is committable of them, then forget them.
	RevokesDone []Revoke
	// Stalled lists partitions whose stall just passed StallWarning.
	Stalled []checkpoint.Partition
	// Finished is set once, when a finite source is read, delivered and
	// committed.
	Finished bool
	// WakeAt is the earliest time the policy wants a step even if nothing
	// happens: a revoke deadline, a commit retry, or a stall passing
	// StallWarning. Zero for none.
	WakeAt time.Time
}

// New returns the policy of one source.
func New(cfg Config) *Policy { return &Policy{cfg: cfg} }

func (cp *Policy) part(p checkpoint.Partition) *partState {
	for int(p) >= len(cp.parts) {
		cp.parts = append(cp.parts, partState{})
	}
	return &cp.parts[p]
}

// AddRevoke starts waiting for ps to drain, until deadline.
func (cp *Policy) AddRevoke(id int, ps []checkpoint.Partition, deadline time.Time) {
	cp.revokes = append(cp.revokes, Revoke{ID: id, Partitions: ps, Deadline: deadline})
}

// Forget drops what the policy knows of p (it was revoked or lost): a later
// assignment of the same id starts afresh.
func (cp *Policy) Forget(p checkpoint.Partition) {
	if int(p) < len(cp.parts) {
		cp.parts[p] = partState{}
	}
}

// CommitDone records the outcome of the commit a Ready asked for.
func (cp *Policy) CommitDone(ok bool, now time.Time) {
	if ok {
		cp.commitFails, cp.failingSince, cp.retryAt = 0, time.Time{}, time.Time{}
		return
	}
	if cp.commitFails == 0 {
		cp.failingSince = now
	}
	cp.commitFails++
	wait := commitRetryMin << min(cp.commitFails-1, 16)
	wait = min(wait, max(commitRetryMax, cp.cfg.CommitInterval))
	cp.retryAt = now.Add(wait)
}

// CommitFailing returns how many commits failed in a row and since when.
func (cp *Policy) CommitFailing() (int, time.Time) { return cp.commitFails, cp.failingSince }

// Step takes the policy's decisions for the view v.
func (cp *Policy) Step(v *View) Ready {
	var r Ready
	// Revokes first: their partitions are forgotten before anything else
	// looks at them.
	keep := cp.revokes[:0]
	for _, w := range cp.revokes {
		drained := true
		for _, p := range w.Partitions {
			drained = drained && stateOf(v.States, p).Drained
		}
		if drained || !v.Now.Before(w.Deadline) {
			r.RevokesDone = append(r.RevokesDone, w)
			continue
		}
		keep = append(keep, w)
		r.WakeAt = earliest(r.WakeAt, w.Deadline)
	}
	clear(cp.revokes[len(keep):])
	cp.revokes = keep

	blocked := false
	for i, ps := range v.States {
		pp := cp.part(ps.Partition)
		if !pp.known {
			// Not seen moving yet: a stall starts when its batch was issued.
			pp.known, pp.lastWatermark = true, ps.Watermark
		}
		var pend Pending
		if i < len(v.Pending) {
			pend = v.Pending[i]
		}
		cp.stallClock(pp, ps, pend, v.Now)
		if !ps.Blocked {
			continue
		}
		blocked = true
		if v.Stopping || cp.halted || pp.rewound == ps.Epoch {
			continue
		}
		if ps.FailedStatus == checkpoint.Rejected {
			// Replaying a rejected record fails the same way: stop rather
			// than loop.
			id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.FailedSeq}
			r.Halt = &id
			cp.halted = true
			continue
		}
		pp.rewound = ps.Epoch
		pp.rewinds++
		pp.replaying = true
		r.Rewinds = append(r.Rewinds, Rewind{Partition: ps.Partition, Epoch: ps.Epoch, Position: ps.Watermark})
	}
	// A stall is reported when it passes StallWarning, not at the next
	// step after: the policy asks to be woken then.
	for i := range cp.parts {
		pp := &cp.parts[i]
		if !pp.known || pp.warned || pp.stalledSince.IsZero() {
			continue
		}
		if at := pp.stalledSince.Add(cp.cfg.StallWarning); v.Now.Before(at) {
			r.WakeAt = earliest(r.WakeAt, at)
			continue
		}
		pp.warned = true
		r.Stalled = append(r.Stalled, checkpoint.Partition(i))
	}

	// Commits: every interval, whenever a finished source has something
	// left to commit, and at every step for a prompt source; never before a
	// failed commit's retry time.
	if cp.commitFails > 0 && cp.cfg.CommitFailureTimeout > 0 && v.Now.Sub(cp.failingSince) >= cp.cfg.CommitFailureTimeout {
		r.HaltCommits = true
		return r
	}
	done := v.EOF && !blocked && v.InFlight == 0
	if len(v.Committable) > 0 && (v.Tick || done || cp.cfg.Prompt) {
		if v.Now.Before(cp.retryAt) {
			r.WakeAt = earliest(r.WakeAt, cp.retryAt)
		} else {
			r.Commit = v.Committable
		}
	}
	if done && len(v.Committable) == 0 && !cp.finished {
		cp.finished = true
		r.Finished = true
	}
	return r
}

// Pending is whether a partition's oldest unresolved batch has been issued,
// and when.
type Pending struct {
	Issued  time.Time
	Pending bool
}

// stallClock moves p's stall clock: it runs while data is pending (or a
// rewind's replay is due) and the watermark does not move, from when the
// watermark last moved or the oldest pending batch was issued, whichever is
// later; it stops when the watermark moves or nothing is pending any more.
func (cp *Policy) stallClock(pp *partState, ps checkpoint.PartitionState, pend Pending, now time.Time) {
	issued := pend.Issued
	waiting := ps.Blocked || pend.Pending
	if ps.Watermark != pp.lastWatermark {
		pp.lastWatermark, pp.movedAt = ps.Watermark, now
		pp.stalledSince, pp.warned = time.Time{}, false
		pp.replaying = false
	}
	waiting = waiting || pp.replaying
	switch {
	case !waiting:
		pp.stalledSince, pp.warned = time.Time{}, false
	case pp.stalledSince.IsZero():
		since := pp.movedAt
		if issued.After(since) || issued.IsZero() && ps.Blocked {
			since = issued
		}
		if since.IsZero() || since.After(now) {
			since = now
		}
		pp.stalledSince = since
	}
}

// Stall returns how long p's watermark has been stalled (0 if it is not)
// and how many times p was rewound.
func (cp *Policy) Stall(p checkpoint.Partition, now time.Time) (time.Duration, int) {
	if int(p) >= len(cp.parts) {
		return 0, 0
	}
	pp := &cp.parts[p]
	if pp.stalledSince.IsZero() {
		return 0, pp.rewinds
	}
	return now.Sub(pp.stalledSince), pp.rewinds
}

func stateOf(states []checkpoint.PartitionState, p checkpoint.Partition) checkpoint.PartitionState {
	i := slices.IndexFunc(states, func(s checkpoint.PartitionState) bool { return s.Partition == p })
	if i < 0 {
		// Not assigned any more (lost, forgotten): nothing left to wait for.
		return checkpoint.PartitionState{Partition: p, Drained: true}
	}
	return states[i]
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// Replaying reports whether p was rewound and its watermark has not moved
// since.
func (cp *Policy) Replaying(p checkpoint.Partition) bool {
	return int(p) < len(cp.parts) && cp.parts[p].replaying
}
