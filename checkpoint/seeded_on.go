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
