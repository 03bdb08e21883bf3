//go:build !unsafe_isolate

package pipeline

// unsafeIsolate is empty in every normal build: see unsafe_isolate_on.go,
// which only a build with the unsafe_isolate tag compiles, for the
// deliberately broken variants of isolate the tests must catch.
const unsafeIsolate = ""
