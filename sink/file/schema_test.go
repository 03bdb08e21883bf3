package file

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// writeEach writes each value in a Write of its own and returns, for each,
// the error it met (nil: accepted).
func writeEach(t *testing.T, s *Sink, vals ...string) []error {
	t.Helper()
	errs := make([]error, len(vals))
	for i, v := range vals {
		errs[i] = s.Write(ctx, recs(v))
		var rej *connector.RejectError
		if errs[i] != nil && !errors.As(errs[i], &rej) {
			t.Fatalf("%s: %v, want nil or a RejectError", v, errs[i])
		}
	}
	return errs
}

// wantRejected checks that err is a RejectError naming the column and
// saying how to fix it (declare a schema).
func wantRejected(t *testing.T, value string, err error, col string) {
	t.Helper()
	var rej *connector.RejectError
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "column "+col+":") || !strings.Contains(err.Error(), "schema") {
		t.Errorf("%s: %v, want a RejectError naming column %s and the fix (a schema)", value, err, col)
	}
}

func flush(t *testing.T, s *Sink) {
	t.Helper()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// readBoth reads every chunk under dir with pyarrow.dataset (the schema
// unified from all chunks) and DuckDB (union_by_name) and checks that both
// see the schema and the rows (sorted by id) wanted.
func readBoth(t *testing.T, dir string, pyarrowSchema, duckdbSchema, rows string) table {
	t.Helper()
	pa := pyarrowDataset(t, dir)
	slices.SortFunc(pa.Rows, byID)
	if s := asJSON(pa.Schema); s != pyarrowSchema {
		t.Errorf("pyarrow.dataset schema %s\nwant %s", s, pyarrowSchema)
	}
	if r := asJSON(pa.Rows); r != rows {
		t.Errorf("pyarrow.dataset rows %s\nwant %s", r, rows)
	}
	dd := duckdbRead(t, filepath.Join(dir, "**", "*.parquet"), true)
	slices.SortFunc(dd.Rows, byID)
	if s := asJSON(dd.Schema); s != duckdbSchema {
		t.Errorf("duckdb schema %s\nwant %s", s, duckdbSchema)
	}
	if r := asJSON(dd.Rows); r != rows {
		t.Errorf("duckdb rows %s\nwant %s", r, rows)
	}
	return pa
}

func byID(a, b map[string]any) int {
	x, _ := a["id"].(string)
	y, _ := b["id"].(string)
	if len(x) != len(y) {
		return len(x) - len(y)
	}
	return strings.Compare(x, y)
}

// Guarantee: without a declared schema an output has one parquet schema,
// whatever its groups hold: a column's type is inferred from the group that
// first gives it a value and kept; a field that appears later adds a
// column; a value the column cannot hold exactly (a string or a fraction
// in an int64 column) is a record error naming the column and the fix.
// pyarrow.dataset and DuckDB read all chunks together and get every
// accepted value back with the type of its first group.
func TestParquetOneSchemaPerOutput(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.Format = "parquet" })
	for _, err := range writeEach(t, s,
		`{"id":1,"n":1,"s":"a","z":null}`,
		`{"id":2,"n":2,"s":"b"}`,
	) {
		if err != nil {
			t.Fatal(err)
		}
	}
	flush(t, s)
	g2 := []string{
		`{"id":3,"n":"three"}`,
		`{"id":4,"n":null,"s":"d","late":"x","z":7}`,
		`{"id":5,"n":2.5}`,
	}
	errs := writeEach(t, s, g2...)
	wantRejected(t, g2[0], errs[0], "n")
	if errs[1] != nil {
		t.Errorf("%s: %v", g2[1], errs[1])
	}
	wantRejected(t, g2[2], errs[2], "n")
	flush(t, s)
	g3 := []string{
		`{"id":6,"n":5,"late":"y","z":8}`,
		`{"id":7,"z":"eight"}`,
		`{"id":8,"s":true}`,
	}
	errs = writeEach(t, s, g3...)
	if errs[0] != nil {
		t.Errorf("%s: %v", g3[0], errs[0])
	}
	wantRejected(t, g3[1], errs[1], "z")
	wantRejected(t, g3[2], errs[2], "s")
	flush(t, s)

	pa := readBoth(t, dir,
		`{"id":"int64","late":"string","n":"int64","s":"string","z":"int64"}`,
		`{"id":"BIGINT","late":"VARCHAR","n":"BIGINT","s":"VARCHAR","z":"BIGINT"}`,
		`[{"id":"int:1","late":null,"n":"int:1","s":"a","z":null},`+
			`{"id":"int:2","late":null,"n":"int:2","s":"b","z":null},`+
			`{"id":"int:4","late":"x","n":null,"s":"d","z":"int:7"},`+
			`{"id":"int:6","late":"y","n":"int:5","s":null,"z":"int:8"}]`)
	// Once the columns stop growing, every chunk has the same schema, so
	// a reader that takes the first chunk's schema reads the later ones.
	if len(pa.Files) != 3 {
		t.Fatalf("chunks %v, want 3", pa.Files)
	}
	if a, b := asJSON(pa.Files[1]), asJSON(pa.Files[2]); a != b {
		t.Errorf("chunks of the second and third groups differ: %s and %s", a, b)
	}
}

