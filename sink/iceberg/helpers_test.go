package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// sqliteConfig returns a configuration of a table made by create_table in
// dir, with a SQLite catalog and a local warehouse: what the unit tests run
// on, no server needed.
func sqliteConfig(dir, tbl string, cols ...Column) *Config {
	cfg := NewConfig()
	cfg.Catalog.URI = "sqlite://" + filepath.Join(dir, "catalog.db")
	cfg.Catalog.Warehouse = filepath.Join(dir, "warehouse")
	cfg.Namespace = "db"
	cfg.Table = tbl
	cfg.CreateTable = true
	cfg.CleanupMinAge = 0
	cfg.Columns = cols
	return cfg
}

func newSink(t *testing.T, cfg *Config) *Sink {
	t.Helper()
	s, err := New("out", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openSink(t *testing.T, cfg *Config) *Sink {
	t.Helper()
	s := newSink(t, cfg)
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// loadTable loads the table of cfg through a catalog connection of its own
// (the sink's may be closed).
func loadTable(t *testing.T, cfg *Config) *table.Table {
	t.Helper()
	r := newSink(t, cfg)
	cat, release, err := r.openCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	r.cat = cat
	tbl, err := r.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// committedFiles returns the data files each snapshot of the main branch
// added, oldest snapshot first.
func committedFiles(t *testing.T, s *Sink) (*table.Table, []string) {
	t.Helper()
	ctx := context.Background()
	tbl := loadTable(t, &s.cfg)
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var chain []table.Snapshot
	for snap := tbl.Metadata().SnapshotByName(table.MainBranch); snap != nil; {
		chain = append(chain, *snap)
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = tbl.Metadata().SnapshotByID(*snap.ParentSnapshotID)
	}
	slices.Reverse(chain)
	var files []string
	for _, snap := range chain {
		ms, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.SnapshotID() != snap.SnapshotID {
				continue
			}
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Status() == iceberg.EntryStatusADDED && e.SnapshotID() == snap.SnapshotID {
					files = append(files, e.DataFile().FilePath())
				}
			}
		}
	}
	return tbl, files
}

// column returns the values of the string column name of the table, in
// commit order (the order rows were written within a file).
func columnValues(t *testing.T, s *Sink, name string) []string {
	t.Helper()
	_, files := committedFiles(t, s)
	var out []string
	for _, f := range files {
		tab := readParquet(t, f)
		idx := tab.Schema().FieldIndices(name)
		if len(idx) == 0 {
			t.Fatalf("%s: no column %s", f, name)
		}
		for _, chunk := range tab.Column(idx[0]).Data().Chunks() {
			c := chunk.(*array.String)
			for i := range c.Len() {
				if c.IsNull(i) {
					out = append(out, "<null>")
					continue
				}
				out = append(out, c.Value(i))
			}
		}
		tab.Release()
	}
	return out
}

func readParquet(t *testing.T, uri string) arrow.Table {
	t.Helper()
	f, err := os.Open(strings.TrimPrefix(uri, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// dataFilesOnDisk returns every parquet file under the table's data directory.
func dataFilesOnDisk(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	root := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}
