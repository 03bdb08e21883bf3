//go:build integration

package iceberg

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// readScript is the Python reader the tests share (pyiceberg and DuckDB).
const readScript = "../../test/iceberg/read.py"

// readRows reads the table of cfg with reader (pyiceberg or duckdb) and
// returns its rows in the reader's canonical JSON, sorted.
func readRows(t *testing.T, cfg *Config, reader string) []string {
	t.Helper()
	var args []string
	switch reader {
	case "pyiceberg":
		args = []string{readScript, "pyiceberg", "rows", cfg.Catalog.URI, warehouseURI(cfg.Catalog.Warehouse), cfg.Namespace + "." + cfg.Table}
	case "duckdb":
		args = []string{readScript, "duckdb", "rows", loadTable(t, cfg).MetadataLocation()}
	}
	cmd := exec.Command("python3", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", reader, err, stderr.String())
	}
	var rows []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		rows = append(rows, sc.Text())
	}
	slices.Sort(rows)
	return rows
}

// canonical re-encodes a JSON object with sorted keys, as read.py prints.
func canonical(t *testing.T, s string) string {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every type the sink offers, written by weir into a partitioned table and
// read back by pyiceberg and by DuckDB's iceberg extension, compared value
// for value in exact text: a 64-bit integer beyond 2^53, a 38-digit
// decimal, an exponent literal into a decimal, timestamps to the
// microsecond with and without a zone, a date before 1970, bytes that are
// not text, and nested structs, lists and maps; a second row of nulls.
func TestTypeRoundTrip(t *testing.T) {
	ctx := context.Background()
	cfg := sqliteConfig(keepDir(t), "types",
		Column{Name: "id", Type: "long", Required: true},
		Column{Name: "b", Type: "boolean"},
		Column{Name: "i", Type: "int"},
		Column{Name: "f", Type: "float"},
		Column{Name: "d", Type: "double"},
		Column{Name: "dec", Type: "decimal(38,10)"},
		Column{Name: "money", Type: "decimal(12,2)"},
		Column{Name: "s", Type: "string"},
		Column{Name: "bin", Type: "binary"},
		Column{Name: "day", Type: "date"},
		Column{Name: "ts", Type: "timestamp"},
		Column{Name: "tstz", Type: "timestamptz"},
		Column{Name: "st", Type: "struct<a: long, b: string, inner: struct<x: decimal(5,2)>>"},
		Column{Name: "li", Type: "list<decimal(5,2)>"},
		Column{Name: "m", Type: "map<string, long>"},
		Column{Name: "lst", Type: "list<struct<x: int, y: list<string>>>"},
		Column{Name: "amount", Type: "decimal(10,2)", Field: "payment.amount"},
	)
	cfg.Partition = []PartitionField{
		{Column: "tstz", Transform: "day"}, {Column: "id", Transform: "bucket[4]"},
		{Column: "s", Transform: "truncate[2]"}, {Column: "b", Transform: "identity"},
	}
	s := openSink(t, cfg)
	in := []string{
		`{"id": 9007199254740993, "b": true, "i": -2147483648, "f": 1.5, "d": 0.1, "dec": 1234567890123456789012345678.0123456789,
		  "money": 1e2, "s": "h\u00e9llo \"q\" \u2028 \ud83d\ude00", "bin": "AAEC/w==", "day": "1969-12-31",
		  "ts": "2026-03-01T12:30:45.123456", "tstz": "2026-03-01T12:30:45.123456+02:00",
		  "st": {"a": -9223372036854775808, "b": "x", "inner": {"x": "-999.99"}}, "li": ["1.10", 2.5, null],
		  "m": {"k": 9223372036854775807, "z": null}, "lst": [{"x": 7, "y": ["a", "b"]}, {"x": null, "y": []}],
		  "payment": {"amount": 12345678.90}}`,
		`{"id": -1}`,
	}
	var recs []record.Record
	for i, v := range in {
		r := record.New([]byte(v))
		r.Origin = record.Origin{Source: "in", Partition: "p", Offset: int64(i)}
		recs = append(recs, r)
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	s.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p", Position: 2}})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	nulls := `{"amount": null, "b": null, "bin": null, "d": null, "day": null, "dec": null, "f": null, "i": null, "id": {"int": "-1"},
	  "li": null, "lst": null, "m": null, "money": null, "s": null, "st": null, "ts": null, "tstz": null}`
	full := `{"amount": {"decimal": "12345678.90"}, "b": true, "bin": {"binary": "AAEC/w=="}, "d": {"double": "0.1"},
	  "day": {"date": "1969-12-31"}, "dec": {"decimal": "1234567890123456789012345678.0123456789"}, "f": {"double": "1.5"},
	  "i": {"int": "-2147483648"}, "id": {"int": "9007199254740993"},
	  "li": [{"decimal": "1.10"}, {"decimal": "2.50"}, null],
	  "lst": [{"x": {"int": "7"}, "y": ["a", "b"]}, {"x": null, "y": []}],
	  "m": {"k": {"int": "9223372036854775807"}, "z": null}, "money": {"decimal": "100.00"},
	  "s": "h\u00e9llo \"q\" \u2028 \ud83d\ude00",
	  "st": {"a": {"int": "-9223372036854775808"}, "b": "x", "inner": {"x": {"decimal": "-999.99"}}},
	  "ts": {"timestamp": "2026-03-01T12:30:45.123456"}, "tstz": {"timestamptz": "2026-03-01T10:30:45.123456"}}`
	for _, reader := range []string{"pyiceberg", "duckdb"} {
		t.Run(reader, func(t *testing.T) {
			want := []string{canonical(t, full), canonical(t, nulls)}
			if reader == "pyiceberg" {
				// pyiceberg 0.12 reads a null list of structs that hold a
				// list as an empty list; the file holds null (pyarrow's
				// parquet reader and DuckDB read null). docs/iceberg.md
				// notes it.
				want[1] = canonical(t, strings.Replace(nulls, `"lst": null`, `"lst": []`, 1))
			}
			slices.Sort(want)
			got := readRows(t, cfg, reader)
			for i := range got {
				got[i] = canonical(t, got[i])
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s read\n%s\nwant\n%s", reader, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// keepDir is t.TempDir, or $WEIR_ICEBERG_KEEP/<test> to look at afterwards.
func keepDir(t *testing.T) string {
	if d := os.Getenv("WEIR_ICEBERG_KEEP"); d != "" {
		dir := filepath.Join(d, t.Name())
		os.RemoveAll(dir)
		return dir
	}
	return t.TempDir()
}
