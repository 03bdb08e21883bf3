//go:build !unsafe_eos

package kafka

import "context"

// unsafeSplitTransaction does nothing in every normal build: see
// unsafe_eos_on.go, which only a build with the unsafe_eos tag compiles, for
// the deliberately broken commit the exactly-once tests must catch.
func (*sealedTxn) unsafeSplitTransaction(context.Context) error { return nil }
