//go:build unsafe_rotate

package file

import "os"

// unsafeIgnoreRotated breaks the source on purpose, for test/crash only: with
// WEIR_UNSAFE_ROTATE=1 in a binary built with -tags unsafe_rotate, Open
// forgets the saved position of a file that rotation moved out of paths
// instead of finding it and reading it to its end, no copy of a truncated
// file is looked for, and no unknown file under rotated is read: what weir
// did before it followed rotation across restarts. The crash test builds this variant and asserts that its
// checker reports the lines lost, so that the test is known to be able to
// fail. No normal build contains it.
var unsafeIgnoreRotated = os.Getenv("WEIR_UNSAFE_ROTATE") == "1"

// unsafeForgetMoved forgets the moved file k instead of looking for it where
// rotation put it, when the variant is on: deliberately wrong.
func unsafeForgetMoved(sc *scanRun, k fileKey, e entry) bool {
	if !unsafeIgnoreRotated {
		return false
	}
	sc.change.forget = append(sc.change.forget, keyed{k: k, e: e})
	return true
}
