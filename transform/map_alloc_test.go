package transform

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
)

// Guarantee: a map of the common shapes (integer arithmetic, a string built
// from a constant and an integer, a constant array) allocates nothing per
// record: the fast paths are taken, build the string in the env's buffer,
// and the output is cut from the env's slab (one allocation for hundreds
// of records).
func TestMapOfCommonShapesAllocatesNothingPerRecord(t *testing.T) {
	m, err := NewMap(MapConfig{Set: []Assignment{
		{"user", `"u" + string(id % 1000)`},
		{"amount", `((id * 7919) % 100000) / 100`},
		{"tags", `["a", "b"]`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(`{"id":100123,"name":"abc","amount":12.5,"region":"eu","user":{"age":33}}`)
	slot := new(record.Record)
	out := make([]record.Record, 0, 1)
	run := func() {
		*slot = record.New(value)
		if out, err = m.Process(slot, out[:0]); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if got, want := string(out[0].Bytes()), `{"id":100123,"name":"abc","amount":740.37,"region":"eu","user":"u123","tags":["a","b"]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if raceEnabled {
		t.Skip("allocation counts do not hold under the race detector (sync.Pool drops envs)")
	}
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Errorf("the map allocates %v times per record, want 0", n)
	}
}

// Guarantee: the values a map writes into its slab are each the record's
// own: every one keeps its bytes while later records are written, into the
// same slab and into new ones, and one appended to cannot write over the
// next (it has no room after it). A value too large for a slab is written
// whole too.
func TestMapOutputsKeepTheirBytes(t *testing.T) {
	m, err := NewMap(MapConfig{Set: []Assignment{{"n", "id * 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", slabSize)
	var kept [][]byte
	var want []string
	for i := range 2000 {
		pad := ""
		if i%500 == 7 {
			pad = big
		}
		r := record.New(fmt.Appendf(nil, `{"id":%d,"pad":"%s"}`, i, pad))
		out, err := m.Process(&r, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := out[0].Bytes()
		if cap(v) != len(v) {
			t.Fatalf("record %d: value has room after it (len %d, cap %d)", i, len(v), cap(v))
		}
		kept = append(kept, v)
		want = append(want, fmt.Sprintf(`{"id":%d,"pad":"%s","n":%d}`, i, pad, 2*i))
		_ = append(v, "garbage"...) // must not reach the next value
	}
	for i := range kept {
		if string(kept[i]) != want[i] {
			t.Fatalf("record %d: value became %.80s, want %.80s", i, kept[i], want[i])
		}
	}
}

// Guarantee: the strings a record's evaluations build in the env's buffer
// keep their bytes until the record is written, when a later set builds
// more of them and when the buffer grows and moves (long is longer than
// anything the buffer held); the next record's strings do not change the
// first record's output.
func TestBuiltStringsLastTheRecord(t *testing.T) {
	m, err := NewMap(MapConfig{Set: []Assignment{
		{"a", `"x" + string(id)`},
		{"b", `"y" + string(id * 2)`},
		{"c", `a + "-" + b`},
		{"d", `c + long + c`},
		{"e", `a + b`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("L", 5000)
	var outs []string
	for _, id := range []string{"1", "22"} {
		in := new(record.Record)
		*in = record.New([]byte(`{"id":` + id + `,"long":"` + long + `"}`))
		out, err := m.Process(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(out[0].Bytes()))
	}
	want := func(id, twice string) string {
		a, b := "x"+id, "y"+twice
		c := a + "-" + b
		return `{"id":` + id + `,"long":"` + long + `","a":"` + a + `","b":"` + b + `","c":"` + c + `","d":"` + c + long + c + `","e":"` + a + b + `"}`
	}
	if outs[0] != want("1", "2") || outs[1] != want("22", "44") {
		t.Errorf("outputs:\n%.200s\n%.200s", outs[0], outs[1])
	}
}
