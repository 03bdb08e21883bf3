package transform_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// These tests state the fidelity guarantee from outside the package, with
// encoding/json as the independent reader: a map that renames or sets one
// field gives a value equal to its input except for that field. Equal means
// both that the values decode to the same thing with numbers kept as their
// literals (UseNumber), and that every other top-level member's bytes are
// the input's, in the input's order.

// tb is what the checks need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// member is one top-level member as encoding/json reads it: its name and
// its value's bytes exactly as written.
type member struct {
	name string
	raw  string
}

// members reads the top-level members of the JSON object b in order, with
// the raw bytes of each value, and reports whether b is one object.
func members(t tb, b []byte) []member {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %q (%v)", b, err)
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		out = append(out, member{k.(string), string(raw)})
	}
	return out
}

// effective returns what a decoder that keeps the last of duplicate names
// sees: name to raw value, and the names in the order of their last
// occurrence.
func effective(ms []member) (map[string]string, []string) {
	m := map[string]string{}
	for _, x := range ms {
		m[x.name] = x.raw
	}
	var order []string
	seen := map[string]bool{}
	for i := len(ms) - 1; i >= 0; i-- {
		if !seen[ms[i].name] {
			seen[ms[i].name] = true
			order = append([]string{ms[i].name}, order...)
		}
	}
	return m, order
}

// exact decodes raw JSON with numbers as their literals.
func exact(t tb, raw string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return v
}

func sameExact(t tb, a, b string) bool {
	return fmt.Sprintf("%#v", exact(t, a)) == fmt.Sprintf("%#v", exact(t, b))
}

// checkMap runs a map that changes field (renaming it to newName when
// newName is set, else setting it to setExpr, whose JSON is setJSON) on in
// and checks the output against the guarantee.
func checkMap(t tb, in []byte, field, newName, setExpr, setJSON string) {
	t.Helper()
	cfg := transform.MapConfig{}
	if newName != "" {
		cfg.Rename = []transform.Rename{{From: field, To: newName}}
	} else {
		cfg.Set = []transform.Assignment{{Field: field, Expr: setExpr}}
	}
	m, err := transform.NewMap(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := record.New(bytes.Clone(in))
	outs, err := m.Process(&r, nil)
	if err != nil {
		t.Fatalf("map on %q: %v", in, err)
	}
	out, err := outs[0].Value()
	if err != nil {
		t.Fatal(err)
	}
	inM, inOrder := effective(members(t, in))
	outM, outOrder := effective(members(t, out))
	changed := map[string]bool{field: true, newName: true}
	// Every other member: the same bytes, in the same order.
	var inRest, outRest []string
	for _, n := range inOrder {
		if !changed[n] {
			inRest = append(inRest, n)
		}
	}
	for _, n := range outOrder {
		if !changed[n] {
			outRest = append(outRest, n)
		}
	}
	if strings.Join(inRest, "\x00") != strings.Join(outRest, "\x00") {
		t.Fatalf("order of untouched members changed:\n in  %q\n out %q", in, out)
	}
	for _, n := range inRest {
		if inM[n] != outM[n] {
			t.Fatalf("member %q changed: %q became %q\n in  %q\n out %q", n, inM[n], outM[n], in, out)
		}
	}
	// The changed member.
	if newName != "" {
		old, had := inM[field]
		if _, still := outM[field]; still && field != newName {
			t.Fatalf("renamed member %q is still there: %q", field, out)
		}
		if had && outM[newName] != old {
			t.Fatalf("renamed member: %q became %q under %q\n in  %q\n out %q", old, outM[newName], newName, in, out)
		}
		if !had {
			if nv, ok := inM[newName]; ok && outM[newName] != nv {
				t.Fatalf("rename of a missing member changed %q", newName)
			}
		}
	} else if !sameExact(t, outM[field], setJSON) {
		t.Fatalf("set %s = %s gave %q", field, setExpr, outM[field])
	}
	// And the values as a whole, decoded exactly, differ only there.
	want := map[string]any{}
	for n, raw := range inM {
		if !changed[n] {
			want[n] = exact(t, raw)
		}
	}
	got := map[string]any{}
	for n, raw := range outM {
		if !changed[n] {
			got[n] = exact(t, raw)
		}
	}
	if fmt.Sprintf("%#v", want) != fmt.Sprintf("%#v", got) {
		t.Fatalf("decoded values differ:\n in  %q\n out %q", in, out)
	}
}

// Generators of JSON text that is easy to get wrong.

var genNumber = rapid.OneOf(
	rapid.Custom(func(t *rapid.T) string { return strconv.FormatInt(rapid.Int64().Draw(t, "i"), 10) }),
	rapid.SampledFrom([]string{
		"12345678901234567891", "9007199254740993", "123456789012345678901234567890",
		"-0", "-0.0", "0.0", "1e3", "1E+2", "-1.5e-7", "1e400", "1.000", "0.10000000000000000001",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616", "2.5", "1e-400",
	}),
	rapid.Custom(func(t *rapid.T) string {
		return rapid.StringMatching(`-?[1-9][0-9]{0,30}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?`).Draw(t, "lit")
	}),
)

var genString = rapid.OneOf(
	rapid.Custom(func(t *rapid.T) string {
		b, _ := json.Marshal(rapid.String().Draw(t, "s"))
		return string(b)
	}),
	rapid.SampledFrom([]string{
		`"caf\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u0000"`,
		"\"\xff\xfe\"", "\"\xed\xa0\x80\"", "\"\xc3\"", `""`, `"é€😀"`, `"\u2028"`, `"<&>"`,
	}),
	rapid.Custom(func(t *rapid.T) string {
		return `"` + strings.Repeat("x", rapid.IntRange(100, 5000).Draw(t, "long")) + `"`
	}),
)

func genValue(depth int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		choices := 5
		if depth < 40 {
			choices = 7
		}
		switch rapid.IntRange(0, choices-1).Draw(t, "kind") {
		case 0:
			return genNumber.Draw(t, "num")
		case 1:
			return genString.Draw(t, "str")
		case 2:
			return rapid.SampledFrom([]string{"true", "false", "null"}).Draw(t, "lit")
		case 3:
			return genNumber.Draw(t, "num")
		case 4:
			return genString.Draw(t, "str")
		case 5:
			n := rapid.IntRange(0, 3).Draw(t, "n")
			var parts []string
			for range n {
				parts = append(parts, genValue(depth+1).Draw(t, "elem"))
			}
			return "[" + strings.Join(parts, rapid.SampledFrom([]string{",", " , ", ",\n"}).Draw(t, "sep")) + "]"
		default:
			return genObject(depth+1).Draw(t, "obj")
		}
	})
}

