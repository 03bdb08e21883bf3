//go:build unsafe_positions

package iceberg

import (
	"context"
	"os"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/weir-etl/weir/connector"
)

// This file breaks the sink on purpose, for the exactly-once tests only: in
// a binary built with -tags unsafe_positions and run with
// WEIR_UNSAFE_POSITIONS=1, the positions are written outside the snapshot
// of the data, by a second commit after it (and, to widen the window a
// crash must hit, 300ms later). A crash between the two leaves rows in the
// table that the stored positions do not cover, and a replay appends them
// again. The tests build this variant and assert that they count the
// duplicates, so that they are known to be able to fail. No normal build
// contains it.
var unsafeSplit = os.Getenv("WEIR_UNSAFE_POSITIONS") == "1"

func keepPositions() bool { return true }

func dataCommitPositions(stored positionMap, ps []connector.GroupPosition) positionMap {
	if unsafeSplit {
		return stored
	}
	return stored.merged(ps)
}

func afterDataCommit(ctx context.Context, s *Sink, tbl *table.Table, stored positionMap) error {
	if !unsafeSplit {
		return nil
	}
	time.Sleep(300 * time.Millisecond)
	if err := s.step(stepPositions); err != nil {
		return err
	}
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return err
	}
	if err := tx.AddFiles(ctx, nil, iceberg.Properties{s.key: stored.merged(s.positions).encode()}, false); err != nil {
		return err
	}
	_, err := tx.Commit(ctx)
	return err
}
