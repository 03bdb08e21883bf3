package file

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// Guarantee: a sink writes only what its format promises. ndjson rejects a
// value that is not one JSON value on one line (the file would not be
// NDJSON); lines takes any bytes but a line break or a final carriage return
// (it would not read back as the same record); both pass what they accept
// byte for byte, numbers, escapes and bytes that are not UTF-8 included.
func TestLineFormatsRejectWhatTheyCannotHold(t *testing.T) {
	cases := []struct {
		value        string
		ndjson, line bool // accepted
	}{
		{`{"id":12345678901234567891,"s":"caf\u00e9","x":1e400}`, true, true},
		{"{\"s\":\"\xff\"}", true, true},
		{`"text"`, true, true},
		{`12`, true, true},
		{`{"a":1`, false, true},
		{`{"a":1}{"b":2}`, false, true},
		{`{"a":01}`, false, true},
		{`not json`, false, true},
		{``, false, true},
		{"{\"a\":\n1}", false, false},
		{"\"b\n\"", false, false},
		{"{\"a\":1}\r", false, false},
		{"a\rb", false, true},
		{"\x00\x01binary", false, true},
	}
	for _, format := range []string{"ndjson", "lines"} {
		s, dir := newSink(t, func(c *Config) { c.Format = format })
		var want []string
		for _, c := range cases {
			ok := c.ndjson
			if format == "lines" {
				ok = c.line
			}
			err := s.Write(ctx, recs(c.value))
			var rej *connector.RejectError
			switch {
			case ok && err != nil:
				t.Errorf("%s: %q rejected: %v", format, c.value, err)
			case !ok && (!errors.As(err, &rej) || rej.Index != 0):
				t.Errorf("%s: %q: %v, want a RejectError", format, c.value, err)
			case ok:
				want = append(want, c.value)
			}
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		vis, _ := files(t, dir)
		got := readAll(t, dir, vis)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: read back %q\nwant %q", format, got, want)
		}
		if format == "lines" && !strings.HasSuffix(vis[0], ".txt") {
			t.Errorf("lines chunk %s, want a .txt file", vis[0])
		}
	}
}

