//go:build !unsafe_s3

package s3

// unsafeForgetPositions is the deliberately broken variant of unsafe_on.go,
// off in every normal build.
const unsafeForgetPositions = false
