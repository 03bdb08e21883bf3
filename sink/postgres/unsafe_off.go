//go:build !unsafe_positions

package postgres

// skipPositions is false in every normal build: see unsafe_on.go, which only
// a build with the unsafe_positions tag compiles, for the deliberately broken
// sink the exactly-once tests must catch.
const skipPositions = false

// keepPositions reports whether the sink stores and reads positions.
func (s *Sink) keepPositions() bool { return !skipPositions }
