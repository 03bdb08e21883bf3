//go:build !unsafe_rotate

package file

// unsafeIgnoreRotated is false in every normal build: see unsafe_on.go, which
// only a build with the unsafe_rotate tag compiles, for the deliberately
// broken source the crash test must catch.
const unsafeIgnoreRotated = false

// unsafeForgetMoved reports that the broken variant forgot the moved file k:
// never, in a normal build.
func unsafeForgetMoved(*scanRun, fileKey, entry) bool { return false }
