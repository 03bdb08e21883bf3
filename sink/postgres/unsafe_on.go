//go:build unsafe_positions

package postgres

import "os"

// skipPositions breaks the sink on purpose, for the exactly-once tests only:
// with WEIR_UNSAFE_POSITIONS=1 in a binary built with -tags
// unsafe_positions, the sink neither stores positions nor reads them, so it
// is at-least-once: every record replayed after a crash or a rewind is
// written again. The tests build this variant and assert that they count
// the duplicates, so that they are known to be able to fail. No normal build
// contains it.
var skipPositions = os.Getenv("WEIR_UNSAFE_POSITIONS") == "1"

// keepPositions reports whether the sink stores and reads positions.
func (s *Sink) keepPositions() bool { return !skipPositions }
