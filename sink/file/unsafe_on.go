//go:build unsafe_ack

package file

import "os"

// unsafeDeferPublish breaks the sink on purpose, for test/crash only: with
// WEIR_UNSAFE_ACK=1 in a binary built with -tags unsafe_ack, a group's
// Persist (and so Flush) returns nil before the group's chunks are renamed
// into view, and renames them only at the next Persist. The runtime then acknowledges, and the source commits,
// records that a crash (or the end of the run) leaves invisible. The crash
// test builds this variant and asserts that its checker reports the loss, so
// that the test is known to be able to fail. No normal build contains it.
var unsafeDeferPublish = os.Getenv("WEIR_UNSAFE_ACK") == "1"
