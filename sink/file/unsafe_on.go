//go:build unsafe_ack

package file

import (
	"os"
	"slices"
	"sync"
)

// unsafeDeferPublish breaks the sink on purpose, for test/crash only: with
// WEIR_UNSAFE_ACK=1 in a binary built with -tags unsafe_ack, a group's
// Persist (and so Flush) returns nil before the group's chunks are renamed
// into view, and renames them only at the next Persist. The runtime then acknowledges, and the source commits,
// records that a crash (or the end of the run) leaves invisible. The crash
// test builds this variant and asserts that its checker reports the loss, so
// that the test is known to be able to fail. No normal build contains it.
var unsafeDeferPublish = os.Getenv("WEIR_UNSAFE_ACK") == "1"

// held is each sink's chunks of its last group, which its next Persist
// publishes.
var (
	heldMu sync.Mutex
	held   = map[*Sink][]*chunk{}
)

// unsafeHoldBack returns the chunks a Persist renames into view. Deliberately
// wrong when the variant is on: the chunks of the group before, while this
// group's wait for the next Persist, and the group is reported durable
// without them.
func (s *Sink) unsafeHoldBack(chunks []*chunk) []*chunk {
	if !unsafeDeferPublish {
		return chunks
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	publish := held[s]
	held[s] = slices.Clone(chunks)
	return publish
}
