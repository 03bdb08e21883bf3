//go:build !unsafe_s3read

package s3

// unsafeDoneAtRead is the deliberately broken variant of unsafe_on.go, off
// in every normal build.
const unsafeDoneAtRead = false
