//go:build integration

package pgcdc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/pgcdctest"
	"github.com/weir-etl/weir/source/pgcdc"
)

const typesTable = `
CREATE TABLE types (
	id   int8 PRIMARY KEY,
	i2   int2, i4 int4, i8 int8,
	n    numeric, n2 numeric(12,4),
	f4   float4, f8 float8, fnan float8,
	b    bool,
	t    text, vc varchar(20),
	ts   timestamp, tstz timestamptz, d date,
	j    json, jb jsonb,
	by   bytea,
	u    uuid,
	ia   int4[], ta text[], na numeric[], tsa timestamptz[], jba jsonb[],
	big  text
);
CREATE TABLE other (k text PRIMARY KEY, v int);
CREATE TABLE empty (id int8 PRIMARY KEY);`

// typesValues are one row of every type; typesAfter is the JSON the source
// must make of it, column for column.
const typesValues = `(%d, -32768, 2147483647, 9223372036854775807,
	12345678901234567890.123456789012, 1.5,
	1.5, 0.1, 'NaN',
	true,
	E'quote " backslash \\ newline \n tab \t euro € nul-free', 'short',
	'2026-01-02 03:04:05.123456', '2026-01-02 03:04:05.5+02', '2026-01-02',
	'{"b": 1, "a": [1, 2]}', '{"b": 1, "a": [1, 2]}',
	'\x00ff10',
	'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	'{1,2,NULL}', '{"a b","c,d",NULL,"NULL","q\"x"}', '{1.50,2}', '{"2026-01-02 03:04:05+00"}', ARRAY['{"x": 1}'::jsonb, '[]'],
	%s)`

const typesAfter = `{"id":%d,"i2":-32768,"i4":2147483647,"i8":9223372036854775807,` +
	`"n":"12345678901234567890.123456789012","n2":"1.5000",` +
	`"f4":1.5,"f8":0.1,"fnan":"NaN",` +
	`"b":true,` +
	`"t":"quote \" backslash \\ newline \n tab \t euro € nul-free","vc":"short",` +
	`"ts":"2026-01-02T03:04:05.123456","tstz":"2026-01-02T01:04:05.5Z","d":"2026-01-02",` +
	`"j":{"b": 1, "a": [1, 2]},"jb":{"a": [1, 2], "b": 1},` +
	`"by":"AP8Q",` +
	`"u":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",` +
	`"ia":[1,2,null],"ta":["a b","c,d",null,"NULL","q\"x"],"na":["1.50","2"],"tsa":["2026-01-02T03:04:05Z"],"jba":[{"x": 1},[]],` +
	`"big":%s}`

// bigText is incompressible enough to be stored out of line (TOAST).
func bigText() string {
	var b strings.Builder
	x := uint32(2463534242)
	for b.Len() < 20000 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		fmt.Fprintf(&b, "%08x", x)
	}
	return b.String()
}

