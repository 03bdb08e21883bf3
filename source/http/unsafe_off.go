//go:build !unsafe_stable_names

package http

// stableNames is false in every normal build: see unsafe_on.go, which only
// a build with the unsafe_stable_names tag compiles, for the deliberately
// broken source the tests must catch.
const stableNames = false
