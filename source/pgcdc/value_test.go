package pgcdc

import (
	"encoding/json"
	"testing"
)

func ct(k kind) *colType { return &colType{kind: k} }

func arr(elem *colType) *colType { return &colType{kind: kArray, elem: elem, delim: ','} }

// Guarantee: each type's text form becomes the JSON the documentation
// promises: integers and floats keep their literal, numeric stays exact as a
// string, timestamps carry their zone, bytea is base64, arrays are arrays,
// and text that does not have the expected shape is kept as a string rather
// than guessed at.
func TestAppendValue(t *testing.T) {
	for _, tc := range []struct {
		typ  *colType
		text string
		want string
	}{
		{ct(kNumber), "9223372036854775807", `9223372036854775807`},
		{ct(kNumber), "-32768", `-32768`},
		{ct(kNumber), "007", `"007"`}, // not an output form: kept as text
		{ct(kFloat), "0.1", `0.1`},
		{ct(kFloat), "1e+300", `1e+300`},
		{ct(kFloat), "-0", `-0`},
		{ct(kFloat), "NaN", `"NaN"`},
		{ct(kFloat), "-Infinity", `"-Infinity"`},
		{ct(kNumeric), "12345678901234567890.123456789012", `"12345678901234567890.123456789012"`},
		{ct(kNumeric), "1.5000", `"1.5000"`},
		{ct(kBool), "t", `true`},
		{ct(kBool), "f", `false`},
		{ct(kJSON), `{"b": 1, "a": [1, 2]}`, `{"b": 1, "a": [1, 2]}`},
		{ct(kBytea), `\x00ff10`, `"AP8Q"`},
		{ct(kBytea), `\x`, `""`},
		{ct(kTimestamptz), "2026-01-02 03:04:05.123456+00", `"2026-01-02T03:04:05.123456Z"`},
		{ct(kTimestamptz), "2026-01-02 03:04:05+00", `"2026-01-02T03:04:05Z"`},
		{ct(kTimestamptz), "2026-01-02 03:04:05+05:30", `"2026-01-02T03:04:05+05:30"`},
		{ct(kTimestamptz), "2026-01-02 03:04:05-08", `"2026-01-02T03:04:05-08:00"`},
		{ct(kTimestamptz), "infinity", `"infinity"`},
		{ct(kTimestamptz), "0044-03-15 12:00:00+00 BC", `"0044-03-15 12:00:00+00 BC"`},
		{ct(kTimestamp), "2026-01-02 03:04:05.5", `"2026-01-02T03:04:05.5"`},
		// Strings are written as the record's value model writes them:
		// JSON's specials escaped, every other character kept (U+2028 too).
		{ct(kString), "a\"b\\c\n\x01€\u2028", "\"a\\\"b\\\\c\\n\\u0001€\u2028\""},
		{arr(ct(kNumber)), "{1,2,NULL}", `[1,2,null]`},
		{arr(ct(kNumber)), "{}", `[]`},
		{arr(ct(kNumber)), "{{1,2},{3,4}}", `[[1,2],[3,4]]`},
		{arr(ct(kString)), `{"a b","c,d",NULL,"NULL","q\"x","back\\slash",plain}`, `["a b","c,d",null,"NULL","q\"x","back\\slash","plain"]`},
		{arr(ct(kNumeric)), "{1.50,2}", `["1.50","2"]`},
		{arr(ct(kTimestamptz)), `{"2026-01-02 03:04:05+00"}`, `["2026-01-02T03:04:05Z"]`},
		{arr(ct(kBytea)), `{"\\x01"}`, `["AQ=="]`},
		{arr(ct(kJSON)), `{"{\"x\": 1}","[]"}`, `[{"x": 1},[]]`},
		{arr(ct(kNumber)), "[0:1]={1,2}", `"[0:1]={1,2}"`}, // explicit bounds: kept as text
		{arr(ct(kNumber)), "{1,2", `"{1,2"`},
		{&colType{kind: kArray, elem: ct(kString), delim: ';'}, "{(1,2),(0,0);(3,3),(1,1)}", `["(1,2),(0,0)","(3,3),(1,1)"]`},
	} {
		got := string(appendValue(nil, tc.typ, []byte(tc.text)))
		if got != tc.want {
			t.Errorf("kind %d %q: got %s, want %s", tc.typ.kind, tc.text, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("kind %d %q: %s is not JSON", tc.typ.kind, tc.text, got)
		}
	}
}

// Guarantee: whatever the text, the result is valid JSON (a value the
// source cannot interpret becomes a string, never broken output).
func FuzzAppendValue(f *testing.F) {
	for _, s := range []string{"1", "{1,2}", `{"a",NULL}`, "2026-01-02 03:04:05+00", `\x0a`, "t", "NaN", "{{1},{2}}"} {
		f.Add(s, uint8(0))
	}
	kinds := []*colType{ct(kString), ct(kNumber), ct(kFloat), ct(kNumeric), ct(kBool), ct(kBytea), ct(kTimestamptz), ct(kTimestamp),
		arr(ct(kNumber)), arr(ct(kString)), arr(ct(kTimestamptz)), arr(arr(ct(kFloat)))}
	f.Fuzz(func(t *testing.T, text string, k uint8) {
		typ := kinds[int(k)%len(kinds)]
		out := appendValue(nil, typ, []byte(text))
		if !json.Valid(out) {
			t.Fatalf("kind %d %q: %s is not JSON", typ.kind, text, out)
		}
	})
}

func TestAppendLSN(t *testing.T) {
	for lsn, want := range map[uint64]string{0: "0/0", 0x16B374D848: "16/B374D848", 0x1_0000_0000: "1/0", 0xFFFFFFFF: "0/FFFFFFFF"} {
		if got := formatLSN(lsn); got != want {
			t.Errorf("formatLSN(%#x) = %s, want %s", lsn, got, want)
		}
	}
}
