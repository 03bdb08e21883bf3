package postgres

import (
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// encodeOne encodes value through a single column of type typ filled from
// field "v" and returns the COPY text of the value (without the newline), or
// the error.
func encodeOne(t *testing.T, typ, value string) (string, error) {
	t.Helper()
	e := newEncoder([]Column{{Name: "c", Type: typ, Field: "v"}})
	row, cerr := e.appendRow(nil, []byte(value))
	if cerr != nil {
		return "", cerr.err
	}
	return strings.TrimSuffix(string(row), "\n"), nil
}

// The type mapping, from a record field to the COPY text the server parses:
// numbers travel as their literal (never through a float64), text is
// unescaped from JSON and escaped for COPY, and what the server would change
// silently (nanoseconds, digits past a numeric's scale) or cannot store
// (U+0000, bytes that are not UTF-8) is refused with the column named.
func TestEncodeTypeMapping(t *testing.T) {
	cases := []struct {
		typ, value, want, err string
	}{
		{"bigint", `{"v":9007199254740993}`, "9007199254740993", ""},
		{"bigint", `{"v":-9223372036854775808}`, "-9223372036854775808", ""},
		{"bigint", `{"v":9223372036854775808}`, "", "out of the range of bigint"},
		{"bigint", `{"v":"42"}`, "42", ""},
		{"bigint", `{"v":1.0}`, "", "not an integer"},
		{"bigint", `{"v":1e3}`, "", "not an integer"},
		{"bigint", `{"v":"x"}`, "", `is a string "x", which is not an integer`},
		// Strings hold integers as PostgreSQL reads them, not only as JSON
		// writes numbers.
		{"bigint", `{"v":"+5"}`, "+5", ""},
		{"bigint", `{"v":"0012"}`, "0012", ""},
		{"bigint", `{"v":" -7 "}`, "-7", ""},
		{"bigint", `{"v":"1_000"}`, "", "not an integer"},
		{"bigint", `{"v":"+"}`, "", "not an integer"},
		{"bigint", `{"v":"9223372036854775808"}`, "", "out of the range of bigint"},
		{"smallint", `{"v":"+32768"}`, "", "out of the range of smallint"},
		{"integer", `{"v":2147483648}`, "", "out of the range of integer"},
		{"smallint", `{"v":-32768}`, "-32768", ""},
		{"smallint", `{"v":32768}`, "", "out of the range of smallint"},
		{"numeric", `{"v":12345678901234567891}`, "12345678901234567891", ""},
		{"numeric", `{"v":123456789012345678901234567890.000000000001}`, "123456789012345678901234567890.000000000001", ""},
		{"numeric", `{"v":1e-7}`, "1e-7", ""},
		{"numeric", `{"v":"NaN"}`, "NaN", ""},
		{"numeric", `{"v":"12.5"}`, "12.5", ""},
		{"numeric", `{"v":true}`, "", "not a number"},
		{"numeric(12,2)", `{"v":1.25}`, "1.25", ""},
		{"numeric(12,2)", `{"v":1.2500}`, "1.2500", ""},
		{"numeric(12,2)", `{"v":1.255}`, "", "3 decimal places"},
		{"numeric(12,2)", `{"v":125e-3}`, "", "3 decimal places"},
		{"double precision", `{"v":1.5e300}`, "1.5e300", ""},
		{"boolean", `{"v":true}`, "t", ""},
		{"boolean", `{"v":"false"}`, "f", ""},
		{"boolean", `{"v":1}`, "", "not a boolean"},
		{"text", `{"v":"a\tb\\c\nd"}`, `a\tb\\c\nd`, ""},
		{"text", `{"v":"caf\u00e9 \ud83d\ude00"}`, "café 😀", ""},
		{"text", `{"v":"nul\u0000"}`, "", "U+0000"},
		{"text", `{"v":"lone \ud800"}`, "", "surrogate"},
		{"text", "{\"v\":\"bad \xff\"}", "", "not UTF-8"},
		{"text", `{"v":12345678901234567891}`, "12345678901234567891", ""},
		{"text", `{"v":{"a":[1,2]}}`, `{"a":[1,2]}`, ""},
		{"text", `{"v":null}`, `\N`, ""},
		{"text", `{}`, `\N`, ""},
		{"jsonb", `{"v":{"n":9007199254740993,"s":"x\\y"}}`, `{"n":9007199254740993,"s":"x\\\\y"}`, ""},
		{"jsonb", `{"v":null}`, `null`, ""},
		{"jsonb", `{"w":1}`, `\N`, ""},
		{"timestamptz", `{"v":"2026-03-01T12:30:45.123456+02:00"}`, "2026-03-01 10:30:45.123456Z", ""},
		{"timestamptz", `{"v":"2026-03-01T12:30:45Z"}`, "2026-03-01 12:30:45Z", ""},
		{"timestamptz", `{"v":"2026-03-01T12:30:45.123456789Z"}`, "", "nanoseconds"},
		{"timestamptz", `{"v":"yesterday"}`, "", "not an RFC 3339 timestamp"},
		{"timestamptz", `{"v":1700000000}`, "", "RFC 3339"},
		{"bytea", `{"v":"AAEC/w=="}`, `\\x000102ff`, ""},
		{"bytea", `{"v":"not base64!"}`, "", "not base64"},
	}
	for _, c := range cases {
		got, err := encodeOne(t, c.typ, c.value)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s from %s: got %q, %v; want an error saying %q", c.typ, c.value, got, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s from %s: %v", c.typ, c.value, err)
		case c.err == "" && got != c.want:
			t.Errorf("%s from %s: got %q, want %q", c.typ, c.value, got, c.want)
		}
	}
}

