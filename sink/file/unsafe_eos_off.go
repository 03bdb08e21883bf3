//go:build !unsafe_eos

package file

// unsafePublishEarly does nothing in every normal build: see
// unsafe_eos_on.go, which only a build with the unsafe_eos tag compiles, for
// the deliberately broken commit the exactly-once tests must catch.
func (*eosState) unsafePublishEarly(*group) error { return nil }
