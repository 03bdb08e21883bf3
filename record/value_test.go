package record_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
)

func mustParse(t *testing.T, js string) record.Value {
	t.Helper()
	v, err := record.ParseValue([]byte(js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// elems lists an array's elements as written, through Elems.
func elems(v record.Value) []string {
	var out []string
	v.Elems(func(i int, e record.Value) bool {
		out = append(out, string(e.AppendJSON(nil)))
		return true
	})
	return out
}

// rangeMembers lists an object's members as written, through Range.
func rangeMembers(v record.Value) []string {
	var out []string
	v.Range(func(name string, e record.Value) bool {
		out = append(out, name+"="+string(e.AppendJSON(nil)))
		return true
	})
	return out
}

// Guarantee: an array reads the same whether it was read from a record
// (its elements found in its bytes, whatever the spacing) or built: its
// length, each element by index (none before 0 or past the end), and its
// elements in order.
func TestArrayElements(t *testing.T) {
	built := record.ArrayValue([]record.Value{record.IntValue(1), record.StringValue("x"), record.ArrayValue(nil)})
	cases := []struct {
		v     record.Value
		elems []string
	}{
		{mustParse(t, `[1,"x",[]]`), []string{`1`, `"x"`, `[]`}},
		{mustParse(t, ` [ 1 , "x" , [ ] ] `), []string{`1`, `"x"`, `[ ]`}},
		{built, []string{`1`, `"x"`, `[]`}},
		{mustParse(t, `[]`), nil},
		{mustParse(t, `[ ]`), nil},
		{record.ArrayValue(nil), nil},
		{mustParse(t, `[{"a":[1,2]},{}]`), []string{`{"a":[1,2]}`, `{}`}},
	}
	for _, c := range cases {
		src := string(c.v.AppendJSON(nil))
		if got := elems(c.v); !slices.Equal(got, c.elems) {
			t.Errorf("%s: Elems gives %q, want %q", src, got, c.elems)
		}
		want := c.elems
		if c.v.Len() != len(want) {
			t.Errorf("%s: Len = %d, want %d", src, c.v.Len(), len(want))
		}
		for i := -1; i <= len(want); i++ {
			e, ok := c.v.Index(i)
			if in := i >= 0 && i < len(want); ok != in || in && string(e.AppendJSON(nil)) != want[i] {
				t.Errorf("%s: Index(%d) = %s, %v", src, i, e.AppendJSON(nil), ok)
			}
		}
		calls := 0
		c.v.Elems(func(int, record.Value) bool { calls++; return false })
		if calls != min(1, len(want)) {
			t.Errorf("%s: Elems went on after false: %d calls", src, calls)
		}
	}
	for _, v := range []record.Value{record.IntValue(1), mustParse(t, `{"a":1}`), record.StringValue("[1]")} {
		if _, ok := v.Index(0); ok || v.Kind() != record.Object && v.Len() != 0 || len(elems(v)) != 0 {
			t.Errorf("%s is no array, yet it has elements", v.AppendJSON(nil))
		}
	}
}

// Guarantee: an object reads the same whether it was read or built: a
// member by name (the last of duplicates, escaped names decoded), its
// number of members (of duplicates, one), and its members in the order
// they are written, duplicates at the place of the last.
func TestObjectMembers(t *testing.T) {
	o := record.NewObj()
	o.Set("b", record.IntValue(2))
	o.Set("a", record.IntValue(3))
	cases := []struct {
		v       record.Value
		members []string
	}{
		{mustParse(t, `{"a":1,"b":[2],"a":3}`), []string{`b=[2]`, `a=3`}},
		{mustParse(t, ` { "a" : 1 , "b" : [ 2 ] } `), []string{`a=1`, `b=[ 2 ]`}},
		{mustParse(t, `{"\u0061":1,"b":2,"a":3}`), []string{`b=2`, `a=3`}},
		{mustParse(t, `{"":1,"a\u0062":2}`), []string{`=1`, `ab=2`}},
		{mustParse(t, `{}`), nil},
		{mustParse(t, `{ }`), nil},
		{record.ObjectValue(o), []string{`b=2`, `a=3`}},
	}
	for _, c := range cases {
		src := string(c.v.AppendJSON(nil))
		if got := rangeMembers(c.v); !slices.Equal(got, c.members) {
			t.Errorf("%s: Range gives %q, want %q", src, got, c.members)
		}
		want := c.members
		if c.v.Len() != len(want) {
			t.Errorf("%s: Len = %d, want %d", src, c.v.Len(), len(want))
		}
		for _, m := range want {
			name, val, _ := strings.Cut(m, "=")
			if got, ok := c.v.Get(name); !ok || string(got.AppendJSON(nil)) != val {
				t.Errorf("%s: Get(%q) = %s, %v; want %s", src, name, got.AppendJSON(nil), ok, val)
			}
		}
		if got, ok := c.v.Get("missing"); ok || !got.IsNull() {
			t.Errorf("%s: Get(missing) = %s, %v", src, got.AppendJSON(nil), ok)
		}
		calls := 0
		c.v.Range(func(string, record.Value) bool { calls++; return false })
		if calls != min(1, len(want)) {
			t.Errorf("%s: Range went on after false: %d calls", src, calls)
		}
	}
	for _, v := range []record.Value{record.IntValue(1), mustParse(t, `[{"a":1}]`), record.StringValue(`{"a":1}`)} {
		if _, ok := v.Get("a"); ok || len(rangeMembers(v)) != 0 || v.Kind() != record.Array && v.Len() != 0 {
			t.Errorf("%s is no object, yet it has members", v.AppendJSON(nil))
		}
	}
}

// Guarantee: each kind of value is written as its JSON: a value read as
// its bytes, a built one in JSON's form for it.
func TestAppendJSONOfEachKind(t *testing.T) {
	o := record.NewObj()
	o.Set("a", record.ArrayValue([]record.Value{record.IntValue(1), record.NullValue()}))
	ts := time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.FixedZone("", 3600))
	cases := []struct {
		v    record.Value
		want string
	}{
		{record.NullValue(), `null`},
		{record.BoolValue(true), `true`},
		{record.BoolValue(false), `false`},
		{record.IntValue(-9223372036854775808), `-9223372036854775808`},
		{record.FloatValue(2.5), `2.5`},
		{record.NumberLiteral("1.50e+2"), `1.50e+2`},
		{record.StringValue("a\"b"), `"a\"b"`},
		{mustParse(t, `"a\u0022b"`), `"a\u0022b"`},
		{record.ObjectValue(o), `{"a":[1,null]}`},
		{mustParse(t, `{ "a" : [ 1 ] }`), `{ "a" : [ 1 ] }`},
		{record.ArrayValue([]record.Value{record.IntValue(1), record.IntValue(2), record.IntValue(3)}), `[1,2,3]`},
		{record.ArrayValue([]record.Value{record.StringValue("x")}), `["x"]`},
		{record.ArrayValue(nil), `[]`},
		{record.TimeValue(ts), `"2024-02-29T23:59:58.123456789+01:00"`},
		{record.DurationValue(90 * time.Second), `"1m30s"`},
	}
	for _, c := range cases {
		if got := string(c.v.AppendJSON(nil)); got != c.want {
			t.Errorf("%v value written as %s, want %s", c.v.Kind(), got, c.want)
		}
	}
}

// Guarantee: the accessors of simple values give what was stored.
func TestScalarAccessors(t *testing.T) {
	if !record.NullValue().IsNull() || record.IntValue(0).IsNull() || record.BoolValue(false).IsNull() || mustParse(t, `null`).Kind() != record.Null {
		t.Error("IsNull is wrong")
	}
	if !record.BoolValue(true).Bool() || record.BoolValue(false).Bool() || !mustParse(t, `true`).Bool() || mustParse(t, `false`).Bool() {
		t.Error("Bool is wrong")
	}
	ts := time.Unix(1700000000, 5)
	if got := record.TimeValue(ts).Time(); !got.Equal(ts) {
		t.Errorf("Time = %v", got)
	}
	if got := record.DurationValue(-3 * time.Millisecond).Duration(); got != -3*time.Millisecond {
		t.Errorf("Duration = %v", got)
	}
	for _, c := range []struct {
		v    record.Value
		want string
	}{
		{record.IntValue(-12), "-12"},
		{record.FloatValue(1e21), "1e+21"},
		{record.NumberLiteral("1.0"), "1.0"},
		{record.StringValue("1"), ""},
	} {
		if got := c.v.Literal(); got != c.want {
			t.Errorf("%v Literal = %q, want %q", c.v.Kind(), got, c.want)
		}
	}
	kinds := map[record.Kind]string{record.Null: "null", record.Bool: "bool", record.Int: "int", record.Float: "float",
		record.Number: "number", record.String: "string", record.Object: "object", record.Array: "array",
		record.Time: "time", record.Duration: "duration"}
	for k, name := range kinds {
		if k.String() != name {
			t.Errorf("Kind %d is %q, want %q", k, k.String(), name)
		}
	}
}

// Guarantee: Raw gives the JSON text a value was read from, where it keeps
// one: a number's literal, an object or array as read, and a string read
// with escapes (or with the bytes of a lone surrogate, which writing would
// escape). A string read without them is held as its text, which is written
// back as it was read; a value computed or built has no text of its own.
func TestRawIsTheTextAsRead(t *testing.T) {
	o := record.NewObj()
	cases := []struct {
		v   record.Value
		raw string
		ok  bool
	}{
		{mustParse(t, `12.50`), `12.50`, true},
		{record.NumberLiteral("-0"), `-0`, true},
		{mustParse(t, `{ "a" : 1 }`), `{ "a" : 1 }`, true},
		{mustParse(t, `[ 1 ]`), `[ 1 ]`, true},
		{mustParse(t, `"a\"b"`), `"a\"b"`, true},
		{mustParse(t, "\"\xed\xa0\x80\""), "\"\xed\xa0\x80\"", true},
		{mustParse(t, `"ab"`), ``, false},
		{mustParse(t, `""`), ``, false},
		{mustParse(t, `true`), ``, false},
		{mustParse(t, `null`), ``, false},
		{record.IntValue(1), ``, false},
		{record.FloatValue(1), ``, false},
		{record.StringValue(`"a"`), ``, false},
		{record.ObjectValue(o), ``, false},
		{record.ArrayValue(nil), ``, false},
	}
	for _, c := range cases {
		raw, ok := c.v.Raw()
		if raw != c.raw || ok != c.ok {
			t.Errorf("%s: Raw = %q, %v; want %q, %v", c.v.AppendJSON(nil), raw, ok, c.raw, c.ok)
		}
	}
	// A string held as its text is written as it was read.
	for _, js := range []string{`"ab"`, "\"a\xffb\"", `"<>&"`} {
		if got := string(mustParse(t, js).AppendJSON(nil)); got != js {
			t.Errorf("%q written as %q", js, got)
		}
	}
}

// Guarantee: an EncodedArray is the array of its elements in every way, and
// is written as ArrayValue writes it, alone or as a member of an object,
// with strings that need escapes and bytes that are not UTF-8 included.
func TestEncodedArrayIsItsElements(t *testing.T) {
	elems := []record.Value{record.StringValue("a\"\n"), record.StringValue("\xff\xed\xa0\x80"), record.IntValue(-3),
		record.FloatValue(0.1), record.NumberLiteral("1e400"), record.NullValue(), record.BoolValue(true),
		record.ArrayValue([]record.Value{record.StringValue("in")})}
	for _, es := range [][]record.Value{elems, elems[:1], nil} {
		plain, enc := record.ArrayValue(es), record.EncodedArray(es)
		want := string(plain.AppendJSON(nil))
		if got := string(enc.AppendJSON(nil)); got != want {
			t.Errorf("EncodedArray written as %s, want %s", got, want)
		}
		o := record.NewObj()
		o.Set("x", enc)
		if got := string(o.AppendJSON(nil)); got != `{"x":`+want+`}` {
			t.Errorf("EncodedArray as a member written as %s, want {\"x\":%s}", got, want)
		}
		if enc.Kind() != record.Array || enc.Len() != len(es) {
			t.Errorf("EncodedArray of %d elements: kind %v, length %d", len(es), enc.Kind(), enc.Len())
		}
		if _, raw := enc.Raw(); raw {
			t.Errorf("EncodedArray %s reports JSON text as read", want)
		}
		enc.Elems(func(i int, e record.Value) bool {
			if got, ok := enc.Index(i); !ok || e.Kind() != es[i].Kind() || string(got.AppendJSON(nil)) != string(es[i].AppendJSON(nil)) {
				t.Errorf("element %d of %s: %v %s, want %v", i, want, e.Kind(), got.AppendJSON(nil), es[i].Kind())
			}
			return true
		})
	}
}