// Guarantee: the chunks of one group share the schema, inferred from all of
// the group's records whichever chunk they went to: an integer in one
// directory and a fraction in another make one double column.
func TestParquetOneSchemaAcrossAGroupsChunks(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.Format = "parquet"; c.Template = `r={{field "r"}}/part` })
	if err := s.Write(ctx, recs(`{"id":1,"r":"a","x":1}`, `{"id":2,"r":"b","x":2.5}`, `{"id":3,"r":"c","y":"new"}`)); err != nil {
		t.Fatal(err)
	}
	flush(t, s)
	pa := readBoth(t, dir,
		`{"id":"int64","r":"string","x":"double","y":"string"}`,
		`{"id":"BIGINT","r":"VARCHAR","x":"DOUBLE","y":"VARCHAR"}`,
		`[{"id":"int:1","r":"a","x":"float:1.0","y":null},{"id":"int:2","r":"b","x":"float:2.5","y":null},{"id":"int:3","r":"c","x":null,"y":"new"}]`)
	for _, f := range pa.Files[1:] {
		if asJSON(f) != asJSON(pa.Files[0]) {
			t.Errorf("the group's chunks differ: %v", pa.Files)
		}
	}
	// DuckDB without union_by_name reads them too: the files are alike.
	dd := duckdbRead(t, filepath.Join(dir, "*", "*.parquet"), false)
	if len(dd.Rows) != 3 {
		t.Errorf("duckdb read_parquet without union_by_name: %v", dd.Rows)
	}
}

// Guarantee: the schema survives a restart: a new sink on the same path
// keeps the types the chunks already there were written with, rather than
// inferring others from its first group.
func TestParquetSchemaSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	parquet := func(c *Config) { c.Format = "parquet" }
	s1 := openAt(t, dir, parquet)
	if err := s1.Write(ctx, recs(`{"id":1,"v":1,"ts":"2026-02-01T19:27:17Z"}`)); err != nil {
		t.Fatal(err)
	}
	flush(t, s1)
	if err := s1.Close(ctx); err != nil {
		t.Fatal(err)
	}

	s2 := openAt(t, dir, parquet)
	vals := []string{
		`{"id":2,"v":"two"}`,
		`{"id":3,"v":2.5}`,
		`{"id":4,"ts":"yesterday"}`,
		`{"id":5,"v":3,"w":true,"ts":"2026-02-02T00:00:00Z"}`,
	}
	errs := writeEach(t, s2, vals...)
	wantRejected(t, vals[0], errs[0], "v")
	wantRejected(t, vals[1], errs[1], "v")
	wantRejected(t, vals[2], errs[2], "ts")
	if errs[3] != nil {
		t.Errorf("%s: %v", vals[3], errs[3])
	}
	flush(t, s2)
	readBoth(t, dir,
		`{"id":"int64","ts":"timestamp[us, tz=UTC]","v":"int64","w":"bool"}`,
		`{"id":"BIGINT","ts":"TIMESTAMP WITH TIME ZONE","v":"BIGINT","w":"BOOLEAN"}`,
		`[{"id":"int:1","ts":"ts:1769974037000000","v":"int:1","w":null},{"id":"int:5","ts":"ts:1769990400000000","v":"int:3","w":true}]`)
}

// Guarantee: an aborted group settles nothing: what its records showed of
// a new column is forgotten, and the group written again after it decides.
func TestParquetAbortedGroupSettlesNoType(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.Format = "parquet" })
	if err := s.Write(ctx, recs(`{"id":1,"x":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, recs(`{"id":2,"x":2}`)); err != nil {
		t.Fatal(err)
	}
	flush(t, s)
	readBoth(t, dir, `{"id":"int64","x":"int64"}`, `{"id":"BIGINT","x":"BIGINT"}`, `[{"id":"int:2","x":"int:2"}]`)
}

// Guarantee: a schema file that is not one weir kept stops Open, naming the
// file and the fix, rather than being taken for an empty schema (which
// would infer types other than the chunks' own).
func TestParquetSchemaFileDamagedStopsOpen(t *testing.T) {
	for _, content := range []string{
		`{"columns":{"n":{"type":"int64",`,
		`{"columns":{"n":{"type":"int65","holds":"number"}}}`,
		`{"columns":{"n":{"type":"bool","holds":"number"}}}`,
	} {
		dir := filepath.Join(t.TempDir(), "out")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, schemaFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		c := NewConfig()
		c.Path, c.Format = dir, "parquet"
		s, err := New("out", c)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Open(ctx)
		if err == nil || !strings.Contains(err.Error(), schemaFile) || !strings.Contains(err.Error(), "declare the sink's schema") {
			t.Errorf("%s: Open: %v, want an error naming %s and the fix", content, err, schemaFile)
		}
		if err == nil {
			s.Close(ctx)
		}
	}
}
