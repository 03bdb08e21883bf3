//go:build modelcheck

package checkpoint

import (
	"fmt"
	"sync/atomic"

	"github.com/weir-etl/weir/internal/modelcheck"
)

// Seeded bugs are deliberately wrong variants of the ack path. The model checks
// switch them on one at a time to show that the explorer finds each: a checker
// that passes the real code proves little unless it is also seen to fail code
// that is wrong in realistic ways.
//
// The variants live here, in the modelcheck build only. The real functions
// call a hook first (seededRelease, seededPush, …) that runs the variant when
// its bug is on and reports whether it did; with no bug on, the real code runs,
// so the models check exactly what a normal build compiles. In a normal build
// the hooks are constant false (seeded_off.go) and vanish.

// seededBugID names a seeded bug.
type seededBugID uint8

const (
	bugNone             seededBugID = iota
	bugDecLoadStore                 // release decrements with a load and a store, not one Add
	bugOrAfterDec                   // release merges its status after its decrement
	bugStatusOverwrite              // release stores its status instead of merging it
	bugSignalBeforeLink             // push signals the wake before linking the node
	bugNoEpochCheck                 // Apply skips the stale-epoch check
	bugAdvanceOnFailed              // the tracker's watermark passes failed batches
	bugMergeDropsRefs               // AckSet.Merge overwrites a run's count instead of adding
	numSeededBugs
)

// seededBugNames names the seeded bugs for SeedBug.
var seededBugNames = map[string]seededBugID{
	"dec-load-store":     bugDecLoadStore,
	"or-after-dec":       bugOrAfterDec,
	"status-overwrite":   bugStatusOverwrite,
	"signal-before-link": bugSignalBeforeLink,
	"no-epoch-check":     bugNoEpochCheck,
	"advance-on-failed":  bugAdvanceOnFailed,
	"merge-drops-refs":   bugMergeDropsRefs,
}

// seeded is the seeded bug switched on, bugNone for the real code. Tests set
// it between explorations, never during one. It is atomic because the leak
// backstop's cleanup goroutine may read it between them; it is a plain
// sync/atomic value, not a scheduling point, so a seeded bug changes no
// schedule but its own.
var seeded atomic.Uint32

// SeedBug switches on the seeded bug called name ("no-epoch-check",
// "advance-on-failed", … see seededBugNames) so that tests of other packages,
// built with the modelcheck tag, can show that they catch it too. It returns
// the function that switches it off again. It exists only in the modelcheck
// build.
func SeedBug(name string) (restore func()) {
	b, ok := seededBugNames[name]
	if !ok {
		panic("checkpoint: SeedBug: no seeded bug named " + name)
	}
	seeded.Store(uint32(b))
	return func() { seeded.Store(uint32(bugNone)) }
}

func seededBug() seededBugID { return seededBugID(seeded.Load()) }

// seededRelease runs handle.release with one of its seeded bugs.
func seededRelease(h *handle, s AckStatus, n int64) bool {
	b := seededBug()
	if b != bugDecLoadStore && b != bugOrAfterDec && b != bugStatusOverwrite {
		return false
	}
	m := s.mask()
	switch {
	case m == 0 || b == bugOrAfterDec:
	case b == bugStatusOverwrite:
		h.status.Store(m) // a concurrent worse status is lost
	default:
		h.status.Or(m)
	}
	var left int64
	if b == bugDecLoadStore {
		left = h.refs.Load() - n // a concurrent release between the two is lost
		h.refs.Store(left)
	} else {
		left = h.refs.Add(-n)
	}
	if m != 0 && b == bugOrAfterDec {
		h.status.Or(m) // too late: the last release may have read the status
	}
	if left > 0 {
		return true
	}
	if left < 0 {
		panic(fmt.Sprintf("checkpoint: batch %v released more times than it was cloned", h.n.id))
	}
	nd := h.n
	nd.state.Store(stateResolved + uint32(statusOfMask(h.status.Load())))
	nd.q.push(nd)
	return true
}

// seededPush runs queue.push signalling before it links: a consumer woken in
// between finds nothing, parks, and the signal is spent.
func seededPush(q *queue, n *node) bool {
	if seededBug() != bugSignalBeforeLink {
		return false
	}
	q.wake.Signal()
	q.link(n)
	return true
}

// seededApply runs Checkpointer.Apply without the stale-epoch check.
func seededApply(c *Checkpointer, m AckMsg) (ResolveOutcome, bool) {
	if seededBug() != bugNoEpochCheck {
		return 0, false
	}
	p := m.ID.Partition
	if int(p) >= len(c.parts) || m.ID.Epoch == 0 || m.ID.Epoch > c.parts[p].lastEpoch {
		return Impossible, true
	}
	cp := &c.parts[p]
	if cp.mode == modeUnassigned {
		return Stale, true
	}
	return cp.t.Resolve(m.ID.Seq, m.Position, m.Status), true
}

// seededAdvance runs PartitionTracker.advance passing failed batches: it
// stops only at one that is unresolved.
func seededAdvance(t *PartitionTracker, mask uint64) bool {
	if seededBug() != bugAdvanceOnFailed {
		return false
	}
	for t.buffered > 0 {
		sl := &t.ring[t.next&mask]
		if sl.st == 0 {
			break
		}
		t.watermark = max(t.watermark, sl.pos)
		sl.st = 0
		t.next++
		t.buffered--
	}
	return true
}

// seededMerge runs AckSet.Merge overwriting a run's count instead of adding
// to it: the references it drops are never released.
func seededMerge(s, o *AckSet) bool {
	if seededBug() != bugMergeDropsRefs {
		return false
	}
	for _, e := range o.entries {
		if k := len(s.entries); k > 0 && s.entries[k-1].h == e.h {
			s.entries[k-1].n = e.n
			continue
		}
		s.entries = append(s.entries, e)
	}
	o.reset()
	return true
}

// resolveLeakedHook is the leak backstop that slab.go registers. The cleanup
// runs on a runtime goroutine the scheduler does not own, and resolving
// reaches scheduling points (acksync operations), so it waits until no
// exploration runs. Models never depend on it: their batches are all released,
// and a schedule does not wait for a garbage collection.
func resolveLeakedHook(ns *nodeSlab) {
	modelcheck.Outside(func() { resolveLeaked(ns) })
}
