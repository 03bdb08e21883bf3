//go:build unsafe_commit_stall

package pipeline

import "os"

// unsafeBlindCheckpointer breaks the runtime on purpose, for the frozen
// broker test of test/kafka only: with WEIR_UNSAFE_COMMIT_STALL=1 in a binary
// built with -tags unsafe_commit_stall, commits get no deadline of their own
// and nothing reads what the checkpointer goroutine waits on (stalls.go):
// /readyz, /debug/stalls and the log see a commit that does not answer only
// through the snapshot that goroutine refreshes, as before commits were
// watched. The test builds this variant and asserts that it misses the
// stall, so that the test is known to be able to fail. No normal build
// contains it.
var unsafeBlindCheckpointer = os.Getenv("WEIR_UNSAFE_COMMIT_STALL") == "1"