// fields splits a record's raw JSON into its top-level fields, keeping each
// value's exact text.
func fields(t *testing.T, raw string) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("record %s: %v", raw, err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// Guarantee: the snapshot reads every table in the slot's exported snapshot
// and the stream starts at the slot's consistent point, so changes committed
// while the snapshot is read appear once each, after the snapshot's rows,
// in commit order per table; and every type's values come out exactly.
func TestSnapshotThenStream(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(typesTable)
	big := bigText()
	db.Exec(fmt.Sprintf("INSERT INTO types VALUES "+typesValues, 1, "$1"), big)
	for id := 2; id <= 40; id++ {
		db.Exec(`INSERT INTO types (id, i4, t) VALUES ($1, $2, 'row')`, id, id)
	}
	db.Exec(`INSERT INTO other VALUES ('a', 1), ('b', 2)`)

	// 40 rows in chunks of 8: the last chunk is full and the one after it
	// empty; and a table with no row at all. Both must not hold the stream.
	cfg := config(t, db, "public.types", "other", "empty")
	cfg.SnapshotChunkRows = 8
	src, err := pgcdc.New("cdc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &collector{hold: make(chan struct{}), held: make(chan struct{})}
	r := startRun(t, src, sink)
	select {
	case <-sink.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no snapshot chunk reached the sink")
	}
	// The slot exists and its snapshot is being read: these changes come
	// after its consistent point.
	db.Exec(fmt.Sprintf("BEGIN; INSERT INTO types VALUES "+typesValues+"; UPDATE types SET t = 'two' WHERE id = 2; DELETE FROM types WHERE id = 3; COMMIT", 1000, "'small'"))
	db.Exec(`UPDATE types SET i4 = 7 WHERE id = 1`) // big unchanged: not sent
	db.Exec(`UPDATE other SET v = 20 WHERE k = 'b'`)
	db.Exec(`UPDATE types SET id = 500 WHERE id = 5`)
	db.Exec(`BEGIN; DELETE FROM types WHERE id = 1000; INSERT INTO other VALUES ('c', 3); COMMIT`)
	close(sink.hold)

	r.waitRecords(40+2+8, 60*time.Second)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	got := sink.all()

	var reads, changes []map[string]string
	readIDs := map[string]bool{}
	for _, o := range got {
		f := fields(t, o.raw)
		if f["op"] == `"read"` {
			if len(changes) > 0 && f["table"] == changes[len(changes)-1]["table"] {
				t.Errorf("a snapshot row after a change of its table: %s", o.raw)
			}
			reads = append(reads, f)
			readIDs[f["table"]+o.key] = true
			continue
		}
		changes = append(changes, f)
	}
	for id := 1; id <= 40; id++ {
		if !readIDs[fmt.Sprintf(`"types"{"id":%d}`, id)] {
			t.Errorf("snapshot row %d missing", id)
		}
	}
	if !readIDs[`"other"{"k":"a"}`] || !readIDs[`"other"{"k":"b"}`] {
		t.Errorf("snapshot rows of other missing")
	}
	if len(reads) != 42 {
		t.Errorf("%d snapshot rows, want 42 (each once)", len(reads))
	}
	// The snapshot shows the rows as of the slot's creation.
	for _, f := range reads {
		if f["table"] == `"types"` && strings.Contains(f["after"], `"id":1,`) {
			if want := fmt.Sprintf(typesAfter, 1, mustJSON(big)); f["after"] != want {
				t.Errorf("snapshot of the types row:\n got %s\nwant %s", f["after"], want)
			}
		}
		if strings.Contains(f["after"], `"id":2,`) && !strings.Contains(f["after"], `"t":"row"`) {
			t.Errorf("snapshot row 2 is not as of the slot's creation: %s", f["after"])
		}
	}

	type change struct{ op, table, key, before, after, toast string }
	want := []change{
		{`"insert"`, `"types"`, "", `null`, fmt.Sprintf(typesAfter, 1000, `"small"`), ""},
		{`"update"`, `"types"`, "", `null`, `{"id":2,"i2":null,"i4":2,"i8":null,"n":null,"n2":null,"f4":null,"f8":null,"fnan":null,"b":null,"t":"two","vc":null,"ts":null,"tstz":null,"d":null,"j":null,"jb":null,"by":null,"u":null,"ia":null,"ta":null,"na":null,"tsa":null,"jba":null,"big":null}`, ""},
		{`"delete"`, `"types"`, "", `{"id":3}`, `null`, ""},
		{`"update"`, `"types"`, "", `null`, strings.Replace(strings.Replace(fmt.Sprintf(typesAfter, 1, `X`), `,"big":X}`, `}`, 1), `"i4":2147483647`, `"i4":7`, 1), `["big"]`},
		{`"update"`, `"other"`, "", `null`, `{"k":"b","v":20}`, ""},
		{`"update"`, `"types"`, "", `{"id":5}`, `{"id":500,"i2":null,"i4":5,"i8":null,"n":null,"n2":null,"f4":null,"f8":null,"fnan":null,"b":null,"t":"row","vc":null,"ts":null,"tstz":null,"d":null,"j":null,"jb":null,"by":null,"u":null,"ia":null,"ta":null,"na":null,"tsa":null,"jba":null,"big":null}`, ""},
		{`"delete"`, `"types"`, "", `{"id":1000}`, `null`, ""},
		{`"insert"`, `"other"`, "", `null`, `{"k":"c","v":3}`, ""},
	}
	if len(changes) != len(want) {
		for _, c := range changes {
			t.Logf("change %v", c)
		}
		t.Fatalf("%d changes, want %d (each once)", len(changes), len(want))
	}
	var lastLSN string
	for i, w := range want {
		c := changes[i]
		g := change{c["op"], c["table"], "", c["before"], c["after"], c["unchanged_toast"]}
		if g != w {
			t.Errorf("change %d:\n got %+v\nwant %+v", i, g, w)
		}
		if c["lsn"] < lastLSN && len(c["lsn"]) == len(lastLSN) {
			t.Errorf("change %d: commit LSN %s before the previous change's %s", i, c["lsn"], lastLSN)
		}
		lastLSN = c["lsn"]
		if c["xid"] == "" || c["commit_time"] == "" {
			t.Errorf("change %d has no xid or commit_time: %v", i, c)
		}
	}
	// One transaction's changes share its commit LSN, xid and time.
	if changes[0]["lsn"] != changes[2]["lsn"] || changes[0]["xid"] != changes[2]["xid"] || changes[6]["lsn"] != changes[7]["lsn"] {
		t.Errorf("the changes of one transaction differ in lsn or xid: %v / %v", changes[0], changes[2])
	}
	if changes[0]["lsn"] == changes[3]["lsn"] {
		t.Errorf("two transactions share an LSN")
	}
	// Keys: the primary key, from the new row, or the old one for a delete.
	keys := map[string]bool{}
	for _, o := range got {
		keys[o.key] = true
	}
	for _, k := range []string{`{"id":1000}`, `{"id":500}`, `{"id":3}`, `{"k":"c"}`} {
		if !keys[k] {
			t.Errorf("no record with key %s", k)
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(bytes.TrimSpace(b))
}
