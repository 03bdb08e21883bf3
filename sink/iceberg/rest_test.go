//go:build integration

package iceberg

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
)

// restConfig returns a configuration of a table of its own on the REST
// catalog server that `.ci/iceberg-rest.sh` runs (Apache Iceberg's own
// RESTCatalogAdapter and servlet), or skips the test when none is running.
func restConfig(t *testing.T, cols ...Column) *Config {
	t.Helper()
	uri := os.Getenv("WEIR_ICEBERG_REST_URI")
	if uri == "" {
		t.Skip("no REST catalog: bash .ci/iceberg-rest.sh start && eval \"$(bash .ci/iceberg-rest.sh env)\"")
	}
	cfg := NewConfig()
	cfg.Catalog = Catalog{Type: CatalogREST, URI: uri, Name: "rest"}
	cfg.Namespace = fmt.Sprintf("weir_%d", time.Now().UnixNano())
	cfg.Table = "ev"
	cfg.CreateTable = true
	cfg.CleanupMinAge = 0
	cfg.Columns = cols
	return cfg
}

// The REST catalog end to end against a real server: the table is made
// through it (the server chooses its location and writes its metadata),
// two writers of one pipeline commit concurrently (the server answers the
// loser's compare-and-swap with 409, and it commits again on top), a crash
// after the files were written leaves nothing the next start does not clean
// up, and pyiceberg and DuckDB read every row once.
func TestRESTCatalog(t *testing.T) {
	ctx := context.Background()
	cfg := restConfig(t, Column{Name: "off", Type: "string"})
	a, b := openSink(t, cfg), openSink(t, cfg)
	if err := a.Write(ctx, partRecords("p1", 0, 10)); err != nil {
		t.Fatal(err)
	}
	a.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p1", Position: 10}})
	a.hook = func(step string) error {
		if step != stepFilesWritten || b.commits.Load() > 0 {
			return nil
		}
		if err := b.Write(ctx, partRecords("p2", 0, 5)); err != nil {
			return err
		}
		b.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p2", Position: 5}})
		return b.Flush(ctx)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if a.conflicts.Load() == 0 {
		t.Fatal("a's commit did not meet b's")
	}
	// A crash between writing the files and committing them.
	a.hook = func(step string) error {
		if step == stepFilesWritten {
			return errCrash
		}
		return nil
	}
	if err := a.Write(ctx, partRecords("p1", 10, 20)); err != nil {
		t.Fatal(err)
	}
	a.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p1", Position: 20}})
	if err := a.Flush(ctx); err == nil {
		t.Fatal("the commit did not stop")
	}
	c := openSink(t, cfg)
	if c.orphans.Load() != 1 {
		t.Fatalf("the clean-up deleted %d files, want 1", c.orphans.Load())
	}
	got, err := c.StoredPositions(ctx, "in", []string{"p1", "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if got["p1"] != 10 || got["p2"] != 5 {
		t.Fatalf("stored positions %v, want p1 10 and p2 5", got)
	}
	if err := c.Write(ctx, partRecords("p1", 10, 20)); err != nil {
		t.Fatal(err)
	}
	c.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p1", Position: 20}})
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range append(partRecords("p1", 0, 20), partRecords("p2", 0, 5)...) {
		v, _ := r.Value()
		want = append(want, canonical(t, string(v)))
	}
	slices.Sort(want)
	for _, reader := range []string{"pyiceberg", "duckdb"} {
		rows := readRows(t, cfg, reader)
		for i := range rows {
			rows[i] = canonical(t, rows[i])
		}
		slices.Sort(rows)
		if !slices.Equal(rows, want) {
			t.Fatalf("%s read %d rows, want %d: %v", reader, len(rows), len(want), rows)
		}
	}
}
