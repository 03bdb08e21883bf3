package record_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/weir-etl/weir/record"
)

func TestSize(t *testing.T) {
	// The struct's size on 64-bit platforms: a change of the struct must
	// change this figure knowingly.
	if record.Overhead != 200 {
		t.Errorf("Overhead = %d, want the 200 bytes of Record's struct", record.Overhead)
	}
	r := record.New(make([]byte, 100))
	if got := r.Size(); got != 100+record.Overhead {
		t.Errorf("Size = %d, want 100 bytes of value plus the struct's %d", got, record.Overhead)
	}
	r.Key = make([]byte, 10)
	r.Headers = []record.Header{{Key: "abc", Value: make([]byte, 7)}, {Key: "d", Value: nil}}
	hdr := int(unsafe.Sizeof(record.Header{}))
	if got := r.Size(); got != 100+record.Overhead+10+10+hdr+1+hdr {
		t.Errorf("Size = %d, want value, key, header keys, values and structs plus the record's struct", got)
	}
	var empty record.Record
	if got := empty.Size(); got != record.Overhead {
		t.Errorf("Size of an empty record = %d, want %d", got, record.Overhead)
	}
}

// SetOrigin sets the three fields of the record's origin, and nothing of the
// record beside it in the slice.
func TestSetOriginSetsEveryField(t *testing.T) {
	recs := make([]record.Record, 2)
	recs[1].SetOrigin("in", "orders/3", 42)
	if want := (record.Origin{Source: "in", Partition: "orders/3", Offset: 42}); recs[1].Origin != want {
		t.Errorf("Origin = %+v, want %+v", recs[1].Origin, want)
	}
	if recs[0].Origin != (record.Origin{}) {
		t.Errorf("the record beside it changed: %+v", recs[0].Origin)
	}
}