// Guarantee: the template writes a number as its literal: a 64-bit id names
// its own directory, not its float's.
func TestTemplateNumbersAreExact(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.Template = `{{field "id"}}/p` })
	if err := s.Write(ctx, recs(`{"id":12345678901234567891}`, `{"id":1.50}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"12345678901234567891", "1.50"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
			t.Errorf("no directory %s: %v", d, err)
		}
	}
}

// Guarantee: a record that does not fit a declared schema is a RejectError
// naming the column, nested ones by their path; nothing is rounded or
// truncated to fit.
func TestParquetDeclaredSchemaRejectsNamingTheColumn(t *testing.T) {
	schema := map[string]string{
		"id":    "int64",
		"small": "int32",
		"price": "decimal(10,2)",
		"ratio": "double",
		"ts":    "timestamp(ms, UTC)",
		"day":   "date",
		"tags":  "list<string>",
		"user":  "struct<name: string, age: int32>",
		"blob":  "binary",
		"name":  "string",
	}
	cases := []struct{ value, col string }{
		{`{"id":9223372036854775808}`, "column id:"},
		{`{"id":1.5}`, "column id:"},
		{`{"small":2147483648}`, "column small:"},
		{`{"price":1.005}`, "column price:"},
		{`{"price":123456789.5}`, "column price:"},
		{`{"ratio":9007199254740993}`, "column ratio:"},
		{`{"ts":"2026-02-01T19:27:17.0001Z"}`, "column ts:"},
		{`{"ts":"yesterday"}`, "column ts:"},
		{`{"day":"2026-02-30"}`, "column day:"},
		{`{"tags":["a",1]}`, "column tags[1]:"},
		{`{"tags":"a"}`, "column tags:"},
		{`{"user":{"age":"x"}}`, "column user.age:"},
		{`{"user":{"nick":"x"}}`, "column user.nick:"},
		{"{\"name\":\"\xff\"}", "column name:"},
		{`{"other":1}`, "column other:"},
		{`[1]`, "not a JSON object"},
	}
	for _, c := range cases {
		s, _ := newSink(t, func(cf *Config) { cf.Format = "parquet"; cf.Schema = schema })
		err := s.Write(ctx, recs(`{"id":1}`, c.value))
		var rej *connector.RejectError
		if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), c.col) {
			t.Errorf("%s: %v, want a RejectError for record 1 naming %q", c.value, err, c.col)
		}
		s.Close(ctx)
	}
}

// pyarrowRows reads the parquet files with pyarrow, a reader weir did not
// write, and returns each file's schema and rows as pyarrow prints them.
func pyarrowRead(t *testing.T, paths []string) []struct {
	Schema map[string]string
	Rows   []map[string]any
} {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import pyarrow").Run()
	}
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_PYARROW") != "" {
			t.Fatalf("pyarrow is required (WEIR_REQUIRE_PYARROW is set) but cannot be imported: %v", err)
		}
		t.Skip("pyarrow is not installed (pip install pyarrow); CI installs it and sets WEIR_REQUIRE_PYARROW=1")
	}
	const script = `
import json, sys, decimal, datetime
import pyarrow as pa
import pyarrow.parquet as pq
out = []
for p in sys.argv[1:]:
    t = pq.read_table(p)
    schema = {f.name: str(f.type) for f in t.schema}
    # Timestamps as their integer count of the column's unit: datetime
    # cannot hold nanoseconds.
    ts = [i for i, f in enumerate(t.schema) if pa.types.is_timestamp(f.type)]
    for i in ts:
        t = t.set_column(i, t.schema[i].name, t.column(i).cast(pa.int64()))
    tsnames = {t.schema[i].name for i in ts}
    def conv(v):
        if isinstance(v, bool): return v
        if isinstance(v, decimal.Decimal): return "decimal:" + str(v)
        if isinstance(v, datetime.datetime): return "ts:" + v.isoformat()
        if isinstance(v, datetime.date): return "date:" + v.isoformat()
        if isinstance(v, bytes): return "bytes:" + v.hex()
        if isinstance(v, list): return [conv(x) for x in v]
        if isinstance(v, dict): return {k: conv(x) for k, x in v.items()}
        if isinstance(v, int): return "int:" + str(v)
        if isinstance(v, float): return "float:" + repr(v)
        return v
    rows = [{k: ("ts:" + str(v) if k in tsnames and v is not None else conv(v)) for k, v in r.items()} for r in t.to_pylist()]
    out.append({"Schema": schema, "Rows": rows})
print(json.dumps(out))
`
	cmd := exec.Command(py, append([]string{"-c", script}, paths...)...)
	b, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pyarrow: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var out []struct {
		Schema map[string]string
		Rows   []map[string]any
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}

func writeParquetChunk(t *testing.T, schema map[string]string, values ...string) string {
	t.Helper()
	s, dir := newSink(t, func(c *Config) { c.Format = "parquet"; c.Schema = schema })
	if err := s.Write(ctx, recs(values...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vis, _ := files(t, dir)
	if len(vis) != 1 {
		t.Fatalf("chunks %v, want 1", vis)
	}
	return filepath.Join(dir, vis[0])
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Guarantee: an inferred parquet schema keeps types a reader sees: the
// quickstart's fields 1301, 3 and "2026-02-01T19:27:17Z" are int64, int64
// and a UTC timestamp, not double, double and string; integers and
// fractions in one column widen to double when that is exact, and to a
// decimal when it is not; values come back exactly.
func TestParquetInferredTypesReadByPyarrow(t *testing.T) {
	p1 := writeParquetChunk(t, nil,
		`{"id":1301,"qty":3,"ts":"2026-02-01T19:27:17Z","price":12.5,"name":"ann","ok":true,"tags":["a"],"big":12345678901234567891,"mixed":1,"raw":"`+"\xff"+`"}`,
		`{"id":9007199254740993,"qty":-4,"ts":"2026-02-02T00:00:00.123456Z","price":3,"name":"caf\u00e9","ok":false,"tags":null,"big":1,"mixed":0.25,"raw":"x"}`,
	)
	got := pyarrowRead(t, []string{p1})
	wantSchema := `{"big":"decimal128(20, 0)","id":"int64","mixed":"double","name":"string","ok":"bool","price":"double","qty":"int64","raw":"binary","tags":"string","ts":"timestamp[us, tz=UTC]"}`
	if s := asJSON(got[0].Schema); s != wantSchema {
		t.Errorf("schema %s\nwant   %s", s, wantSchema)
	}
	wantRows := `[{"big":"decimal:12345678901234567891","id":"int:1301","mixed":"float:1.0","name":"ann","ok":true,"price":"float:12.5","qty":"int:3","raw":"bytes:ff","tags":"[\"a\"]","ts":"ts:1769974037000000"},` +
		`{"big":"decimal:1","id":"int:9007199254740993","mixed":"float:0.25","name":"café","ok":false,"price":"float:3.0","qty":"int:-4","raw":"bytes:78","tags":null,"ts":"ts:1769990400123456"}]`
	if r := asJSON(got[0].Rows); r != wantRows {
		t.Errorf("rows %s\nwant %s", r, wantRows)
	}
}

// Guarantee: a declared schema writes the types it names, nested ones
// included, and pyarrow reads back the values exactly.
func TestParquetDeclaredSchemaReadByPyarrow(t *testing.T) {
	p := writeParquetChunk(t, map[string]string{
		"id":    "int64",
		"n":     "int32",
		"price": "decimal(10,2)",
		"huge":  "decimal(38,4)",
		"ratio": "double",
		"at":    "timestamp(ms, UTC)",
		"wall":  "timestamp(ns, local)",
		"day":   "date",
		"tags":  "list<string>",
		"user":  "struct<name: string, age: int32, langs: list<string>>",
		"blob":  "binary",
		"doc":   "json",
		"flag":  "bool",
	},
		`{"id":12,"n":-5,"price":19.99,"huge":-1234567890123456789012345678901234.5678,"ratio":0.1,"at":"2026-02-01T19:27:17.5Z","wall":"2026-02-01T19:27:17.000000001","day":"2026-02-01","tags":["a","b"],"user":{"name":"ann","age":30,"langs":["go"]},"blob":"\u0000x","doc":{"b":1,"a":[12345678901234567891]},"flag":true}`,
		`{"id":13,"tags":[],"user":{"name":null}}`,
		`{"id":14,"tags":null,"user":null,"price":-0.5}`,
	)
	got := pyarrowRead(t, []string{p})
	wantSchema := `{"at":"timestamp[ms, tz=UTC]","blob":"binary","day":"date32[day]","doc":"string","flag":"bool","huge":"decimal128(38, 4)","id":"int64","n":"int32","price":"decimal128(10, 2)","ratio":"double","tags":"list\u003celement: string\u003e","user":"struct\u003cage: int32, langs: list\u003celement: string\u003e, name: string\u003e","wall":"timestamp[ns]"}`
	if s := asJSON(got[0].Schema); s != wantSchema {
		t.Errorf("schema %s\nwant   %s", s, wantSchema)
	}
	want := `[{"at":"ts:1769974037500","blob":"bytes:0078","day":"date:2026-02-01","doc":"{\"b\":1,\"a\":[12345678901234567891]}","flag":true,"huge":"decimal:-1234567890123456789012345678901234.5678","id":"int:12","n":"int:-5","price":"decimal:19.99","ratio":"float:0.1","tags":["a","b"],"user":{"age":"int:30","langs":["go"],"name":"ann"},"wall":"ts:1769974037000000001"},` +
		`{"at":null,"blob":null,"day":null,"doc":null,"flag":null,"huge":null,"id":"int:13","n":null,"price":null,"ratio":null,"tags":[],"user":{"age":null,"langs":null,"name":null},"wall":null},` +
		`{"at":null,"blob":null,"day":null,"doc":null,"flag":null,"huge":null,"id":"int:14","n":null,"price":"decimal:-0.50","ratio":null,"tags":null,"user":null,"wall":null}]`
	if r := asJSON(got[0].Rows); r != want {
		t.Errorf("rows %s\nwant %s", r, want)
	}
}
