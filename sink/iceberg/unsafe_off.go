//go:build !unsafe_positions

package iceberg

import (
	"context"

	"github.com/apache/iceberg-go/table"

	"github.com/weir-etl/weir/connector"
)

// keepPositions is true in every normal build: see unsafe_on.go, which only
// a build with the unsafe_positions tag compiles, for the deliberately
// broken sink the exactly-once tests must catch.
func keepPositions() bool { return true }

// dataCommitPositions are the positions the snapshot of a group's data
// carries: the stored ones advanced by the group's, in the same commit.
func dataCommitPositions(stored positionMap, ps []connector.GroupPosition) positionMap {
	return stored.merged(ps)
}

// afterDataCommit has nothing to do: the positions went with the data.
func afterDataCommit(context.Context, *Sink, *table.Table, positionMap) error { return nil }
