//go:build modelcheck

package checkpoint

import (
	"sync/atomic"

	"github.com/weir-etl/weir/internal/modelcheck"
)

// seeded is the seeded bug the model checks switched on, bugNone for the real
// code. Tests set it between explorations, never during one. It is atomic
// because the leak backstop's cleanup goroutine may read it between them.
var seeded atomic.Uint32

// seededBug reports whether seeded bug b is switched on.
func seededBug(b seededBugID) bool { return seeded.Load() == uint32(b) }

// resolveLeakedHook is the leak backstop that slab.go registers. The cleanup
// runs on a runtime goroutine the scheduler does not own, and resolving
// reaches scheduling points (acksync operations), so it waits until no
// exploration runs. Models never depend on it: their batches are all released,
// and a schedule does not wait for a garbage collection.
func resolveLeakedHook(ns *nodeSlab) {
	modelcheck.Outside(func() { resolveLeaked(ns) })
}

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

// SeedBug switches on the seeded bug called name (see seeded.go: "no-epoch-check",
// "advance-on-failed", …) so that tests of other packages, built with the
// modelcheck tag, can show that they catch it too. It returns the function
// that switches it off again. It exists only in the modelcheck build.
func SeedBug(name string) (restore func()) {
	b, ok := seededBugNames[name]
	if !ok {
		panic("checkpoint: SeedBug: no seeded bug named " + name)
	}
	seeded.Store(uint32(b))
	return func() { seeded.Store(uint32(bugNone)) }
}
