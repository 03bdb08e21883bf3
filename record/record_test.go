package record_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
)

// Guarantee: the value is decoded lazily, on the first Fields call, and at
// most once: changing the bytes afterwards is not seen, because Fields does
// not decode again.
func TestFieldsDecodesLazilyAtMostOnce(t *testing.T) {
	v := []byte(`{"id":1,"name":"ada"}`)
	r := record.New(v)
	if r.Decoded() {
		t.Fatal("decoded before Fields was called")
	}
	got, err := r.Value()
	if err != nil || string(got) != string(v) || r.Decoded() {
		t.Fatalf("Value = %s, %v, decoded %v; want the bytes, undecoded", got, err, r.Decoded())
	}
	f1, err := r.Fields()
	if err != nil || !r.Decoded() || f1["name"] != "ada" {
		t.Fatalf("Fields = %v, %v, decoded %v", f1, err, r.Decoded())
	}
	copy(v, `{"id":2,"name":"bob"}`) // same length; a second decode would see it
	f2, err := r.Fields()
	if err != nil || f2["name"] != "ada" || f2["id"] != 1.0 {
		t.Fatalf("second Fields = %v, %v: decoded again", f2, err)
	}
	if reflect.ValueOf(f1).Pointer() != reflect.ValueOf(f2).Pointer() {
		t.Error("second Fields returned a new map")
	}
}

func TestFieldsErrorsAreRemembered(t *testing.T) {
	for _, tc := range []struct {
		value  string
		isNotO bool
	}{{`{"id":`, false}, {`[1,2]`, true}, {`"text"`, true}} {
		r := record.New([]byte(tc.value))
		_, err1 := r.Fields()
		_, err2 := r.Fields()
		if err1 == nil || err1 != err2 {
			t.Errorf("%s: Fields errors %v then %v, want the same error twice", tc.value, err1, err2)
		}
		if errors.Is(err1, record.ErrNotObject) != tc.isNotO {
			t.Errorf("%s: error %v, ErrNotObject %v", tc.value, err1, tc.isNotO)
		}
		if r.Decoded() {
			t.Errorf("%s: Decoded after a failed decode", tc.value)
		}
		if v, err := r.Value(); err != nil || string(v) != tc.value {
			t.Errorf("%s: Value = %s, %v; want the bytes unchanged", tc.value, v, err)
		}
	}
}

// Guarantee: changed fields are re-encoded by Value, and unchanged ones are
// not (the original bytes come back as they were).
func TestValueReencodesChangedFields(t *testing.T) {
	orig := `{"b":1,  "a":2}`
	r := record.New([]byte(orig))
	f, _ := r.Fields()
	if v, _ := r.Value(); string(v) != orig {
		t.Errorf("Value of unchanged fields = %s, want the original bytes %s", v, orig)
	}
	f["c"] = "x"
	if v, _ := r.Value(); string(v) != orig {
		t.Errorf("Value before MarkChanged = %s, want the original bytes", v)
	}
	r.MarkChanged()
	if v, err := r.Value(); err != nil || string(v) != `{"a":2,"b":1,"c":"x"}` {
		t.Errorf("Value after MarkChanged = %s, %v", v, err)
	}
	if !r.Decoded() {
		t.Error("not decoded after re-encoding")
	}

	r.SetFields(map[string]any{"n": 1, "s": []any{"a"}})
	if v, err := r.Value(); err != nil || string(v) != `{"n":1,"s":["a"]}` {
		t.Errorf("Value after SetFields = %s, %v", v, err)
	}
	r.SetFields(map[string]any{"bad": func() {}})
	if _, err := r.Value(); err == nil {
		t.Error("Value of unencodable fields: no error")
	}
	r.SetValue([]byte(`{"z":0}`))
	if r.Decoded() {
		t.Error("decoded after SetValue")
	}
	if f, err := r.Fields(); err != nil || f["z"] != 0.0 {
		t.Errorf("Fields after SetValue = %v, %v", f, err)
	}
}

