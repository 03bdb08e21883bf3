package iceberg

import (
	"context"
	"database/sql"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
)

// scanTable reads the table of cfg the way docs/iceberg.md tells a reader
// outside weir to ("Readers": pyiceberg through the same catalog): a
// catalog connection of its own, named as the sink's, loads the table and
// scans its current snapshot with iceberg-go's reader. It returns the
// values of the string column col. Only the data files the snapshot refers
// to are read: files a crash left uncommitted are not rows.
func scanTable(t *testing.T, cfg *Config, col string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+sqlitePath(cfg.Catalog.URI)+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog(cfg.Catalog.Name, db, sqlcat.SQLite, iceberg.Properties{"warehouse": warehouseURI(cfg.Catalog.Warehouse)})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{cfg.Namespace, cfg.Table})
	if err != nil {
		t.Fatalf("loading %s.%s: %v", cfg.Namespace, cfg.Table, err)
	}
	tab, err := tbl.Scan(table.WithSelectedFields(col)).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scanning %s.%s: %v", cfg.Namespace, cfg.Table, err)
	}
	defer tab.Release()
	idx := tab.Schema().FieldIndices(col)
	if len(idx) == 0 {
		t.Fatalf("the scan of %s.%s has no column %s", cfg.Namespace, cfg.Table, col)
	}
	var out []string
	for _, chunk := range tab.Column(idx[0]).Data().Chunks() {
		c := chunk.(*array.String)
		for i := range c.Len() {
			out = append(out, c.Value(i))
		}
	}
	return out
}

// eosHarness is the exactly-once suite's harness: each destination is a
// table of its own (a SQLite catalog and a local warehouse in a directory
// of its own) whose column doc holds each record value as written. Every
// instance is sink "out" of the same pipeline: one writer, whose positions
// are one summary property of the table. A restart (Reopen) and a second
// process of the pipeline (Another: a member of the same Kafka group, a
// zombie) differ only in that the second runs beside the first, with its
// own catalog connection; the sink has no per-process identity, and its
// fence is the catalog's compare-and-swap with the positions read again.
// cleanup_min_age keeps its default, as it must where several processes
// write (files a crash left uncommitted stay in the warehouse: the reader
// does not count them).
func eosHarness() conformance.ExactlyOnceHarness {
	build := func(t *testing.T, cfg Config) connector.Sink {
		return newSink(t, &cfg)
	}
	return conformance.ExactlyOnceHarness{
		New: func(t *testing.T) connector.Sink {
			cfg := sqliteConfig(t.TempDir(), "eos", Column{Name: "doc", Value: true, Required: true})
			cfg.CleanupMinAge = DefaultCleanupMinAge
			return build(t, *cfg)
		},
		Reopen:  func(t *testing.T, s connector.Sink) connector.Sink { return build(t, s.(*Sink).cfg) },
		Another: func(t *testing.T, s connector.Sink) connector.Sink { return build(t, s.(*Sink).cfg) },
		// A dead process's catalog connection is closed by its kernel;
		// nothing else of the sink outlives it (the group is in memory).
		Crash: func(t *testing.T, s connector.Sink) {
			if k := s.(*Sink); k.release != nil {
				k.release()
				k.release = nil
			}
		},
		Held: func(t *testing.T, s connector.Sink) [][]byte {
			var out [][]byte
			for _, v := range scanTable(t, &s.(*Sink).cfg, "doc") {
				out = append(out, []byte(v))
			}
			return out
		},
		// The suite's step is the sink's crash hook: it is called on the
		// goroutine running Flush, outside any lock (the sink takes none;
		// the catalog's commit has returned at "committed").
		CrashPoints: func(s connector.Sink, step func(string)) {
			k := s.(*Sink)
			if step == nil {
				k.hook = nil
				return
			}
			k.hook = func(name string) error {
				step(name)
				return nil
			}
		},
	}
}

// The Iceberg sink passes the exactly-once suite on a SQLite catalog and a
// local warehouse: crashed at every step of its commit (after the data
// files are written, after the catalog took the snapshot), the positions a
// new instance reads from the table's snapshots agree with the rows a scan
// of the table returns, the group all in or all out; and two processes of
// the pipeline writing one partition at once, whichever commits second,
// leave every record in the table once.
func TestExactlyOnceConforms(t *testing.T) {
	conformance.TestExactlyOnce(t, eosHarness())
}

// The reader of the harness counts what the current snapshot refers to and
// nothing else: a data file in the warehouse that no snapshot refers to (a
// crash between writing a group's files and committing them) is not held,
// while the committed group is.
func TestExactlyOnceReaderCountsCommittedRowsOnly(t *testing.T) {
	ctx := context.Background()
	cfg := sqliteConfig(t.TempDir(), "reader", Column{Name: "off", Type: "string"})
	cfg.CleanupMinAge = DefaultCleanupMinAge
	s := openSink(t, cfg)
	if err := writeGroup(ctx, s, 0, 10); err != nil {
		t.Fatal(err)
	}
	s.hook = func(step string) error {
		if step == stepFilesWritten {
			return errCrash
		}
		return nil
	}
	if err := writeGroup(ctx, s, 10, 20); err == nil {
		t.Fatal("the commit did not stop after writing its files")
	}
	tbl, committed := committedFiles(t, s)
	if disk := dataFilesOnDisk(t, tbl); len(disk) <= len(committed) {
		t.Fatalf("%d data files on disk, %d committed: the crashed commit left no file behind, and the test shows nothing", len(disk), len(committed))
	}
	if got := scanTable(t, cfg, "off"); len(got) != 10 {
		t.Fatalf("the scan returned %d rows, want the 10 committed: %v", len(got), got)
	}
}
