//go:build !unsafe_eos

package s3

import "context"

// unsafePublishEarly does nothing in every normal build: see
// unsafe_eos_on.go, which only a build with the unsafe_eos tag compiles, for
// the deliberately broken commit the exactly-once suite must catch.
func (*Sink) unsafePublishEarly(context.Context, *manifest) {}
