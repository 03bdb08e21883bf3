//go:build !unsafe_eos

package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// unsafeSplitPositions does nothing in every normal build: see
// unsafe_eos_on.go, which only a build with the unsafe_eos tag compiles, for
// the deliberately broken transaction the exactly-once suite must catch.
func (*Sink) unsafeSplitPositions(context.Context, *pgxpool.Conn) error { return nil }
