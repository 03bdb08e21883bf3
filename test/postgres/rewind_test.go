//go:build integration

package postgres_test

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/postgres"
	"github.com/weir-etl/weir/source/file"
)

// A second sink that fails now and then makes the runtime rewind the
// source and replay what that sink lost; the replay reaches the PostgreSQL
// sink too, which already holds those records. Its table must still hold
// every record exactly once, while the failing sink gets everything.
func TestRewindByAnotherSinkWritesNoDuplicate(t *testing.T) {
	const files, perFile = 4, 20000
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	dir := t.TempDir()
	for f := range files {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(fd)
		for i := range perFile {
			fmt.Fprintf(w, "{\"id\":%d,\"pad\":\"0123456789abcdef\"}\n", f*perFile+i)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fd.Close()
	}
	fc := file.NewConfig()
	fc.Paths = []string{filepath.Join(dir, "*.ndjson")}
	fc.Mode = "once"
	fc.DataDir = filepath.Join(dir, "state")
	src, err := file.New("in", fc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := postgres.NewConfig()
	cfg.URL, cfg.PasswordEnv, cfg.Table, cfg.CreateTable = db, pgtest.PasswordEnv, "ev", true
	cfg.Columns = []postgres.Column{{Name: "id", Type: "bigint"}}
	pg, err := postgres.New("db", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The other sink fails every 7th write, 12 times in all.
	var mu sync.Mutex
	writes, failures := 0, 0
	flaky := &conformance.FaultSink{Sink: &conformance.MemSink{}, OnWrite: func([]record.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if writes++; writes%7 == 0 && failures < 12 {
			failures++
			return errors.New("injected failure")
		}
		return nil
	}}
	batch := pipeline.BatchSettings{MaxRecords: 3000, MaxAge: 20 * time.Millisecond}
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "in", Source: src}},
		Sinks: []pipeline.SinkSpec{
			{Name: "db", Inputs: []string{"in"}, Sink: pg, Batch: batch},
			{Name: "flaky", Inputs: []string{"in"}, Sink: flaky, Batch: batch,
				Retry: pipeline.RetrySettings{MaxAttempts: 1}, OnFailure: pipeline.Rewind},
		},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 20 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	if err := pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}
	if failures == 0 {
		t.Fatal("the other sink never failed: nothing was rewound")
	}
	c := count(t, conn, "ev", files*perFile, "true")
	t.Logf("%d failures of the other sink; %s", failures, pg.Describe())
	if c.missing != 0 || c.duplicates() != 0 || c.unexpected != 0 {
		t.Fatalf("%d missing, %d duplicates, %d unexpected rows; want 0, 0, 0", c.missing, c.duplicates(), c.unexpected)
	}
}
