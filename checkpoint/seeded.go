package checkpoint

// seededBugID names a deliberately wrong variant of the ack path. The model
// checks (the modelcheck build tag) switch them on one at a time to show that
// the explorer finds each: a checker that passes the real code proves little
// unless it is also seen to fail code that is wrong in realistic ways. In a
// normal build seededBug is the constant false (seeded_off.go), so every
// variant is dead code the compiler removes.
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
