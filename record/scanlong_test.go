package record_test

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/record"
)

// Guarantee: the scanner finds a string's quote, backslash or control
// character wherever it lies, also in a long string it reads eight bytes at
// a time: each of them, at every position of a 40-byte string, is found
// there (a control character is an error at its byte; a quote ends the
// string; an escape is read as one).
func TestLongStringsSpecialBytesAnywhere(t *testing.T) {
	for p := range 40 {
		for _, c := range []byte{0x00, 0x01, 0x1f, '\t', '\n'} {
			s := []byte(`"` + strings.Repeat("a", 40) + `"`)
			s[1+p] = c
			err := record.Valid(s)
			se, ok := err.(*record.SyntaxError)
			if !ok || se.Offset != 1+p {
				t.Fatalf("control 0x%02x at %d: %v, want an error at byte %d", c, p, err, 1+p)
			}
		}
		s := []byte(`"` + strings.Repeat("a", 40) + `"`)
		s[1+p] = '"'
		if err := record.Valid(s); err == nil {
			t.Fatalf("a quote at %d did not end the string: %s is valid", p, s)
		}
		esc := `"` + strings.Repeat("a", p) + `\"` + strings.Repeat("a", 40-p) + `"`
		if err := record.Valid([]byte(esc)); err != nil {
			t.Fatalf("an escaped quote at %d: %v", p, err)
		}
		obj := `{"` + strings.Repeat("k", p) + `":1,"b":"` + strings.Repeat("v", 40-p) + `"}`
		o, err := record.ParseObj([]byte(obj))
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := o.Get("b"); !ok || v.Text() != strings.Repeat("v", 40-p) {
			t.Fatalf("%s: b is %q", obj, v.Text())
		}
	}
}

// Guarantee: on strings of any length and bytes, weir's scanner agrees with
// encoding/json about which are JSON.
func TestStringsAgreeWithEncodingJSON(t *testing.T) {
	alphabet := []byte{'a', 'z', ' ', '"', '\\', 'n', 'u', '0', 0x00, 0x1f, 0x7f, 0x80, 0xff, 0xed}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 48).Draw(t, "len")
		b := []byte{'"'}
		for range n {
			b = append(b, rapid.SampledFrom(alphabet).Draw(t, "byte"))
		}
		b = append(b, '"')
		if got, want := record.Valid(b) == nil, json.Valid(b); got != want {
			t.Fatalf("%q: weir says valid %v, encoding/json %v", b, got, want)
		}
	})
}