// Guarantee: CloneData copies fields deeply (changing one record's nested
// fields never changes the other's), shares the bytes, and carries no
// reference.
func TestCloneDataIsIndependent(t *testing.T) {
	r := record.New([]byte(`{"user":{"tags":["a","b"],"age":3},"n":1}`))
	r.Key = []byte("k")
	r.Origin = record.Origin{Source: "s", Partition: "p", Offset: 7}
	f, _ := r.Fields()
	c := r.CloneData()
	if !c.Ack.IsZero() {
		t.Error("clone carries a reference")
	}
	if string(c.Key) != "k" || c.Origin != r.Origin {
		t.Errorf("clone metadata %q %+v", c.Key, c.Origin)
	}
	cf, err := c.Fields()
	if err != nil || !c.Decoded() {
		t.Fatalf("clone Fields: %v, decoded %v", err, c.Decoded())
	}
	cf["n"] = 2.0
	cf["user"].(map[string]any)["age"] = 4.0
	cf["user"].(map[string]any)["tags"].([]any)[0] = "z"
	c.MarkChanged()
	want := map[string]any{"user": map[string]any{"tags": []any{"a", "b"}, "age": 3.0}, "n": 1.0}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("original fields changed through the clone: %v", f)
	}
	if v, _ := r.Value(); string(v) != `{"user":{"tags":["a","b"],"age":3},"n":1}` {
		t.Errorf("original value %s", v)
	}
	var cv map[string]any
	b, _ := c.Value()
	if err := json.Unmarshal(b, &cv); err != nil || cv["n"] != 2.0 {
		t.Errorf("clone value %s", b)
	}

	// An undecoded record's clone decodes on its own.
	u := record.New([]byte(`{"x":1}`))
	uc := u.CloneData()
	ucf, _ := uc.Fields()
	ucf["x"] = 5.0
	if u.Decoded() {
		t.Error("decoding the clone decoded the original")
	}
	if uf, _ := u.Fields(); uf["x"] != 1.0 {
		t.Errorf("original sees the clone's change: %v", uf)
	}
}

func TestSize(t *testing.T) {
	r := record.New(make([]byte, 100))
	if got := r.Size(); got != 164 {
		t.Errorf("Size = %d, want 100 bytes of value plus 64 of overhead", got)
	}
	r.Key = make([]byte, 10)
	r.Headers = []record.Header{{Key: "abc", Value: make([]byte, 7)}, {Key: "d", Value: nil}}
	if got := r.Size(); got != 164+10+10+1 {
		t.Errorf("Size = %d, want value, key, header keys and values plus 64", got)
	}
	var empty record.Record
	if got := empty.Size(); got != 64 {
		t.Errorf("Size of an empty record = %d, want 64", got)
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

// checkLookup compares Fields on b with encoding/json's decoding, and
// LookupFields with the same restricted to names: the same acceptance, the
// same error, the same values to the bit.
func checkLookup(t *testing.T, b []byte, names []string) {
	t.Helper()
	q := b
	if len(q) > 200 {
		q = q[:200]
	}
	// The reference is encoding/json itself, with the errors Fields makes
	// of its verdicts.
	var refFields map[string]any
	var refErr error
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		refErr = fmt.Errorf("record: value is not JSON: %w", err)
	} else if m, ok := v.(map[string]any); ok {
		refFields = m
	} else {
		refErr = record.ErrNotObject
	}
	full := record.New(b)
	fields, err := full.Fields()
	if fmt.Sprint(err) != fmt.Sprint(refErr) || !sameJSON(fields, refFields) {
		t.Fatalf("%q: Fields = %#v, %v\nencoding/json: %#v, %v", q, fields, err, refFields, refErr)
	}

	r := record.New(b)
	dst := map[string]any{"untouched": "yes"}
	err = r.LookupFields(names, dst)
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%q: LookupFields err %v, Fields err %v", q, err, refErr)
	}
	if err != nil {
		if err.Error() != refErr.Error() || errors.Is(err, record.ErrNotObject) != errors.Is(refErr, record.ErrNotObject) {
			t.Fatalf("%q: LookupFields err %v, want Fields' %v", q, err, refErr)
		}
		return
	}
	want := map[string]any{"untouched": "yes"}
	for _, n := range names {
		if v, ok := refFields[n]; ok {
			want[n] = v
		}
	}
	if !sameJSON(dst, want) {
		t.Fatalf("%q names %q:\n got %#v\nwant %#v", q, names, dst, want)
	}
}

