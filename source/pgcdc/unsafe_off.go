//go:build !unsafe_confirm

package pgcdc

// unsafeConfirmReceived is false in every normal build: see unsafe_on.go,
// which only a build with the unsafe_confirm tag compiles, for the
// deliberately broken confirmation the kill loop test must catch.
const unsafeConfirmReceived = false

// unsafeConfirm returns the flush position of a status update: in every
// normal build, the committed watermark it is given.
func (*stream) unsafeConfirm(committed uint64) uint64 { return committed }
