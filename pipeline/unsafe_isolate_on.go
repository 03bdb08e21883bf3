//go:build unsafe_isolate

package pipeline

import "os"

// unsafeIsolate breaks isolate (isolate.go) on purpose, for the tests only:
// in a test binary built with -tags unsafe_isolate, WEIR_UNSAFE_ISOLATE
// selects a variant, and TestIsolateChecksCatchBrokenVariants asserts that
// the tests of isolate fail against each. No normal build contains it.
//
//   - whole: no isolation; the group goes to the dead letter whole, as before.
//   - nohold: a record dead-lettered alone is not held, so a replay skips it
//     and a PositionKeeper stores positions past it.
//   - deliver: a record dead-lettered alone is acknowledged at once, its dead
//     letter carrying no reference: the watermark passes it before its dead
//     letter is durable.
//   - unbounded: no limit on the parts that fail in a row.
var unsafeIsolate = os.Getenv("WEIR_UNSAFE_ISOLATE")