// sameJSON is reflect.DeepEqual for decoded JSON, except that it tells -0
// from 0.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return a == b
}

// namesFor returns the names to look up in b: every top-level key that
// encoding/json sees, and some that are absent.
func namesFor(b []byte) []string {
	names := []string{"a", "id", "missing", "\ufffd"}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		for k := range m {
			names = append(names, k)
		}
	}
	return names
}

// Guarantee: LookupFields gives exactly what Fields gives for the named
// fields, on every document, and the same error for every document Fields
// rejects, including one whose named fields are fine but whose other fields
// are not.
func TestLookupFieldsMatchesFields(t *testing.T) {
	for _, js := range lookupCorpus {
		b := []byte(js)
		checkLookup(t, b, namesFor(b))
		checkLookup(t, b, []string{"a"})
		checkLookup(t, b, nil)
		many := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "id"}
		checkLookup(t, b, many) // more names than the scanner's stack buffer
	}
}

// FuzzLookupFields runs the same comparison on arbitrary input; the corpus
// above is its seed.
func FuzzLookupFields(f *testing.F) {
	for _, js := range lookupCorpus {
		f.Add([]byte(js))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkLookup(t, b, namesFor(b))
	})
}

// Guarantee: a lookup decodes only the named fields. The other fields here
// are valid but would cost most of a full decode; the record stays undecoded,
// and a later Fields decodes it in full.
func TestLookupFieldsDecodesOnlyNamed(t *testing.T) {
	r := record.New([]byte(`{"blob":{"deep":[1,2,{"x":"` + strings.Repeat("y", 1000) + `"}]},"id":7,"s":"\ud83d\ude00"}`))
	dst := map[string]any{}
	if err := r.LookupFields([]string{"id"}, dst); err != nil {
		t.Fatal(err)
	}
	if r.Decoded() {
		t.Fatal("LookupFields decoded the record")
	}
	if !reflect.DeepEqual(dst, map[string]any{"id": 7.0}) {
		t.Fatalf("dst = %v", dst)
	}
	f, err := r.Fields()
	if err != nil || !r.Decoded() || f["s"] != "😀" {
		t.Fatalf("Fields after a lookup = %v, %v", f, err)
	}
}

// Guarantee: on a decoded record, LookupFields reads the fields as changed,
// not the original bytes.
func TestLookupFieldsSeesChangedFields(t *testing.T) {
	r := record.New([]byte(`{"id":1,"x":2}`))
	f, _ := r.Fields()
	f["id"] = 5.0
	delete(f, "x")
	r.MarkChanged()
	dst := map[string]any{}
	if err := r.LookupFields([]string{"id", "x"}, dst); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dst, map[string]any{"id": 5.0}) {
		t.Fatalf("dst = %v, want the changed fields", dst)
	}
}

// Guarantee: DropFields never loses data. It forgets a decoded map only when
// the value holds the same record, and keeps fields a transform changed until
// Value has encoded them.
func TestDropFieldsKeepsTheRecord(t *testing.T) {
	r := record.New([]byte(`{"a":1}`))
	if _, err := r.Fields(); err != nil {
		t.Fatal(err)
	}
	r.DropFields()
	if r.Decoded() {
		t.Fatal("DropFields kept the decoded fields of an unchanged record")
	}
	f, err := r.Fields()
	if err != nil || f["a"] != float64(1) {
		t.Fatalf("Fields after DropFields = %v, %v; want a=1", f, err)
	}

	f["a"] = float64(2)
	r.MarkChanged()
	r.DropFields()
	if !r.Decoded() {
		t.Fatal("DropFields forgot fields that only the map held")
	}
	if v, _ := r.Value(); string(v) != `{"a":2}` {
		t.Fatalf("Value = %s, want {\"a\":2}", v)
	}
	r.DropFields()
	if v, _ := r.Value(); r.Decoded() || string(v) != `{"a":2}` {
		t.Fatalf("after encoding and DropFields: decoded %v, value %s", r.Decoded(), v)
	}
}
