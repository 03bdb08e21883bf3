package record_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weir-etl/weir/record"
)

// Guarantee: a value that is not JSON is refused with the byte where the
// problem is and what is wrong there, in words a user can act on: a
// printable character is quoted, any other byte given in hex.
func TestSyntaxErrorsSayWhereAndWhat(t *testing.T) {
	cases := []struct {
		in     string
		offset int
		msg    string
	}{
		{``, 0, `unexpected end, looking for a value`},
		{`{"a":1}x`, 7, `unexpected 'x', after the value`},
		{`1. 5`, 2, `unexpected ' ', after a decimal point`},
		{"1.\x7f", 2, `unexpected '\x7f', after a decimal point`},
		{"1.\x80", 2, `unexpected byte 0x80, after a decimal point`},
		{"1.\x1f", 2, `unexpected byte 0x1f, after a decimal point`},
		{"1.\xff", 2, `unexpected byte 0xff, after a decimal point`},
		{`-`, 1, `unexpected end, in a number`},
		{`-a`, 0, `unexpected '-', looking for a value`},
		{`1e+`, 3, `unexpected end, in an exponent`},
		{`1ex`, 2, `unexpected 'x', in an exponent`},
		{`tru`, 0, `unexpected 't', looking for a value`},
		{`nul`, 0, `unexpected 'n', looking for a value`},
		{`fals`, 0, `unexpected 'f', looking for a value`},
		{`"abc`, 4, `unexpected end, in a string`},
		{`"\`, 2, `unexpected end, in an escape`},
		{`"\q"`, 1, `unknown escape \q`},
		{`"\u12`, 1, `\u not followed by four hex digits`},
		{`"\u123`, 1, `\u not followed by four hex digits`},
		{`"\u1234`, 7, `unexpected end, in a string`},
		{`"\u12g4"`, 1, `\u not followed by four hex digits`},
		{"\"a\x01\"", 2, `control character 0x01 in a string (escape it)`},
		{`[`, 1, `unexpected end, looking for a value`},
		{`[1`, 2, `unexpected end, looking for , or a closing bracket`},
		{`[1 2]`, 3, `unexpected '2', looking for , or ]`},
		{`[1}`, 2, `unexpected '}', looking for , or ]`},
		{`{"a":1 "b":2}`, 7, `unexpected '"', looking for , or }`},
		{`{"a" 1}`, 5, `unexpected '1', looking for :`},
		{`{1:2}`, 1, `unexpected '1', looking for a member name`},
		{`[{"a":1,2]`, 8, `unexpected '2', looking for a member name`},
		{`{"a":[1,2}`, 9, `unexpected '}', looking for , or ]`},
		{strings.Repeat("[", 10001), 10000, `nested deeper than 10000 levels`},
	}
	for _, c := range cases {
		err := record.Valid([]byte(c.in))
		var se *record.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%.40q: error %v, want a *SyntaxError", c.in, err)
			continue
		}
		if se.Offset != c.offset || se.Msg != c.msg {
			t.Errorf("%.40q: %q at byte %d, want %q at byte %d", c.in, se.Msg, se.Offset, c.msg, c.offset)
		}
		if want := fmt.Sprintf("record: value is not JSON: %s at byte %d", c.msg, c.offset); err.Error() != want {
			t.Errorf("%.40q: error text %q, want %q", c.in, err, want)
		}
	}
}

