package record_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
)

type (
	myInt    int16
	myUint   uint32
	myFloat  float32
	myString string
	myBool   bool
)

// Guarantee: FromGo gives each Go value its JSON form: integers exactly
// (unsigned ones beyond int64 as their digits), json.Number as its literal
// when it is a JSON number, slices and arrays as arrays, maps with string
// keys as objects sorted by name, a pointer as what it points to.
func TestFromGo(t *testing.T) {
	n := 7
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   any
		want string
		kind record.Kind
	}{
		{nil, `null`, record.Null},
		{record.StringValue("v"), `"v"`, record.String},
		{true, `true`, record.Bool},
		{-5, `-5`, record.Int},
		{int64(math.MinInt64), `-9223372036854775808`, record.Int},
		{int32(-7), `-7`, record.Int},
		{2.5, `2.5`, record.Float},
		{float32(0.5), `0.5`, record.Float},
		{"a\xffb", "\"a\xffb\"", record.String},
		{[]byte("x\n"), `"x\n"`, record.String},
		{ts, `"2025-01-02T03:04:05Z"`, record.Time},
		{1500 * time.Millisecond, `"1.5s"`, record.Duration},
		{json.Number("12.50"), `12.50`, record.Number},
		{json.Number("-0"), `-0`, record.Number},
		{json.Number("0.5"), `0.5`, record.Number},
		{json.Number("9"), `9`, record.Number},
		{json.Number("9e999"), `9e999`, record.Number},
		{[]any{1, "x", nil, []any{true}}, `[1,"x",null,[true]]`, record.Array},
		{[]any{}, `[]`, record.Array},
		{map[string]any{"b": 1, "a": map[string]any{"d": 2, "c": 3}}, `{"a":{"c":3,"d":2},"b":1}`, record.Object},
		{map[string]any{}, `{}`, record.Object},
		{myInt(-3), `-3`, record.Int},
		{int8(-128), `-128`, record.Int},
		{uint8(255), `255`, record.Int},
		{uint64(math.MaxInt64), `9223372036854775807`, record.Int},
		{uint64(math.MaxInt64 + 1), `9223372036854775808`, record.Number},
		{uint64(math.MaxUint64), `18446744073709551615`, record.Number},
		{myUint(4), `4`, record.Int},
		{myFloat(0.25), `0.25`, record.Float},
		{myString("s"), `"s"`, record.String},
		{myBool(true), `true`, record.Bool},
		{[]int{1, 2}, `[1,2]`, record.Array},
		{[2]string{"a", "b"}, `["a","b"]`, record.Array},
		{map[string]int{"z": 1, "y": 2}, `{"y":2,"z":1}`, record.Object},
		{map[myString]bool{"k": false}, `{"k":false}`, record.Object},
		{&n, `7`, record.Int},
		{(*int)(nil), `null`, record.Null},
	}
	for _, c := range cases {
		v, err := record.FromGo(c.in)
		if err != nil {
			t.Errorf("FromGo(%#v): %v", c.in, err)
			continue
		}
		if got := string(v.AppendJSON(nil)); got != c.want || v.Kind() != c.kind {
			t.Errorf("FromGo(%#v) = %s (%v), want %s (%v)", c.in, got, v.Kind(), c.want, c.kind)
		}
	}
	for _, in := range []any{
		math.NaN(), math.Inf(1), float32(math.Inf(-1)), myFloat(float32(math.NaN())),
		json.Number(""), json.Number("abc"), json.Number(" 1"), json.Number("1."), json.Number("+1"),
		json.Number(`"1"`), json.Number("true"), json.Number("null"), json.Number("[1]"), json.Number("{}"),
		[]any{1, math.NaN()}, map[string]any{"k": math.Inf(1)},
		[]float64{math.NaN()}, map[string]float64{"k": math.NaN()},
		map[int]string{1: "a"}, struct{}{}, make(chan int), func() {},
	} {
		if v, err := record.FromGo(in); err == nil {
			t.Errorf("FromGo(%#v) = %s, want an error", in, v.AppendJSON(nil))
		}
	}
	if _, err := record.FromGo(map[string]any{"k": math.NaN()}); err == nil || err.Error() != "k: NaN is not a number JSON can hold" {
		t.Errorf("a bad member's error does not name it: %v", err)
	}
}

// Guarantee: ToGo gives plain Go values, numbers only exactly: an integer
// as int, a number a float64 holds as float64, anything else an error, in
// an array or object too.
func TestToGo(t *testing.T) {
	ts := time.Unix(1700000000, 0).UTC()
	cases := []struct {
		v    record.Value
		want any
	}{
		{record.NullValue(), nil},
		{record.BoolValue(true), true},
		{record.BoolValue(false), false},
		{mustParse(t, `true`), true},
		{record.IntValue(-4), -4},
		{record.FloatValue(0.5), 0.5},
		{mustParse(t, `42`), 42},
		{mustParse(t, `1e2`), 100.0},
		{mustParse(t, `0.1`), 0.1},
		{mustParse(t, `"a\u00e9"`), "aé"},
		{record.StringValue("x"), "x"},
		{record.TimeValue(ts), ts},
		{record.DurationValue(time.Second), time.Second},
		{mustParse(t, `[1,"a",[true],{}]`), []any{1, "a", []any{true}, map[string]any{}}},
		{mustParse(t, `[]`), []any{}},
		{mustParse(t, `{"a":1,"b":{"c":null},"a":2}`), map[string]any{"a": 2, "b": map[string]any{"c": nil}}},
	}
	for _, c := range cases {
		got, err := c.v.ToGo()
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: ToGo = %#v, %v; want %#v", c.v.AppendJSON(nil), got, err, c.want)
		}
	}
	for _, js := range []string{`12345678901234567891`, `0.10000000000000000001`, `[1,12345678901234567891]`, `{"a":1,"b":1e400}`} {
		if got, err := mustParse(t, js).ToGo(); err == nil || !errors.Is(err, record.ErrNotExact) {
			t.Errorf("%s: ToGo = %#v, %v; want an ErrNotExact", js, got, err)
		}
	}
}
