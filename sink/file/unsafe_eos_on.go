//go:build unsafe_eos

package file

import (
	"os"
	"time"
)

// publishEarly breaks exactly_once on purpose, for the tests that must
// catch it only: with WEIR_UNSAFE_EOS=1 in a binary built with -tags
// unsafe_eos, a group's chunks are renamed into view before the manifest
// entry that commits their positions is written, so the positions are
// stored outside the data's atomic step. A crash between the two leaves
// visible records that no stored position covers, which the replay writes
// again. The exactly-once suite and the kill loops build this variant and
// assert that they count the duplicates. No normal build contains it.
var publishEarly = os.Getenv("WEIR_UNSAFE_EOS") == "1"

// unsafePause, from WEIR_UNSAFE_EOS_PAUSE (a duration), is how long the
// broken variant waits between its two steps, so that a kill loop lands
// between them often.
var unsafePause, _ = time.ParseDuration(os.Getenv("WEIR_UNSAFE_EOS_PAUSE"))

// unsafeNote says on stderr that the broken variant is between its two
// steps, so that a kill loop can land there for sure.
func unsafeNote() { os.Stderr.WriteString(unsafeMarker + "\n") }

// unsafeMarker is the line unsafeNote writes.
const unsafeMarker = "unsafe_eos: file sink: between the data and its positions"

// unsafePublishEarly renames g's chunks into view before the commit when
// the variant is on: deliberately wrong.
func (e *eosState) unsafePublishEarly(g *group) error {
	if !publishEarly {
		return nil
	}
	for _, c := range g.chunks {
		if err := e.publishChunk(c); err != nil {
			return err
		}
	}
	e.at("published-early")
	unsafeNote()
	time.Sleep(unsafePause)
	return nil
}