func TestEncodeRowPathsAndWholeValue(t *testing.T) {
	e := newEncoder([]Column{
		{Name: "id", Type: "bigint"},
		{Name: "amount", Type: "numeric", Field: "pay.amount"},
		{Name: "cur", Type: "text", Field: "pay.currency"},
		{Name: "doc", Type: "jsonb", Value: true},
	})
	v := `{"id":7,"pay":{"amount":10.50,"currency":"EUR"},"id":8}`
	row, cerr := e.appendRow(nil, []byte(v))
	if cerr != nil {
		t.Fatal(cerr.err)
	}
	// The last of a repeated key wins, as in encoding/json.
	if want := "8\t10.50\tEUR\t" + v + "\n"; string(row) != want {
		t.Fatalf("row %q, want %q", row, want)
	}
	for _, bad := range []struct{ value, err string }{
		{`[1,2]`, "not a JSON object"},
		{`{"id":1,}`, "not valid JSON"},
		{`{"id":1,"pay":"cash"}`, "not an object"},
		{`{"id":1} x`, "not valid JSON"},
		{strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001), "nested"},
	} {
		if _, cerr := e.appendRow(nil, []byte(bad.value)); cerr == nil || !strings.Contains(cerr.err.Error(), bad.err) {
			t.Errorf("%.40s: %v, want an error saying %q", bad.value, cerr, bad.err)
		}
	}
}

// A column whose name has a dot is one field of that name, not a path.
func TestEncodeDottedColumnName(t *testing.T) {
	e := newEncoder([]Column{{Name: "a.b", Type: "text"}})
	row, cerr := e.appendRow(nil, []byte(`{"a.b":"x","a":{"b":"y"}}`))
	if cerr != nil || string(row) != "x\n" {
		t.Fatalf("row %q, %v; want x", row, cerr)
	}
}

func TestRowReader(t *testing.T) {
	var g group
	for i, r := range []string{"a\n", "bb\n", "ccc\n"} {
		g.buf = append(g.buf, r...)
		g.added(len(g.buf), originAt(int64(i)))
	}
	read := func(r *rowReader, chunk int) string {
		var sb strings.Builder
		p := make([]byte, chunk)
		for {
			n, err := r.Read(p)
			sb.Write(p[:n])
			if err != nil {
				return sb.String()
			}
		}
	}
	for _, chunk := range []int{1, 2, 3, 64} {
		if got := read(newRowReader(&g, nil, false), chunk); got != "a\nbb\nccc\n" {
			t.Errorf("all rows, chunk %d: %q", chunk, got)
		}
		if got := read(newRowReader(&g, []int{0, 2}, false), chunk); got != "a\nccc\n" {
			t.Errorf("rows 0 and 2, chunk %d: %q", chunk, got)
		}
		if got := read(newRowReader(&g, []int{2}, true), chunk); got != "2\tccc\n" {
			t.Errorf("row 2 with order, chunk %d: %q", chunk, got)
		}
	}
}

// Guarantee: a timestamptz is written exactly as the layout would write it,
// at every microsecond, year and second, including the years the fast
// writer leaves to AppendFormat.
func TestTimestampIsWrittenAsTheLayoutWould(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sec := rapid.Int64Range(-62135596800-86400*400, 253402300799+86400*400).Draw(rt, "sec") // years 0 to 10000
		us := rapid.OneOf(rapid.Int64Range(0, 999999), rapid.SampledFrom([]int64{0, 1, 10, 100000, 120000, 999999})).Draw(rt, "us")
		tm := time.Unix(sec, us*1000).UTC()
		want := tm.AppendFormat(nil, timestampLayout)
		if got := appendTimestamp([]byte("x"), tm); string(got) != "x"+string(want) {
			rt.Fatalf("%v: wrote %q, the layout %q", tm, got[1:], want)
		}
	})
}

// TestIndexSpecialFindsTheFirst compares the eight-bytes-at-a-time search
// with a byte loop over strings of every length up to 40, drawn from the
// four bytes COPY escapes, their neighbours and bytes with the high bit set.
func TestIndexSpecialFindsTheFirst(t *testing.T) {
	slow := func(s []byte) int {
		for i, c := range s {
			if c == '\\' || c == '\n' || c == '\r' || c == '\t' {
				return i
			}
		}
		return -1
	}
	rapid.Check(t, func(rt *rapid.T) {
		b := rapid.SliceOfN(rapid.OneOf(
			rapid.SampledFrom([]byte{'\\', '\n', '\r', '\t', '\\' + 1, '\\' - 1, '\n' + 1, '\n' - 1, '\r' + 1, '\t' - 1, 0, 0x80, 0x8a, 0xdc, 0xff, 'a'}),
			rapid.Byte(),
		), 0, 40).Draw(rt, "s")
		if got, want := indexSpecial(b), slow(b); got != want {
			rt.Fatalf("indexSpecial(%q) = %d, want %d", b, got, want)
		}
	})
}