// Guarantee: what reads an object (ParseObj, Lookup) refuses one that is
// not JSON with the same byte and words as each other, and tells a JSON
// value that is not an object (ErrNotObject) from one that is not JSON.
func TestObjectErrorsSayWhereAndWhat(t *testing.T) {
	cases := []struct {
		in     string
		offset int
		msg    string // "" for ErrNotObject
	}{
		{``, 0, `unexpected end, looking for a value`},
		{`  `, 2, `unexpected end, looking for a value`},
		{`[1,`, 3, `unexpected end, looking for a value`},
		{`[1]`, 0, ``},
		{` "x" `, 0, ``},
		{`{`, 1, `unexpected end, looking for a member name`},
		{`{}x`, 2, `unexpected 'x', after the object`},
		{`{"a":1}x`, 7, `unexpected 'x', after the object`},
		{`{"a":1} {}`, 8, `unexpected '{', after the object`},
		{`{"a"`, 4, `unexpected end, looking for :`},
		{`{"a" 1}`, 5, `unexpected '1', looking for :`},
		{`{"a":`, 5, `unexpected end, looking for a value`},
		{`{"a":1`, 6, `unexpected end, looking for , or }`},
		{`{"a":1,`, 7, `unexpected end, looking for a member name`},
		{`{"a":1]`, 6, `unexpected ']', looking for , or }`},
		{`{"a":1,}`, 7, `unexpected '}', looking for a member name`},
		{`{"a\q":1}`, 3, `unknown escape \q`},
		{`{"a":tru}`, 5, `unexpected 't', looking for a value`},
	}
	for _, c := range cases {
		_, perr := record.ParseObj([]byte(c.in))
		r := record.New([]byte(c.in))
		lerr := r.Lookup([]string{"a"}, make([]record.Value, 1), make([]bool, 1))
		for name, err := range map[string]error{"ParseObj": perr, "Lookup": lerr} {
			if c.msg == "" {
				if err != record.ErrNotObject {
					t.Errorf("%s(%q) = %v, want ErrNotObject", name, c.in, err)
				}
				continue
			}
			var se *record.SyntaxError
			if !errors.As(err, &se) || se.Offset != c.offset || se.Msg != c.msg {
				t.Errorf("%s(%q) = %v, want %q at byte %d", name, c.in, err, c.msg, c.offset)
			}
		}
	}
}

// scanView describes everything the scanner says about b: its verdict, the
// object it indexes and the members Lookup finds. A read past the end of b
// shows as a panic (an index past its length) or as a different view (a
// slice past its length, into the bytes after it).
func scanView(b []byte) (view string) {
	defer func() {
		if p := recover(); p != nil {
			view = fmt.Sprintf("panic: %v", p)
		}
	}()
	var sb strings.Builder
	fmt.Fprintf(&sb, "valid: %v\n", record.Valid(b))
	if o, err := record.ParseObj(b); err != nil {
		fmt.Fprintf(&sb, "object: %v\n", err)
	} else {
		fmt.Fprintf(&sb, "object: %s\n", o.AppendJSON(nil))
	}
	names := []string{"a", "b", "c"}
	vals := make([]record.Value, len(names))
	found := make([]bool, len(names))
	r := record.New(b)
	err := r.Lookup(names, vals, found)
	fmt.Fprintf(&sb, "lookup: %v", err)
	for i := range names {
		fmt.Fprintf(&sb, " %s=%v:%s", names[i], found[i], vals[i].AppendJSON(nil))
	}
	return sb.String()
}

// Guarantee: the scanner reads nothing past the end of the value it is
// given. A record's value may be a slice of a larger buffer (a fetched
// batch), whose next bytes belong to another record: the cut value must be
// judged on its own bytes alone, as a copy that ends where it ends is.
func TestScannerStopsAtTheEndOfTheValue(t *testing.T) {
	docs := []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"x\u00e9\"y"}}`,
		` { "a" : -1.5e+3 , "b" : "\\" , "c" : [ ] } `,
		`{"a":{},"b":[{},[]],"c":12345678901234567890}`,
		`[1,{"a":2},"x",null]`,
		`"\ud83d\ude00 \u00C9"`,
	}
	for _, doc := range docs {
		buf := []byte(doc)
		for n := 0; n <= len(buf); n++ {
			cut := buf[:n]
			alone := make([]byte, n) // ends where the value ends: a read past it panics
			copy(alone, cut)
			got, want := scanView(cut), scanView(alone)
			if strings.HasPrefix(want, "panic") {
				t.Errorf("%q: %s", alone, want)
			} else if got != want {
				t.Errorf("%q cut from %q:\n got  %s\n want %s", cut, doc, got, want)
			}
		}
	}
}

// Guarantee: checking a value allocates nothing unless it is nested deeper
// than 256 levels: conditions check every record.
func TestScanningAllocatesNothing(t *testing.T) {
	docs := []string{
		`{"a":[1,{"b":[2]}],"c":"d"}`,
		strings.Repeat(`{"a":[`, 128) + strings.Repeat(`]}`, 128),
	}
	for _, doc := range docs {
		b := []byte(doc)
		if err := record.Valid(b); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(10, func() { _ = record.Valid(b) }); n != 0 {
			t.Errorf("checking %.40s... allocated %v times", doc, n)
		}
	}
}
