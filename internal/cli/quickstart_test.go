package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Guarantee: the quickstart's parquet output is one table: DuckDB reads
// every chunk of it with read_parquet over out/by-region/*/* (no
// union_by_name), with the types its schema declares, and gets every paid
// order back with its total, however its records were grouped.
func TestQuickstartParquetReadByDuckDB(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import duckdb").Run()
	}
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_DUCKDB") != "" {
			t.Fatalf("duckdb is required (WEIR_REQUIRE_DUCKDB is set) but cannot be imported: %v", err)
		}
		t.Skip("duckdb is not installed (pip install duckdb); CI installs it and sets WEIR_REQUIRE_DUCKDB=1")
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	// The quickstart as it is, run from a directory of its own: its paths
	// are relative (examples/data, ./out).
	work := t.TempDir()
	inputs, _ := filepath.Glob(filepath.Join(examples, "data", "*.ndjson"))
	if len(inputs) == 0 {
		t.Fatal("no examples/data/*.ndjson")
	}
	copyFile(t, filepath.Join(examples, "quickstart.yaml"), filepath.Join(work, "examples", "quickstart.yaml"))
	type order struct {
		ID        int64   `json:"id"`
		TS        string  `json:"ts"`
		Region    string  `json:"region"`
		Status    string  `json:"status"`
		Qty       int64   `json:"qty"`
		UnitPrice float64 `json:"unit_price"`
	}
	var want []order
	for _, in := range inputs {
		copyFile(t, in, filepath.Join(work, "examples", "data", filepath.Base(in)))
		f, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var o order
			if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
				t.Fatal(err)
			}
			if o.Status == "paid" {
				want = append(want, o)
			}
		}
		f.Close()
	}
	t.Chdir(work)
	// Small chunks (max_records: 5): a chunk may then hold only orders
	// whose unit_price is an integer.
	if code, stdout, stderr := runCLI("run", "-c", filepath.Join("examples", "quickstart.yaml"), "--set", "sinks.by_region.max_records=5"); code != ExitOK {
		t.Fatalf("weir run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	chunks, _ := filepath.Glob(filepath.Join("out", "by-region", "*", "*.parquet"))
	if len(chunks) < 2 {
		t.Fatalf("parquet chunks %v, want one per region at least", chunks)
	}

	const script = `
import duckdb, json, sys
src = "read_parquet('out/by-region/*/*')"
types = {r[0]: r[1] for r in duckdb.sql("DESCRIBE SELECT * FROM " + src).fetchall()}
rows = duckdb.sql("SELECT id, region, qty, unit_price, total, epoch_us(ts) FROM " + src + " ORDER BY id").fetchall()
files = {}
for f, name, typ in duckdb.sql("SELECT file_name, name, duckdb_type FROM parquet_schema('out/by-region/*/*') WHERE duckdb_type IS NOT NULL").fetchall():
    files.setdefault(f, {})[name] = typ
print(json.dumps({"types": types, "rows": rows, "files": files}))
`
	b, err := exec.Command(py, "-c", script).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("duckdb over out/by-region/*/*: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Types map[string]string
		Rows  [][]any
		Files map[string]map[string]string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	wantTypes := map[string]string{
		"id": "BIGINT", "ts": "TIMESTAMP WITH TIME ZONE", "region": "VARCHAR", "customer": "VARCHAR",
		"status": "VARCHAR", "sku": "VARCHAR", "qty": "BIGINT", "unit_price": "DOUBLE",
		"channel": "VARCHAR", "total": "DOUBLE",
	}
	for col, typ := range wantTypes {
		if got.Types[col] != typ {
			t.Errorf("column %s: %q, want %q (all: %v)", col, got.Types[col], typ, got.Types)
		}
	}
	// Every chunk has the declared types: a reader taking the first file's
	// schema (as read_parquet without union_by_name does, or
	// pyarrow.dataset) reads all of them as they are.
	for f, cols := range got.Files {
		for col, typ := range wantTypes {
			if cols[col] != typ {
				t.Errorf("%s: column %s is %q, want %q", f, col, cols[col], typ)
			}
		}
	}
	if len(got.Rows) != len(want) {
		t.Fatalf("%d rows, want %d (the paid orders)", len(got.Rows), len(want))
	}
	slices.SortFunc(want, func(a, b order) int { return int(a.ID - b.ID) })
	for i, o := range want {
		ts, err := time.Parse(time.RFC3339, o.TS)
		if err != nil {
			t.Fatal(err)
		}
		w := []any{float64(o.ID), o.Region, float64(o.Qty), o.UnitPrice, float64(o.Qty) * o.UnitPrice, float64(ts.UnixMicro())}
		if !slices.Equal(got.Rows[i], w) {
			t.Errorf("row %d: %v, want %v", i, got.Rows[i], w)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Guarantee: a record whose field the parquet output's column cannot hold
// goes where its sink's on_failure sends a record error: to the dead letter
// sink, with the error naming the column and the schema to declare, or it
// halts the run naming them.
func TestParquetSchemaRecordErrorsFollowOnFailure(t *testing.T) {
	work := t.TempDir()
	in := filepath.Join(work, "in.ndjson")
	lines := `{"id":1,"n":1}` + "\n" + `{"id":2,"n":2}` + "\n" + `{"id":3,"n":"three"}` + "\n" + `{"id":4,"n":false}` + "\n" + `{"id":5,"n":null,"m":true}` + "\n"
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	config := func(onFailure string) string {
		return `
sources:
  in: { type: file, paths: [` + in + `], format: ndjson, mode: once, data_dir: ` + filepath.Join(work, onFailure, "state") + ` }
sinks:
  out:
    type: file
    inputs: [in]
    path: ` + filepath.Join(work, onFailure, "out") + `
    format: parquet
    on_failure: ` + onFailure + `
` + map[string]string{"dead_letter": "    dead_letter: failed\n  failed: { type: file, path: " + filepath.Join(work, onFailure, "failed") + ", on_failure: halt }\n"}[onFailure] + `
metrics: { address: "off" }
`
	}

	code, stdout, stderr := runCLI("run", "-c", writeConfig(t, config("dead_letter")))
	if code != ExitOK {
		t.Fatalf("dead_letter: exit %d\n%s\n%s", code, stdout, stderr)
	}
	dead, _ := filepath.Glob(filepath.Join(work, "dead_letter", "failed", "*", "*.ndjson"))
	var got []string
	for _, p := range dead {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var env struct {
				Error string
				Sink  string
				Value json.RawMessage
			}
			if err := json.Unmarshal([]byte(l), &env); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			if env.Sink != "out" || !strings.Contains(env.Error, "column n:") || !strings.Contains(env.Error, "schema") {
				t.Errorf("dead letter %s: want sink out and an error naming column n and the schema to declare", l)
			}
			got = append(got, string(env.Value))
		}
	}
	slices.Sort(got)
	if want := []string{`{"id":3,"n":"three"}`, `{"id":4,"n":false}`}; !slices.Equal(got, want) {
		t.Errorf("dead letters %q, want %q", got, want)
	}

	code, _, stderr = runCLI("run", "-c", writeConfig(t, config("halt")))
	if code != ExitRuntime || !strings.Contains(stderr, "column n:") {
		t.Errorf("halt: exit %d, want %d and an error naming column n:\n%s", code, ExitRuntime, stderr)
	}
}
