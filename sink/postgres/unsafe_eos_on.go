//go:build unsafe_eos

package postgres

import (
	"context"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// splitPositions breaks the sink on purpose, for the tests that must
// catch it only: with WEIR_UNSAFE_EOS=1 in a binary built with -tags
// unsafe_eos, a group's rows are committed in one transaction and its
// positions stored in a second one, outside the data's atomic step. A crash
// between the two leaves rows that no stored position covers, which the
// replay writes again. The exactly-once suite builds this variant and
// asserts that it counts the duplicates. No normal build contains it.
var splitPositions = os.Getenv("WEIR_UNSAFE_EOS") == "1"

// unsafePause, from WEIR_UNSAFE_EOS_PAUSE (a duration), is how long the
// broken variant waits between its two steps, so that a kill loop lands
// between them often.
var unsafePause, _ = time.ParseDuration(os.Getenv("WEIR_UNSAFE_EOS_PAUSE"))

// unsafeNote says on stderr that the broken variant is between its two
// steps, so that a kill loop can land there for sure.
func unsafeNote() { os.Stderr.WriteString(unsafeMarker + "\n") }

// unsafeMarker is the line unsafeNote writes.
const unsafeMarker = "unsafe_eos: postgres sink: between the data and its positions"

// unsafeSplitPositions commits the group's rows without their positions,
// which the next transaction stores, when the variant is on: deliberately
// wrong.
func (s *Sink) unsafeSplitPositions(ctx context.Context, conn *pgxpool.Conn) error {
	if !splitPositions {
		return nil
	}
	if err := s.exec(ctx, conn, "COMMIT"); err != nil {
		return s.wrap("committing", err)
	}
	s.at("rows-committed")
	unsafeNote()
	time.Sleep(unsafePause)
	if err := s.exec(ctx, conn, "BEGIN"); err != nil {
		return s.wrap("beginning the transaction", err)
	}
	return nil
}
