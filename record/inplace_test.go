package record_test

import (
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/record"
)

// inplaceKeys are the member names of the generated objects: "\u0061" is
// "a" written with an escape, so an object may read a name twice in two
// spellings.
var inplaceKeys = []string{`a`, `b`, `c`, `ab`, `\u0061`, `caf\u00e9`, `café`}

// decodedKey is the name a key of inplaceKeys spells.
func decodedKey(k string) string {
	switch k {
	case `\u0061`:
		return "a"
	case `caf\u00e9`:
		return "café"
	}
	return k
}

// Guarantee: an object whose changes are sets and deletions of names it
// reads at most once is written in one walk (appendInPlace takes it), and
// whatever that walk takes it writes exactly as the general layout does,
// with the original's spacing inside members and none between them. A walk
// that gives up leaves dst as it was.
func TestObjInPlaceIsTheLayout(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "members")
		var b strings.Builder
		b.WriteString("{")
		read := map[string]int{}
		for i := range n {
			if i > 0 {
				b.WriteString(rapid.SampledFrom([]string{",", " , ", ",\n"}).Draw(t, "comma"))
			}
			k := rapid.SampledFrom(inplaceKeys).Draw(t, "key")
			read[decodedKey(k)]++
			b.WriteString(`"` + k + `"` + rapid.SampledFrom([]string{":", " : "}).Draw(t, "colon"))
			b.WriteString(rapid.SampledFrom([]string{"1", "[1, 2]", `{"x" : 1}`, `"s"`, "1.50"}).Draw(t, "value"))
		}
		b.WriteString("}")
		o, err := record.ParseObj([]byte(b.String()))
		if err != nil {
			t.Fatalf("%s: %v", b.String(), err)
		}
		names := []string{"a", "b", "c", "ab", "café", "new"}
		steps := rapid.IntRange(1, 5).Draw(t, "steps")
		renamed, twice := false, false
		for i := range steps {
			name := rapid.SampledFrom(names).Draw(t, "name")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				o.Delete(name)
			case 1:
				to := rapid.SampledFrom(names).Draw(t, "to")
				renamed = renamed || o.Rename(name, to) && name != to
				twice = twice || read[to] > 1
			default:
				o.Set(name, record.IntValue(int64(i)))
			}
			twice = twice || read[name] > 1
		}
		laid := string(record.AppendLaidOut(o, []byte("x")))
		got, ok := record.AppendInPlace(o, []byte("x"))
		if !ok {
			if string(got) != "x" {
				t.Fatalf("%s: a walk that gave up left %q", b.String(), got)
			}
			if !renamed && !twice {
				t.Fatalf("%s: the walk gave up on sets and deletions of names read once", b.String())
			}
			return
		}
		if string(got) != laid {
			t.Fatalf("%s:\n in place %s\n laid out %s", b.String(), got, laid)
		}
		if o.Changed() && string(o.AppendJSON(nil)) != laid[1:] {
			t.Fatalf("%s: AppendJSON gave %s, want %s", b.String(), o.AppendJSON(nil), laid[1:])
		}
	})
}

// Guarantee: the walk gives up on exactly what it cannot place: a member
// renamed, and a changed name read twice (in any spelling).
func TestObjInPlaceGivesUp(t *testing.T) {
	for _, c := range []struct {
		in    string
		steps []string
		ok    bool
	}{
		{`{"a":1,"b":2}`, []string{"a=5"}, true},
		{`{"a":1,"b":2}`, []string{"-a", "x=1"}, true},
		{`{"a":1,"b":2,"b":3}`, []string{"a=5"}, true}, // b is read twice but not changed
		{`{"a":1,"b":2}`, []string{"a>c"}, false},
		{`{"a":1,"b":2,"a":3}`, []string{"a=5"}, false},
		{`{"a":1,"b":2,"\u0061":3}`, []string{"a=5"}, false},
		{`{"a":1,"b":2,"a":3}`, []string{"-a"}, false},
		{`{"k":0}`, []string{"x=1", "x>y"}, true}, // an added member renamed keeps its own place
		{`{"to":1,"b":2}`, []string{"x=5", "x>to"}, false},
	} {
		o, err := record.ParseObj([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.steps {
			objStep(t, o, s)
		}
		got, ok := record.AppendInPlace(o, nil)
		if ok != c.ok {
			t.Errorf("%s %v: in place %v, want %v", c.in, c.steps, ok, c.ok)
			continue
		}
		if want := string(record.AppendLaidOut(o, nil)); ok && string(got) != want {
			t.Errorf("%s %v: in place %s, laid out %s", c.in, c.steps, got, want)
		}
	}
}

// Guarantee: the walk handles any number of changes, past its buffers.
func TestObjInPlaceManyChanges(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"keep":true`)
	for i := range 20 {
		b.WriteString(`,"m` + strconv.Itoa(i) + `":0`)
	}
	b.WriteString("}")
	o, err := record.ParseObj([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 19; i >= 0; i -= 2 {
		o.Set("m"+strconv.Itoa(i), record.IntValue(int64(i)))
		o.Set("n"+strconv.Itoa(i), record.IntValue(int64(i)))
	}
	got, ok := record.AppendInPlace(o, nil)
	if !ok {
		t.Fatal("the walk gave up on 20 sets")
	}
	if want := string(record.AppendLaidOut(o, nil)); string(got) != want {
		t.Fatalf("in place %s\nlaid out %s", got, want)
	}
}

// Guarantee: the members of a built object are added, not read: renaming
// one keeps its place among them.
func TestBuiltObjRenameKeepsThePlace(t *testing.T) {
	o := record.SortedObj(map[string]record.Value{"a": record.IntValue(1), "b": record.IntValue(2), "c": record.IntValue(3)})
	o.Rename("a", "z")
	if got, want := string(o.AppendJSON(nil)), `{"z":1,"b":2,"c":3}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// Guarantee: the empty name is a name like any other: read, set in its
// place and deleted.
func TestObjEmptyName(t *testing.T) {
	o, err := record.ParseObj([]byte(`{"":1,"a":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := o.Get(""); !ok || string(v.AppendJSON(nil)) != "1" {
		t.Fatalf(`Get("") = %s, %v`, v.AppendJSON(nil), ok)
	}
	o.Set("", record.IntValue(5))
	if got, want := string(o.AppendJSON(nil)), `{"":5,"a":2}`; got != want {
		t.Fatalf("set: got %s, want %s", got, want)
	}
	o.Delete("")
	if got, want := string(o.AppendJSON(nil)), `{"a":2}`; got != want {
		t.Fatalf("delete: got %s, want %s", got, want)
	}
}
