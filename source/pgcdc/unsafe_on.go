//go:build unsafe_confirm

package pgcdc

import "os"

// unsafeConfirmReceived breaks the source on purpose, for test/cdc only: with
// WEIR_UNSAFE_CONFIRM=1 in a binary built with -tags unsafe_confirm, status
// updates confirm the end of the last transaction received from the server
// instead of the committed watermark, the mistake of confirming what was read
// rather than what is durable. The server then forgets changes that a crash
// leaves undelivered. The kill loop test builds this variant and asserts that
// its checker reports the loss, so that the test is known to be able to fail.
// No normal build contains it.
var unsafeConfirmReceived = os.Getenv("WEIR_UNSAFE_CONFIRM") == "1"

// unsafeConfirm returns the flush position of a status update. Deliberately
// wrong when the variant is on: what was received, committed or not.
func (st *stream) unsafeConfirm(committed uint64) uint64 {
	if unsafeConfirmReceived {
		return max(st.received.Load(), committed)
	}
	return committed
}
