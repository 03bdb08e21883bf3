//go:build !unsafe_ack

package file

// unsafeDeferPublish is false in every normal build: see unsafe_on.go, which
// only a build with the unsafe_ack tag compiles, for the deliberately broken
// Flush the crash test must catch.
const unsafeDeferPublish = false
