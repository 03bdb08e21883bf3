//go:build !unsafe_early_answer

package http

// earlyAnswer is false in every normal build: see early_on.go, which only a
// build with the unsafe_early_answer tag compiles, for the deliberately
// broken source the kill loop must catch.
const earlyAnswer = false
