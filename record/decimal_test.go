package record_test

import (
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/record"
)

// Guarantee: a float that is the nearest float64 to a decimal of at most 15
// significant digits and 4 decimals is written by the short path, and as
// strconv's shortest form writes it.
func TestShortDecimalIsTheShortestForm(t *testing.T) {
	pow := []float64{1, 10, 100, 1000, 10000}
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.Int64Range(-999_999_999_999_999, 999_999_999_999_999).Draw(t, "m")
		k := rapid.IntRange(0, 4).Draw(t, "k")
		f := float64(m) / pow[k]
		got, ok := record.AppendShortDecimal(nil, f)
		if f == 0 {
			if ok {
				t.Fatalf("zero took the short path: %s", got)
			}
			return
		}
		want := strconv.FormatFloat(f, 'f', -1, 64)
		if !ok || string(got) != want {
			t.Fatalf("%d/10^%d: short path gave %q, %v; want %q", m, k, got, ok, want)
		}
	})
}

// Guarantee: whatever float the short path takes, it writes as strconv
// does; it appends nothing when it does not take one.
func TestShortDecimalOfAnyFloat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f float64
		if rapid.Bool().Draw(t, "bits") {
			f = math.Float64frombits(rapid.Uint64().Draw(t, "f"))
		} else {
			f = rapid.Float64Range(-1e16, 1e16).Draw(t, "f")
		}
		got, ok := record.AppendShortDecimal([]byte("x"), f)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("%v: appended %q without taking it", f, got)
			}
			return
		}
		if want := "x" + strconv.FormatFloat(f, 'f', -1, 64); string(got) != want {
			t.Fatalf("%v: short path gave %q, want %q", f, got, want)
		}
	})
}

// Guarantee: the short path's limits, each side: 15 digits, 4 decimals,
// zero and what is not a number.
func TestShortDecimalLimits(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string // "" when the short path must not take it
	}{
		{999_999_999_999_999, "999999999999999"},
		{-999_999_999_999_999, "-999999999999999"},
		{1e15, ""},
		{-1e15, ""},
		{99_999_999_999.9999, "99999999999.9999"},
		{-99_999_999_999.9999, "-99999999999.9999"},
		{0.0001, "0.0001"},
		{-0.0001, "-0.0001"},
		{0.00001, ""},
		{12.5, "12.5"},
		{-0.05, "-0.05"},
		{1, "1"},
		{-7, "-7"},
		{123.45678, ""},
		{1.0 / 3, ""},
		{0, ""},
		{math.Copysign(0, -1), ""},
		{math.NaN(), ""},
		{math.Inf(1), ""},
		{math.Inf(-1), ""},
	} {
		got, ok := record.AppendShortDecimal(nil, c.f)
		if ok != (c.want != "") || string(got) != c.want {
			t.Errorf("%v: short path gave %q, %v; want %q", c.f, got, ok, c.want)
		}
		if c.want != "" {
			if w := string(record.FloatValue(c.f).AppendJSON(nil)); w != c.want {
				t.Errorf("%v: written as %s, want %s", c.f, w, c.want)
			}
		}
	}
}