var genKey = rapid.SampledFrom([]string{`"a"`, `"b"`, `"id"`, `"z"`, `"name"`, `"\u0061"`, `"caf\u00e9"`, `"é"`, `"k\"q"`, `""`, "\"\xff\""})

func genObject(depth int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(0, 6).Draw(t, "members")
		var parts []string
		for range n {
			sp := rapid.SampledFrom([]string{"", " ", "\t"}).Draw(t, "sp")
			parts = append(parts, genKey.Draw(t, "key")+sp+":"+sp+genValue(depth).Draw(t, "value"))
		}
		return "{" + strings.Join(parts, ",") + "}"
	})
}

// deep nests v in n arrays and objects.
func deep(n int, v string) string {
	for i := range n {
		if i%2 == 0 {
			v = "[" + v + "]"
		} else {
			v = `{"d":` + v + "}"
		}
	}
	return v
}

// Guarantee: map renaming or setting one field changes only that field,
// for generated objects holding big and odd numbers, escapes, surrogates,
// invalid UTF-8, duplicate names, deep nesting and long strings.
func TestMapChangesOnlyItsField(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		obj := genObject(0).Draw(t, "object")
		if rapid.Bool().Draw(t, "deep") {
			obj = obj[:len(obj)-1]
			if len(obj) > 1 {
				obj += ","
			}
			obj += `"deep":` + deep(rapid.IntRange(50, 500).Draw(t, "depth"), "1") + "}"
		}
		field := rapid.SampledFrom([]string{"a", "b", "id", "z", "name", "missing", "é"}).Draw(t, "field")
		if rapid.Bool().Draw(t, "rename") {
			checkMap(t, []byte(obj), field, rapid.SampledFrom([]string{"renamed", "z", "b"}).Draw(t, "to"), "", "")
			return
		}
		set := rapid.SampledFrom([][2]string{
			{`"new"`, `"new"`}, {`"x" + string(9223372036854775807)`, `"x9223372036854775807"`}, {`1.5`, `1.5`}, {`[1, "x"]`, `[1,"x"]`},
			{`{"q": -1}`, `{"q":-1}`}, {`null`, `null`}, {`"caf\u00e9 \"\n"`, `"caf\u00e9 \"\n"`},
		}).Draw(t, "set")
		checkMap(t, []byte(obj), field, "", set[0], set[1])
	})
}

// FuzzMapChangesOnlyItsField checks the same guarantee on any object the
// fuzzer finds. The seed corpus runs in go test.
func FuzzMapChangesOnlyItsField(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"big":12345678901234567891,"x":9007199254740993,"y":123456789012345678901234567890,"z":1}`,
		`{"z":1,"a":2}`,
		"{\"a\":\"\xff\",\"b\":\"\\ud800\",\"c\":-0,\"d\":1e400,\"e\":1.000}",
		`{"a":1,"a":2,"b":{"a":3},"a":4}`,
		`{"a" : [1, 2 ,{"b" :"\u00e9"}] , "n":null}`,
		`{"d":` + deep(300, `"x"`) + `,"a":"` + strings.Repeat("y", 3000) + `"}`,
		`{}`,
		`{"\u0061":1,"a":2}`,
	} {
		f.Add([]byte(s), "a", true)
		f.Add([]byte(s), "b", false)
	}
	f.Fuzz(func(t *testing.T, in []byte, field string, rename bool) {
		if !json.Valid(in) {
			return
		}
		if tok, _ := json.NewDecoder(bytes.NewReader(in)).Token(); tok != json.Delim('{') {
			return
		}
		if strings.Contains(field, ".") || field == "" || field == "fuzzed" || !utf8.ValidString(field) {
			return
		}
		if rename {
			checkMap(t, in, field, "fuzzed", "", "")
		} else {
			checkMap(t, in, field, "", `"v"`, `"v"`)
		}
	})
}
