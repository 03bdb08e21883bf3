package iceberg

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/weir-etl/weir/record"
)

func planOne(t *testing.T, typ, value string) (slot, error) {
	t.Helper()
	ids := 0
	ty, err := parseType(typ, &ids)
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNode("c", "c", ty, false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := record.ParseValue([]byte(value))
	if err != nil {
		t.Fatal(err)
	}
	slots, err := n.plan(nil, v, true)
	if err != nil {
		return slot{}, err
	}
	return slots[0], nil
}

// Values are converted exactly or refused, never rounded: each case is a
// literal, its column type, and the exact value (or the error's words).
func TestConversionsAreExact(t *testing.T) {
	dec := func(s string) decimal128.Num {
		n, err := unscaled(s, 0)
		if err != nil {
			t.Fatal(err)
		}
		return decimal128.FromBigInt(n)
	}
	for _, c := range []struct {
		typ, in string
		i       int64
		d       *decimal128.Num
		s       string
		err     string
	}{
		{typ: "long", in: `9007199254740993`, i: 9007199254740993},
		{typ: "long", in: `-9223372036854775808`, i: -9223372036854775808},
		{typ: "long", in: `"42"`, i: 42},
		{typ: "long", in: `9223372036854775808`, err: "does not fit in a long"},
		{typ: "long", in: `1.0`, err: "not an integer"},
		{typ: "long", in: `1e3`, err: "not an integer"},
		{typ: "int", in: `2147483648`, err: "does not fit in an int"},
		{typ: "decimal(12,2)", in: `12.3`, d: ptr(dec("1230"))},
		{typ: "decimal(12,2)", in: `1e2`, d: ptr(dec("10000"))},
		{typ: "decimal(12,2)", in: `1.2300`, d: ptr(dec("123"))},
		{typ: "decimal(12,2)", in: `"-0.05"`, d: ptr(dec("-5"))},
		{typ: "decimal(12,2)", in: `0.125`, err: "more than 2 decimal places"},
		{typ: "decimal(4,2)", in: `100.00`, err: "more than 4 digits"},
		{typ: "decimal(38,0)", in: `99999999999999999999999999999999999999`, d: ptr(dec("99999999999999999999999999999999999999"))},
		{typ: "decimal(38,0)", in: `1e38`, err: "more than 38 digits"},
		{typ: "decimal(12,2)", in: `true`, err: "is a boolean"},
		{typ: "timestamptz", in: `"2026-03-01T12:30:45.123456+02:00"`, i: 1772361045123456},
		{typ: "timestamptz", in: `"2026-03-01T12:30:45.1234567Z"`, err: "finer than microseconds"},
		{typ: "timestamptz", in: `"2026-03-01 12:30:45"`, err: "not an RFC 3339 time"},
		{typ: "timestamptz", in: `1772361045`, err: "is a number"},
		{typ: "timestamp", in: `"2026-03-01T12:30:45.123456"`, i: 1772368245123456},
		{typ: "timestamp", in: `"2026-03-01T12:30:45Z"`, err: "has a time zone offset"},
		{typ: "date", in: `"1969-12-31"`, i: -1},
		{typ: "date", in: `"2026-02-30"`, err: "not a date"},
		{typ: "binary", in: `"AAEC/w=="`, s: "\x00\x01\x02\xff"},
		{typ: "binary", in: `"not base64!"`, err: "not base64"},
		{typ: "string", in: `"h\u00e9"`, s: "hé"},
		{typ: "string", in: `{"a": [1, 2.50]}`, s: `{"a": [1, 2.50]}`},
		{typ: "string", in: `12345678901234567890`, s: `12345678901234567890`},
		{typ: "boolean", in: `"yes"`, err: "needs true or false"},
		{typ: "double", in: `0.1`},
		{typ: "double", in: `1e400`, err: "out of the range"},
	} {
		got, err := planOne(t, c.typ, c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "c: ") {
				t.Errorf("%s %s: error %v, want one naming the column c and saying %q", c.typ, c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("%s %s: %v", c.typ, c.in, err)
		case c.d != nil && got.d != *c.d:
			t.Errorf("%s %s: decimal %v, want %v", c.typ, c.in, got.d.BigInt(), c.d.BigInt())
		case c.d == nil && c.i != 0 && got.i != c.i:
			t.Errorf("%s %s: %d, want %d", c.typ, c.in, got.i, c.i)
		case c.s != "" && got.s != c.s:
			t.Errorf("%s %s: %q, want %q", c.typ, c.in, got.s, c.s)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A value deep in a nested column is refused with its path, and the record
// leaves no slot behind (nothing half-appended).
func TestNestedErrorNamesThePath(t *testing.T) {
	_, err := planOne(t, "struct<items: list<struct<price: decimal(5,2)>>>", `{"items": [{"price": 1.5}, {"price": 1.555}]}`)
	if err == nil || !strings.HasPrefix(err.Error(), "c.items[].price: ") {
		t.Fatalf("error %v, want one naming c.items[].price", err)
	}
	_, err = planOne(t, "map<long, string>", `{"12": "a", "x": "b"}`)
	if err == nil || !strings.Contains(err.Error(), `member name "x" is not an integer`) {
		t.Fatalf("error %v", err)
	}
}

func TestParseTypeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"varchar":                "is not a type",
		"decimal(40,2)":          "decimal(p,s) needs",
		"struct<a: int, a: int>": "listed twice",
		"map<double, int>":       "key type must be",
		"list<int":               `expected '>'`,
		"long extra":             "unexpected",
	} {
		ids := 0
		if _, err := parseType(in, &ids); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
