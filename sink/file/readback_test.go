package file

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// Readers weir did not write, reading every chunk of an output together:
// pyarrow.dataset and DuckDB. Each value comes back tagged with the type the
// reader gave it ("int:3", "float:2.5"; strings as they are; timestamps as
// "ts:" and their count of microseconds), each row keyed by column.

// table is what a reader made of an output: its columns' types and its rows.
type table struct {
	Schema map[string]string
	Rows   []map[string]any
	Files  []map[string]string // pyarrow only: each chunk's own schema
}

// python3 returns the interpreter if it can import module; otherwise the
// test fails when env is set (CI sets it) and is skipped when not.
func python3(t *testing.T, module, env, install string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import "+module).Run()
	}
	if err != nil {
		if os.Getenv(env) != "" {
			t.Fatalf("%s is required (%s is set) but cannot be imported: %v", module, env, err)
		}
		t.Skipf("%s is not installed (%s); CI installs it and sets %s=1", module, install, env)
	}
	return py
}

func runReader(t *testing.T, py, script string, args ...string) table {
	t.Helper()
	b, err := exec.Command(py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var out table
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}

// readerConv is the Python that tags values, shared by both readers.
const readerConv = `
import json, sys, decimal, datetime
def conv(v):
    if isinstance(v, bool): return v
    if isinstance(v, decimal.Decimal): return "decimal:" + str(v)
    if isinstance(v, bytes): return "bytes:" + v.hex()
    if isinstance(v, list): return [conv(x) for x in v]
    if isinstance(v, dict): return {k: conv(x) for k, x in v.items()}
    if isinstance(v, int): return "int:" + str(v)
    if isinstance(v, float): return "float:" + repr(v)
    return v
`

// pyarrowDataset reads every chunk under dir as one pyarrow dataset, with
// the schema pyarrow unifies from all of the chunks' schemas (its default
// promotion: columns are added by name, a type must be the same in every
// chunk).
func pyarrowDataset(t *testing.T, dir string) table {
	t.Helper()
	py := python3(t, "pyarrow", "WEIR_REQUIRE_PYARROW", "pip install pyarrow")
	return runReader(t, py, readerConv+`
import pyarrow as pa, pyarrow.dataset as ds
d = ds.dataset(sys.argv[1], format="parquet")
frags = list(d.get_fragments())
files = [{f.name: str(f.type) for f in fr.physical_schema} for fr in sorted(frags, key=lambda fr: fr.path)]
schema = pa.unify_schemas([fr.physical_schema for fr in frags])
t = ds.dataset(sys.argv[1], format="parquet", schema=schema).to_table()
for i, f in enumerate(t.schema):
    if pa.types.is_timestamp(f.type):
        t = t.set_column(i, f.name, t.column(i).cast(pa.int64()))
out = {"Schema": {f.name: str(f.type) for f in schema}, "Files": files,
       "Rows": [{k: ("ts:" + str(v) if v is not None and pa.types.is_timestamp(schema.field(k).type) else conv(v)) for k, v in r.items()} for r in t.to_pylist()]}
print(json.dumps(out))
`, dir)
}

// duckdbRead reads the chunks glob names with DuckDB's read_parquet, with
// union_by_name (columns matched by name across files, types unified) or
// without it (every file read as the first one's schema).
func duckdbRead(t *testing.T, glob string, unionByName bool) table {
	t.Helper()
	py := python3(t, "duckdb", "WEIR_REQUIRE_DUCKDB", "pip install duckdb")
	ubn := "false"
	if unionByName {
		ubn = "true"
	}
	return runReader(t, py, readerConv+`
import duckdb
src = "read_parquet(%s, union_by_name=%s)" % ("'" + sys.argv[1].replace("'", "''") + "'", sys.argv[2])
cols = duckdb.sql("DESCRIBE SELECT * FROM " + src).fetchall()
sel = []
for name, typ, *_ in cols:
    q = '"' + name.replace('"', '""') + '"'
    sel.append("epoch_us(%s) AS %s" % (q, q) if typ.startswith("TIMESTAMP") else q)
rel = duckdb.sql("SELECT " + ", ".join(sel) + " FROM " + src)
ts = {name for name, typ, *_ in cols if typ.startswith("TIMESTAMP")}
rows = [{c: ("ts:" + str(v) if c in ts and v is not None else conv(v)) for c, v in zip(rel.columns, r)} for r in rel.fetchall()]
print(json.dumps({"Schema": {name: typ for name, typ, *_ in cols}, "Rows": rows}))
`, glob, ubn)
}
