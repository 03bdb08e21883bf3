//go:build integration

package pgcdc_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/pgcdctest"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/source/pgcdc"
)

// The shared source suite over the slot's partition: 20000 one-row
// transactions committed after the slot was created, read in batches of up
// to five changes. Every instance resumes from the slot's confirmed position.
// The suite's runtime subtest reads ahead of what it commits, and every later
// subtest still needs five batches: the input is far larger than it reads.
func TestConformanceStream(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE conf (id int8 PRIMARY KEY, v text)`)
	db.Exec(`CREATE PUBLICATION weir_test FOR TABLE conf`)
	db.Exec(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, db.Name)
	db.Exec(`SET synchronous_commit = off`)
	db.Exec(`DO $$ BEGIN FOR i IN 1..20000 LOOP INSERT INTO conf VALUES (i, 'v'); COMMIT; END LOOP; END $$`)
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Source {
			cfg := config(t, db)
			cfg.Snapshot = "never"
			cfg.CreatePublication = false
			cfg.MaxBatchRecords = 5
			s, err := pgcdc.New("in", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			return s
		},
	})
}

// The shared source suite over a snapshot table's partition: the table has
// 20000 rows, read in chunks of five. Every instance resumes the snapshot
// from the position the earlier ones committed (kept in data_dir).
func TestConformanceSnapshot(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE conf (id int8 PRIMARY KEY, v text)`)
	db.Exec(`INSERT INTO conf SELECT g, 'v' || g FROM generate_series(1, 20000) g`)
	dir := t.TempDir()
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Source {
			cfg := config(t, db, "conf")
			cfg.DataDir = dir
			cfg.SnapshotChunkRows = 5
			s, err := pgcdc.New("in", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			return s
		},
	})
}

// host is a connector.Host that only numbers partitions, for tests that
// poll the source by hand.
type host struct {
	names []string
	log   *slog.Logger
}

func (h *host) Assign(name string, _ checkpoint.Position) checkpoint.Partition {
	h.names = append(h.names, name)
	return checkpoint.Partition(len(h.names) - 1)
}
func (h *host) Revoke(context.Context, ...checkpoint.Partition) error { return nil }
func (h *host) Lost(...checkpoint.Partition)                          {}
func (h *host) Skip(string, int64)                                    {}
func (h *host) Unread(string, int64)                                  {}
func (h *host) Logger() *slog.Logger {
	if h.log != nil {
		return h.log
	}
	return slog.New(slog.DiscardHandler)
}