// lookupCorpus is JSON that is easy to get subtly wrong: escapes, unicode,
// invalid UTF-8, duplicate keys, number forms, nesting, whitespace, and
// documents that encoding/json rejects, some of them only in a field that
// nobody asks for.
var lookupCorpus = []string{
	`{"id":1,"name":"abc","amount":12.5,"region":"eu"}`,
	`{}`,
	" \t\r\n{ \"a\" : 1 ,\n\"b\" : [ ] , \"c\":{ } }\r\n ",
	`{"a":"x\"y\\z\/\b\f\n\r\t\u00e9\ud83d\ude00"}`,
	`{"a":"\ud800","b":"\udc00x","c":"\ud83dx","d":"\u0000"}`,
	"{\"a\":\"\xff\",\"b\":\"\xed\xa0\x80\",\"c\":\"\xef\xbf\xbd\",\"\xfe\":1}",
	`{"名前":"値","a":"é€😀"}`,
	`{"\u0069d":5,"i\u0064":6,"a\u0000b":7}`,
	`{"a":1,"a":{"x":2},"b":1,"a":[3]}`,
	`{"a":{"b":[1,{"c":null,"c":false}],"d":true,"e":"s"},"z":[[[]],{}]}`,
	`{"a":1e3,"b":-0,"c":0.0,"d":1E-2,"e":-1.5e+2,"f":1e-400,"g":1e308,"h":-0.0}`,
	`{"a":12345678901234567890,"b":9007199254740993,"c":-9223372036854775808,"d":0.1}`,
	`{"a":999999999999999,"b":-123456789012345,"c":1000000000000000,"d":0,"e":-0.5,"f":10}`,
	`{"a":` + strings.Repeat("9", 299) + `}`,
	`{"t":true,"f":false,"n":null,"s":"","e":[],"o":{}}`,
	`{"a":[1,"x",null,true,{"b":[]}]}`,
	`{"a":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`,
	// The hex digits of an escape, at each end of each range.
	`{"a":"\u09aA\ufFFf","b":"\u0000"}`,
	// Containers are tracked 64 to a word: objects at the end of the
	// first word (the 63rd and 64th levels) inside arrays, and objects
	// and arrays beyond the four words kept without allocating.
	`{"a":` + strings.Repeat("[", 62) + `{"a":{"a":1,"b":2},"b":3}` + strings.Repeat("]", 62) + `}`,
	strings.Repeat(`{"a":`, 200) + strings.Repeat("[1,", 100) + `{"b":1,"c":2}` + strings.Repeat("]", 100) + strings.Repeat("}", 200),
	// Rejected by encoding/json.
	``,
	`   `,
	`{`,
	`{"a":1`,
	`{"a":1}x`,
	`{"a":1} {"b":2}`,
	`{"a":1}}`,
	`{"a":1,}`,
	`{,}`,
	`{"a" 1}`,
	`{"a":}`,
	`{'a':1}`,
	`{a:1}`,
	`{"a":01}`,
	`{"a":-01}`,
	`{"a":1.}`,
	`{"a":.5}`,
	`{"a":+1}`,
	`{"a":-}`,
	`{"a":1e}`,
	`{"a":1e+}`,
	`{"a":0x10}`,
	`{"a":NaN}`,
	`{"a":Infinity}`,
	`{"a":1e400}`,
	`{"b":1e400,"a":1}`,
	`{"a":1,"b":-1e999}`,
	`{"a":1,"b":` + strings.Repeat("9", 400) + `}`,
	`{"a":tru}`,
	`{"a":nul,"b":1}`,
	`{"a":truex}`,
	`{"a":[1,2,]}`,
	`{"a":[1 2]}`,
	`{"a":{"b":1,}}`,
	`{"a":{"b"}}`,
	`{"a":[}`,
	`{"a":"abc}`,
	`{"a":"\q"}`,
	`{"a":"\u12"}`,
	`{"a":"\u12g4"}`,
	`{"a":"\u00/0"}`,
	`{"a":"\u00:0"}`,
	`{"a":"\u00@0"}`,
	`{"a":"\u00G0"}`,
	"{\"a\":\"\\u00`0\"}",
	`{"a":"\u00g0"}`,
	"{\"a\":\"x\x01y\"}",
	"{\"a\x1f\":1}",
	"\xef\xbb\xbf{\"a\":1}",
	`{"a":1,"b":"ok","c":[1,2,` + "\x00" + `]}`,
	`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	// Valid JSON that is not an object.
	`[1,2]`,
	`"text"`,
	`null`,
	`12`,
}

// Guarantee: the scanner accepts exactly the JSON that encoding/json's
// Valid accepts (numbers of any size, strings with bytes that are not
// UTF-8, nesting to 10000 levels), so that weir never rejects what a
// standard reader takes, nor passes what it refuses.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, js := range lookupCorpus {
		checkValid(t, []byte(js))
	}
	for _, depth := range []int{9999, 10000, 10001} {
		checkValid(t, []byte(strings.Repeat("[", depth)+strings.Repeat("]", depth)))
	}
}

func checkValid(t *testing.T, b []byte) {
	t.Helper()
	err := record.Valid(b)
	if (err == nil) != json.Valid(b) {
		t.Fatalf("%.80q: weir says %v, encoding/json says valid=%v", b, err, json.Valid(b))
	}
	var se *record.SyntaxError
	if err != nil && !errors.As(err, &se) {
		t.Fatalf("%.80q: error %v is not a *SyntaxError", b, err)
	}
}

// FuzzValid compares the scanner's verdict with encoding/json's on
// arbitrary input.
func FuzzValid(f *testing.F) {
	for _, js := range lookupCorpus {
		f.Add([]byte(js))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValid(t, b) })
}

// rawMembers returns encoding/json's view of an object's members: the last
// of duplicates, each value's bytes exactly as written.
func rawMembers(b []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// Guarantee: Lookup finds every named member's bytes exactly as written
// (the last of duplicates, as a decoder keeps), rejects what is not an
// object, and decodes nothing: the values point into the record's bytes.
func TestLookupGivesTheBytesAsWritten(t *testing.T) {
	for _, js := range lookupCorpus {
		checkLookup(t, []byte(js))
	}
}

func checkLookup(t *testing.T, b []byte) {
	t.Helper()
	names := []string{"a", "b", "id", "missing", "\ufffd", "c", "d", "e", "f", "g", "h", "i"}
	want, isObject := rawMembers(b)
	for k := range want {
		names = append(names, k)
	}
	r := record.New(b)
	vals := make([]record.Value, len(names))
	found := make([]bool, len(names))
	err := r.Lookup(names, vals, found)
	if (err == nil) != isObject {
		if json.Valid(b) && !isObject && errors.Is(err, record.ErrNotObject) {
			return
		}
		t.Fatalf("%.80q: Lookup error %v, encoding/json object=%v", b, err, isObject)
	}
	if err != nil {
		return
	}
	for i, n := range names {
		if strings.ContainsRune(n, utf8.RuneError) && !utf8.Valid(b) {
			continue // encoding/json replaced bytes of the name; weir keeps them
		}
		raw, ok := want[n]
		if found[i] != ok {
			t.Fatalf("%.80q: %q found=%v, encoding/json %v", b, n, found[i], ok)
		}
		if !ok {
			continue
		}
		if got := string(vals[i].AppendJSON(nil)); got != string(raw) {
			t.Fatalf("%.80q: %q = %q, written %q", b, n, got, raw)
		}
	}
}

// FuzzLookup runs the same comparison on arbitrary input.
func FuzzLookup(f *testing.F) {
	for _, js := range lookupCorpus {
		f.Add([]byte(js))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkLookup(t, b) })
}

// Guarantee: an object's changes are written as documented on Obj: a member
// nobody changed is copied byte for byte in its place, a set member takes
// the place of its last duplicate, a new one goes after the others, a
// renamed one keeps its place, and an object with no change is its bytes.
func TestObjWritesOnlyChanges(t *testing.T) {
	cases := []struct {
		in   string
		edit func(o *record.Obj)
		want string
	}{
		{` { "b" : 1.50 ,"a":"\u00e9" } `, func(o *record.Obj) {}, ` { "b" : 1.50 ,"a":"\u00e9" } `},
		{`{"b":1.50, "a":"\u00e9","c":[1, 2]}`, func(o *record.Obj) { o.Set("a", record.IntValue(2)) }, `{"b":1.50,"a":2,"c":[1, 2]}`},
		{`{"z":1,"a":2}`, func(o *record.Obj) { o.Rename("a", "b") }, `{"z":1,"b":2}`},
		{`{"z":1,"a":2,"b":3}`, func(o *record.Obj) { o.Rename("z", "b") }, `{"b":1,"a":2}`},
		{`{"z":1}`, func(o *record.Obj) { o.Set("new", record.StringValue("x\xff\n")) }, "{\"z\":1,\"new\":\"x\xff\\n\"}"},
		{`{"a":1,"b":2,"a":3}`, func(o *record.Obj) { o.Set("a", record.IntValue(9)) }, `{"b":2,"a":9}`},
		{`{"a":1,"b":2,"a":3}`, func(o *record.Obj) { o.Set("b", record.IntValue(9)) }, `{"a":1,"b":9,"a":3}`},
		{`{"a":1,"b":2,"a":3}`, func(o *record.Obj) { o.Delete("a") }, `{"b":2}`},
		{`{"\u0061":1,"b":2}`, func(o *record.Obj) { o.Set("a", record.IntValue(5)) }, `{"\u0061":5,"b":2}`},
		{`{"a":1}`, func(o *record.Obj) { o.Set("x", record.IntValue(1)); o.Rename("x", "y") }, `{"a":1,"y":1}`},
		{`{"a":1}`, func(o *record.Obj) { o.Delete("missing"); o.Rename("missing", "a") }, `{"a":1}`},
		{`{"a":12345678901234567891}`, func(o *record.Obj) {
			v, _ := o.Get("a")
			o.Set("b", v)
		}, `{"a":12345678901234567891,"b":12345678901234567891}`},
	}
	for _, c := range cases {
		o, err := record.ParseObj([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		c.edit(o)
		if got := string(o.AppendJSON(nil)); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

// Guarantee: a number converts to int64 or float64 only exactly; anything
// else is an error that says so.
func TestNumbersConvertOnlyExactly(t *testing.T) {
	cases := []struct {
		lit     string
		i       int64
		intOK   bool
		f       float64
		floatOK bool
	}{
		{"0", 0, true, 0, true},
		{"-0", 0, true, 0, true},
		{"9007199254740993", 9007199254740993, true, 0, false},
		{"9007199254740992", 9007199254740992, true, 9007199254740992, true},
		{"9223372036854775807", 9223372036854775807, true, 0, false},
		{"-9223372036854775808", -9223372036854775808, true, 0, false},
		{"9223372036854775808", 0, false, 0, false},
		{"12345678901234567891", 0, false, 0, false},
		{"100000000000000000", 100000000000000000, true, 1e17, true},
		{"1152921504606846976", 1152921504606846976, true, 0, false}, // 2^60 prints as 1152921504606847000
		{"0.1", 0, false, 0.1, true},
		{"1.50", 0, false, 1.5, true},
		{"1e3", 1000, true, 1000, true},
		{"2.5", 0, false, 2.5, true},
		{"0.10000000000000000001", 0, false, 0, false},
		{"1e400", 0, false, 0, false},
		{"1e-400", 0, false, 0, false},
		{"123456789012345678901234567890", 0, false, 0, false},
		{"1e19", 0, false, 1e19, true},
		// Integers written with an exponent or a fraction convert to
		// their decimal value, not to the float64 nearest it.
		{"1.152921504606847e18", 1152921504606847000, true, 1.152921504606847e18, true}, // the float64 is 2^60, 1152921504606846976
		{"1.2345678901234567e18", 1234567890123456700, true, 0, false},
		{"9.223372036854775807e18", 9223372036854775807, true, 0, false},
		{"-9.223372036854776e18", 0, false, -9.223372036854776e18, true}, // the float64 is -2^63, the literal is beyond it
		{"-1.5e3", -1500, true, -1500, true},
		{"12.0", 12, true, 12, true},
		{"-0.0", 0, true, 0, true},
		{"1e-2", 0, false, 0.01, true},
		// Plain integers: a negative one, and a short one that sorts after
		// 2^63 as text (only 19 digits can reach it).
		{"-42", -42, true, -42, true},
		{"99", 99, true, 99, true},
		// Beyond 2^53, an integer is a float64 when its float64 prints as
		// the same integer, all its digits included.
		{"123000000000000000", 123000000000000000, true, 1.23e17, true},
		// More than 15 digits: exact when the literal is its float64's
		// shortest form, leading zeros aside.
		{"0.30000000000000004", 0, false, 0.30000000000000004, true},
		{"2.2250738585072014e-308", 0, false, 0x1p-1022, true},
		{"1.7976931348623157e308", 0, false, 1.7976931348623157e308, true},
		// Subnormals hold fewer digits than normal numbers.
		{"5e-324", 0, false, 5e-324, true},
		{"1.2345e-320", 0, false, 0, false},
	}
	for _, c := range cases {
		v := record.NumberLiteral(c.lit)
		i, err := v.Int()
		if (err == nil) != c.intOK || err == nil && i != c.i {
			t.Errorf("%s: Int = %d, %v", c.lit, i, err)
		}
		if err != nil && !errors.Is(err, record.ErrNotExact) {
			t.Errorf("%s: Int error %v is not ErrNotExact", c.lit, err)
		}
		f, err := v.Float()
		if (err == nil) != c.floatOK || err == nil && f != c.f {
			t.Errorf("%s: Float = %v, %v", c.lit, f, err)
		}
		if got := string(v.AppendJSON(nil)); got != c.lit {
			t.Errorf("%s: written as %s", c.lit, got)
		}
	}
	if c, err := record.CompareNumbers(record.NumberLiteral("12345678901234567891"), record.NumberLiteral("12345678901234567890")); err != nil || c != 1 {
		t.Errorf("big numbers compare %d, %v", c, err)
	}
	if c, err := record.CompareNumbers(record.NumberLiteral("9007199254740993"), record.FloatValue(9007199254740992)); err != nil || c != 1 {
		t.Errorf("9007199254740993 vs 2^53 as a float: %d, %v", c, err)
	}
}

// Guarantee: strings come out as they went in: escapes decode, and
// encoding the result gives an equivalent escape-free form, surrogates
// without a partner included; bytes that are not UTF-8 are kept.
func TestStringsRoundTrip(t *testing.T) {
	cases := []struct{ in, text, out string }{
		{`"plain"`, "plain", `"plain"`},
		{`"caf\u00e9"`, "café", `"café"`},
		{`"\ud83d\ude00"`, "😀", `"😀"`},
		{`"\ud800"`, "\xed\xa0\x80", `"\ud800"`},
		{`"\udc00x\ud83d"`, "\xed\xb0\x80x\xed\xa0\xbd", `"\udc00x\ud83d"`},
		{"\"\xff\xfe\"", "\xff\xfe", "\"\xff\xfe\""},
		{`"a\"b\\c\/d\b\f\n\r\t\u0001"`, "a\"b\\c/d\b\f\n\r\t\x01", `"a\"b\\c/d\b\f\n\r\t\u0001"`},
		{`"<&>\u2028"`, "<&>\u2028", "\"<&>\u2028\""},
		{`"a b"`, "a b", `"a b"`},
		{`""`, "", `""`},
		{`"\u00C9\u00e9"`, "Éé", `"Éé"`},
		{`"\u00DF\u00df\u00aF\u0090"`, "ßß¯\u0090", "\"ßß¯\u0090\""},
		// Pairs: the first and last of each half, and halves that do not
		// pair (a low one first, a high one before a character that is no
		// low half).
		{`"\ud800\udc00"`, "\U00010000", "\"\U00010000\""},
		{`"\udbff\udfff"`, "\U0010ffff", "\"\U0010ffff\""},
		{`"\udc00\udc00"`, "\xed\xb0\x80\xed\xb0\x80", `"\udc00\udc00"`},
		{`"\ud800\ue000"`, "\xed\xa0\x80\ue000", "\"\\ud800\ue000\""},
		{`"\ud800\ud800"`, "\xed\xa0\x80\xed\xa0\x80", `"\ud800\ud800"`},
	}
	for _, c := range cases {
		v, err := record.ParseValue([]byte(c.in))
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if v.Text() != c.text {
			t.Errorf("%q: text %q, want %q", c.in, v.Text(), c.text)
		}
		if got := string(v.AppendJSON(nil)); got != c.in {
			t.Errorf("%q: written as read gives %q", c.in, got)
		}
		if got := string(record.AppendString(nil, v.Text())); got != c.out {
			t.Errorf("%q: encoded text %q, want %q", c.in, got, c.out)
		}
	}
}

// Guarantee: AppendString escapes what JSON requires (the quote, the
// backslash, control characters) and the three bytes a lone surrogate
// decodes to, and writes every other byte as it is, including bytes that
// only look like the start of a surrogate.
func TestAppendStringEscapesOnlyWhatItMust(t *testing.T) {
	cases := []struct{ in, want string }{
		{" ~\x7f", "\" ~\x7f\""},
		{"\x00\x1f\"\\", `"\u0000\u001f\"\\"`},
		{"\xed\xa0\x80", `"\ud800"`},
		{"\xed\xbf\xbf", `"\udfff"`},
		{"x\xed\xa0", "\"x\xed\xa0\""},
		{"\xed\xa0", "\"\xed\xa0\""},
		{"\xed\x9f\xbf", "\"\xed\x9f\xbf\""}, // U+D7FF, the character before the surrogates
		{"\xed\xa0\xc0", "\"\xed\xa0\xc0\""},
		{"\xed\xa0\x7f", "\"\xed\xa0\x7f\""},
	}
	for _, c := range cases {
		if got := string(record.AppendString([]byte("x:"), c.in)); got != "x:"+c.want {
			t.Errorf("AppendString(%q) = %q, want %q", c.in, got, "x:"+c.want)
		}
	}
}

// Guarantee: Replace keeps the value the source read for Original (what a
// dead letter of a record error carries), however often it is replaced,
// and SetValue starts afresh.
func TestOriginalSurvivesReplace(t *testing.T) {
	r := record.New([]byte(`{"a":1}`))
	r.Replace([]byte(`{"b":1}`), true)
	r.Replace([]byte(`{"c":1}`), true)
	if string(r.Original()) != `{"a":1}` || string(r.Bytes()) != `{"c":1}` {
		t.Fatalf("Original %s, Bytes %s", r.Original(), r.Bytes())
	}
	r.SetValue([]byte(`x`))
	if string(r.Original()) != "x" {
		t.Fatalf("Original after SetValue = %s", r.Original())
	}
	c := r.CloneData()
	if !bytes.Equal(c.Bytes(), r.Bytes()) {
		t.Fatal("CloneData lost the value")
	}
}

// Guarantee: a member with no JSON form is an error naming it, and the
// record keeps its value (it was once replaced by null, and marked an
// object).
func TestSetFieldsRefusesWhatJSONCannotHold(t *testing.T) {
	r := record.New([]byte(`{"old":1}`))
	err := r.SetFields(map[string]any{"ok": "1", "ratio": math.NaN()})
	if err == nil || !strings.Contains(err.Error(), "ratio") {
		t.Fatalf("SetFields = %v, want an error naming ratio", err)
	}
	if got := string(r.Bytes()); got != `{"old":1}` {
		t.Fatalf("the record became %q", got)
	}
}

// Guarantee: SetFields writes strings as they are (no replacement
// character for bytes that are not UTF-8) with members sorted by name.
func TestSetFieldsKeepsBytes(t *testing.T) {
	var r record.Record
	if err := r.SetFields(map[string]any{"b": "x\xffy", "a": "1"}); err != nil {
		t.Fatal(err)
	}
	if got := string(r.Bytes()); got != "{\"a\":\"1\",\"b\":\"x\xffy\"}" {
		t.Fatalf("SetFields wrote %q", got)
	}
	if err := r.CheckJSON(); err != nil {
		t.Fatal(err)
	}
}

// Guarantee: CheckJSON refuses a value that is not JSON, however often it
// is asked, and remembers only a value found to be JSON; a Lookup or Index
// that failed on bad syntax does not mark the value as checked, one that
// found JSON that is not an object does.
func TestCheckJSONRemembersOnlyJSON(t *testing.T) {
	names := []string{"a"}
	vals, found := make([]record.Value, 1), make([]bool, 1)
	lookup := func(r *record.Record) error { return r.Lookup(names, vals, found) }
	index := func(r *record.Record) error { return r.Index(record.NewObj()) }
	object := func(r *record.Record) error { _, err := r.Object(); return err }
	for _, c := range []struct {
		value  string
		read   func(r *record.Record) error
		valid  bool // the value is JSON
		object bool // the value is a JSON object
	}{
		{`{"a":`, lookup, false, false},
		{`{"a":`, index, false, false},
		{`{"a":`, object, false, false},
		{`[1]`, lookup, true, false},
		{`[1]`, index, true, false},
		{`"x"`, object, true, false},
		{`{"a":1}`, lookup, true, true},
		{`{"a":1}`, index, true, true},
		{`{"a":1}`, object, true, true},
	} {
		r := record.New([]byte(c.value))
		if r.JSONChecked() {
			t.Errorf("%s: checked before anything read it", c.value)
		}
		err := c.read(&r)
		var se *record.SyntaxError
		switch {
		case c.object && err != nil,
			c.valid && !c.object && err != record.ErrNotObject,
			!c.valid && !errors.As(err, &se):
			t.Errorf("%s: read error %v", c.value, err)
		}
		if r.JSONChecked() != c.valid {
			t.Errorf("%s: JSONChecked = %v after a read that gave %v", c.value, r.JSONChecked(), err)
		}
		for range 2 {
			if err := r.CheckJSON(); (err == nil) != c.valid {
				t.Errorf("%s: CheckJSON = %v", c.value, err)
			}
		}
		if r.JSONChecked() != c.valid {
			t.Errorf("%s: JSONChecked = %v after CheckJSON", c.value, r.JSONChecked())
		}
	}
	r := record.New([]byte(`{"a":1}`))
	r.Replace([]byte(`{`), false)
	if r.JSONChecked() || r.CheckJSON() == nil {
		t.Error("a value a transform wrote, not said to be an object, was taken as checked")
	}
	r.Replace([]byte(`{"b":2}`), true)
	if !r.JSONChecked() {
		t.Error("a value a transform wrote as an object was not taken as checked")
	}
}

// Guarantee: Lookup of up to 8 names allocates nothing (conditions run it
// on every record).
func TestLookupAllocatesNothing(t *testing.T) {
	b := []byte(`{"a":1,"b":{"c":[2,3]},"d":"e","f":null,"g":true,"h":1.5,"i":"j","k":[]}`)
	names := []string{"a", "b", "d", "f", "g", "h", "i", "k"}
	vals, found := make([]record.Value, len(names)), make([]bool, len(names))
	r := record.New(b)
	if n := testing.AllocsPerRun(20, func() {
		if err := r.Lookup(names, vals, found); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Lookup of %d names allocated %v times", len(names), n)
	}
	for i, f := range found {
		if !f {
			t.Errorf("%s not found", names[i])
		}
	}
}

// Guarantee: Fields decodes an object as encoding/json does (numbers as
// float64), and refuses a value that is not JSON or not an object.
func TestFields(t *testing.T) {
	r := record.New([]byte(`{"a":1,"b":"x"}`))
	m, err := r.Fields()
	if err != nil || len(m) != 2 || m["a"] != 1.0 || m["b"] != "x" {
		t.Errorf("Fields = %v, %v", m, err)
	}
	r = record.New([]byte(`[1]`))
	if _, err := r.Fields(); err != record.ErrNotObject {
		t.Errorf("Fields of an array: %v", err)
	}
	r = record.New([]byte(`{"a"`))
	if _, err := r.Fields(); err == nil || !strings.HasPrefix(err.Error(), "record: value is not JSON: ") {
		t.Errorf("Fields of bad JSON: %v", err)
	}
}
