package pipeline

import (
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// The commit policy: every decision the checkpointer goroutine takes, as a
// pure step in the style of etcd-io/raft's Ready. The goroutine
// (checkpointer.go) gathers a view of its Checkpointer and of the poller's
// state, calls step, and carries out what the returned ready says: commit
// these positions, rewind these partitions, halt, finish these revokes, the
// source is done. The policy has no goroutines, channels, locks, clocks or
// I/O; time enters in the view. testdata/policy/*.txt scripts drive it
// against a real Checkpointer (policy_test.go).

// policyConfig is what the policy needs of the Spec.
type policyConfig struct {
	commitInterval time.Duration
	// commitFailureTimeout ends the run when commits keep failing that
	// long; 0 never does.
	commitFailureTimeout time.Duration
	stallWarning         time.Duration
}

// Commit retries back off from commitRetryMin, doubling up to
// commitRetryMax (or the commit interval, if longer): a commit that keeps
// failing (a full disk, an unreachable broker) is neither retried in a tight
// loop nor forgotten.
const (
	commitRetryMin = time.Second
	commitRetryMax = 30 * time.Second
)

// commitPolicy is the policy's state for one source.
type commitPolicy struct {
	cfg   policyConfig
	parts []partPolicy // by partition id
	// revokes waiting for their partitions to drain or their deadline.
	revokes []pendingRevoke
	// Commit failures: how many in a row, since when, and when to try again.
	commitFails  int
	failingSince time.Time
	retryAt      time.Time
	finished     bool
	halted       bool
}

// partPolicy is the policy's view of one partition across its epochs.
type partPolicy struct {
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

type pendingRevoke struct {
	id       int
	ps       []checkpoint.Partition
	deadline time.Time
}

// policyView is what the policy looks at: the Checkpointer's states and
// committable positions after a drain, and the poller's state.
type policyView struct {
	now         time.Time
	states      []checkpoint.PartitionState
	committable []checkpoint.Commit
	// pending reports whether partition p has an issued batch the
	// watermark waits for (its oldest unresolved batch), and when it was
	// issued.
	pending  func(p checkpoint.Partition) (time.Time, bool)
	eof      bool  // the source reached its end of input
	inflight int64 // batches issued and not resolved
	stopping bool  // the run is shutting down: no more rewinds
	tick     bool  // the commit interval elapsed
}

// ready is what the checkpointer goroutine must do after a step.
type ready struct {
	// commit is to be handed to Source.Commit now; its result goes back
	// through commitDone.
	commit []checkpoint.Commit
	// rewinds are partitions to seek back to their watermarks.
	rewinds []rewindReq
	// halt, when set, is the batch of a partition blocked by a rejected
	// record: replay cannot fix it, the run stops.
	halt *checkpoint.BatchID
	// haltCommits is set when commits have failed longer than the timeout.
	haltCommits bool
	// revokesDone are revokes whose partitions drained or whose deadline
	// passed: commit what is committable of them, then forget them.
	revokesDone []pendingRevoke
	// stalled lists partitions whose stall just passed StallWarning.
	stalled []checkpoint.Partition
	// finished is set once, when a finite source is read, delivered and
	// committed.
	finished bool
	// wakeAt is the earliest time the policy wants a step even if nothing
	// happens: a revoke deadline or a commit retry. Zero for none.
	wakeAt time.Time
}

func newCommitPolicy(cfg policyConfig) *commitPolicy { return &commitPolicy{cfg: cfg} }

func (cp *commitPolicy) part(p checkpoint.Partition) *partPolicy {
	for int(p) >= len(cp.parts) {
		cp.parts = append(cp.parts, partPolicy{})
	}
	return &cp.parts[p]
}

// revoke starts waiting for ps to drain, until deadline.
func (cp *commitPolicy) revoke(id int, ps []checkpoint.Partition, deadline time.Time) {
	cp.revokes = append(cp.revokes, pendingRevoke{id: id, ps: ps, deadline: deadline})
}

// forget drops what the policy knows of p (it was revoked or lost): a later
// assignment of the same id starts afresh.
func (cp *commitPolicy) forget(p checkpoint.Partition) {
	if int(p) < len(cp.parts) {
		cp.parts[p] = partPolicy{}
	}
}

// commitDone records the outcome of the commit a ready asked for.
func (cp *commitPolicy) commitDone(ok bool, now time.Time) {
	if ok {
		cp.commitFails, cp.failingSince, cp.retryAt = 0, time.Time{}, time.Time{}
		return
	}
	if cp.commitFails == 0 {
		cp.failingSince = now
	}
	cp.commitFails++
	wait := commitRetryMin << min(cp.commitFails-1, 16)
	wait = min(wait, max(commitRetryMax, cp.cfg.commitInterval))
	cp.retryAt = now.Add(wait)
}

// commitFailing returns how many commits failed in a row and since when.
func (cp *commitPolicy) commitFailing() (int, time.Time) { return cp.commitFails, cp.failingSince }

// step takes the policy's decisions for the view v.
func (cp *commitPolicy) step(v *policyView) ready {
	var r ready
	// Revokes first: their partitions are forgotten before anything else
	// looks at them.
	keep := cp.revokes[:0]
	for _, w := range cp.revokes {
		drained := true
		for _, p := range w.ps {
			drained = drained && stateOf(v.states, p).Drained
		}
		if drained || !v.now.Before(w.deadline) {
			r.revokesDone = append(r.revokesDone, w)
			continue
		}
		keep = append(keep, w)
		r.wakeAt = earliest(r.wakeAt, w.deadline)
	}
	clear(cp.revokes[len(keep):])
	cp.revokes = keep

	blocked := false
	for _, ps := range v.states {
		pp := cp.part(ps.Partition)
		if !pp.known {
			// Not seen moving yet: a stall starts when its batch was issued.
			pp.known, pp.lastWatermark = true, ps.Watermark
		}
		cp.stallClock(pp, ps, v)
		if !ps.Blocked {
			continue
		}
		blocked = true
		if v.stopping || cp.halted || pp.rewound == ps.Epoch {
			continue
		}
		if ps.FailedStatus == checkpoint.Rejected {
			// Replaying a rejected record fails the same way: stop rather
			// than loop.
			id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.FailedSeq}
			r.halt = &id
			cp.halted = true
			continue
		}
		pp.rewound = ps.Epoch
		pp.rewinds++
		pp.replaying = true
		r.rewinds = append(r.rewinds, rewindReq{p: ps.Partition, epoch: ps.Epoch, pos: ps.Watermark})
	}
	for i := range cp.parts {
		if pp := &cp.parts[i]; pp.known && !pp.warned && !pp.stalledSince.IsZero() && v.now.Sub(pp.stalledSince) >= cp.cfg.stallWarning {
			pp.warned = true
			r.stalled = append(r.stalled, checkpoint.Partition(i))
		}
	}

	// Commits: every interval, and whenever a finished source has something
	// left to commit; never before a failed commit's retry time.
	if cp.commitFails > 0 && cp.cfg.commitFailureTimeout > 0 && v.now.Sub(cp.failingSince) >= cp.cfg.commitFailureTimeout {
		r.haltCommits = true
		return r
	}
	done := v.eof && !blocked && v.inflight == 0
	if len(v.committable) > 0 && (v.tick || done) {
		if v.now.Before(cp.retryAt) {
			r.wakeAt = earliest(r.wakeAt, cp.retryAt)
		} else {
			r.commit = v.committable
		}
	}
	if done && len(v.committable) == 0 && !cp.finished {
		cp.finished = true
		r.finished = true
	}
	return r
}

// stallClock moves p's stall clock: it runs while data is pending (or a
// rewind's replay is due) and the watermark does not move, from when the watermark last moved or the oldest
// pending batch was issued, whichever is later; it stops when the watermark
// moves or nothing is pending any more.
func (cp *commitPolicy) stallClock(pp *partPolicy, ps checkpoint.PartitionState, v *policyView) {
	var issued time.Time
	waiting := ps.Blocked
	if v.pending != nil {
		var pending bool
		issued, pending = v.pending(ps.Partition)
		waiting = waiting || pending
	}
	if ps.Watermark != pp.lastWatermark {
		pp.lastWatermark, pp.movedAt = ps.Watermark, v.now
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
		if since.IsZero() || since.After(v.now) {
			since = v.now
		}
		pp.stalledSince = since
	}
}

// stall returns how long p's watermark has been stalled (0 if it is not)
// and how many times p was rewound.
func (cp *commitPolicy) stall(p checkpoint.Partition, now time.Time) (time.Duration, int) {
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
