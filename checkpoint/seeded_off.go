//go:build !modelcheck

package checkpoint

// seededBug reports whether seeded bug b is switched on: never, outside the
// modelcheck build. It inlines to false, and the guarded variants vanish.
func seededBug(seededBugID) bool { return false }

// resolveLeakedHook is the leak backstop that slab.go registers.
func resolveLeakedHook(ns *nodeSlab) { resolveLeaked(ns) }
