//go:build !unsafe_commit_stall

package pipeline

// unsafeBlindCheckpointer is false in every normal build: see
// unsafe_stall_on.go, which only a build with the unsafe_commit_stall tag
// compiles, for the deliberately broken runtime the frozen broker test must
// catch.
const unsafeBlindCheckpointer = false
