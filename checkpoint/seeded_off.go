//go:build !modelcheck

package checkpoint

// Outside the modelcheck build there are no seeded bugs (seeded_on.go): each
// hook reports that it ran no variant. They inline to false, so the branches
// that call them vanish and the real code is all that is compiled.

func seededRelease(*handle, AckStatus, int64) bool             { return false }
func seededPush(*queue, *node) bool                            { return false }
func seededApply(*Checkpointer, AckMsg) (ResolveOutcome, bool) { return 0, false }
func seededAdvance(*PartitionTracker, uint64) bool             { return false }
func seededMerge(*AckSet, *AckSet) bool                        { return false }

// resolveLeakedHook is the leak backstop that slab.go registers.
func resolveLeakedHook(ns *nodeSlab) { resolveLeaked(ns) }
