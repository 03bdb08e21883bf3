package record_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/weir-etl/weir/record"
)

// Guarantee: a number an expression computed converts as exactly as a
// literal. A float64 stands for its shortest decimal form, the one it is
// written as: it is an int64 when that form is an integer within range
// (2^60 is 1152921504606847000, -2^63 is -9223372036854776000, beyond
// range), and an int64 is a float64 only when the float64 prints as the
// same integer.
func TestComputedNumbersConvertOnlyExactly(t *testing.T) {
	ints := []struct {
		f  float64
		i  int64
		ok bool
	}{
		{-0x1p63, 0, false},
		{0x1p63, 0, false},
		{0x1p60, 1152921504606847000, true},
		{-0x1p53, -1 << 53, true},
		{1e17, 1e17, true},
		{-3, -3, true},
		{math.Copysign(0, -1), 0, true},
		{2.5, 0, false},
		{math.MaxFloat64, 0, false},
	}
	for _, c := range ints {
		i, err := record.FloatValue(c.f).Int()
		if (err == nil) != c.ok || err == nil && i != c.i {
			t.Errorf("FloatValue(%v).Int() = %d, %v", c.f, i, err)
		}
		if err != nil && !errors.Is(err, record.ErrNotExact) {
			t.Errorf("FloatValue(%v).Int() error %v is not ErrNotExact", c.f, err)
		}
	}
	floats := []struct {
		i  int64
		f  float64
		ok bool
	}{
		{1 << 53, 0x1p53, true},
		{-1 << 53, -0x1p53, true},
		{1<<53 + 1, 0, false},
		{-1<<53 - 1, 0, false},
		{1e17, 1e17, true},
		{1 << 60, 0, false}, // prints as 1152921504606847000
		{math.MaxInt64, 0, false},
		{math.MinInt64, 0, false}, // the float64 -2^63 prints as -9223372036854776000
	}
	for _, c := range floats {
		f, err := record.IntValue(c.i).Float()
		if (err == nil) != c.ok || err == nil && f != c.f {
			t.Errorf("IntValue(%d).Float() = %v, %v", c.i, f, err)
		}
	}
	for _, v := range []record.Value{record.StringValue("1"), record.BoolValue(true), record.NullValue()} {
		if _, err := v.Int(); err == nil {
			t.Errorf("%v.Int() gave no error", v.Kind())
		}
		if _, err := v.Float(); err == nil {
			t.Errorf("%v.Float() gave no error", v.Kind())
		}
	}
}

// Guarantee: an error about a number quotes its literal whole up to 40
// characters; a longer one is cut to its first 20 and last 10 characters
// and its length, so a record of a huge number gives a short message.
func TestNumberErrorsQuoteTheLiteral(t *testing.T) {
	lit40 := "1234567890123456789012345678901234567890"
	if _, err := record.NumberLiteral(lit40).Int(); err == nil || err.Error() != lit40+" cannot be held exactly as an int64" {
		t.Errorf("40 digits: %v", err)
	}
	lit41 := "9" + lit40
	want := "91234567890123456789…1234567890 (41 characters) cannot be held exactly as an int64"
	if _, err := record.NumberLiteral(lit41).Int(); err == nil || err.Error() != want {
		t.Errorf("41 digits: %v, want %q", err, want)
	}
}

// Guarantee: a float64 is written as encoding/json writes it: the shortest
// form that reads back as the same float64, with an exponent only below
// 1e-6 and from 1e21 on, and no leading zero in a negative exponent.
func TestFloatsWrittenAsEncodingJSON(t *testing.T) {
	for _, f := range []float64{
		0, math.Copysign(0, -1), 1, -1, 0.1, 123.456, 1e20, 999999999999999900000,
		1e21, -1e21, 1.5e300, math.MaxFloat64,
		1e-6, -1e-6, 9.99999e-7, 1e-7, 1.5e-10, 1e-100, 5e-324,
	} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		v := record.FloatValue(f)
		if got := string(v.AppendJSON(nil)); got != string(want) {
			t.Errorf("%v written as %s, encoding/json writes %s", f, got, want)
		}
		if got := string(v.AppendJSON([]byte("x:"))); got != "x:"+string(want) {
			t.Errorf("%v appended as %s", f, got)
		}
		if got := v.Literal(); got != string(want) {
			t.Errorf("%v has the literal %s, encoding/json writes %s", f, got, want)
		}
	}
}

// Guarantee: two numbers compare exactly, whatever their forms: int64,
// float64, and literals beyond both.
func TestCompareNumbersExactly(t *testing.T) {
	n := record.NumberLiteral
	cases := []struct {
		a, b record.Value
		want int
	}{
		{record.IntValue(1), record.IntValue(2), -1},
		{record.IntValue(2), record.IntValue(1), 1},
		{record.IntValue(3), n("3"), 0},
		{n("-5"), n("-7"), 1},
		{record.FloatValue(0.25), record.FloatValue(0.5), -1},
		{record.FloatValue(0.5), record.FloatValue(0.25), 1},
		{record.FloatValue(0.1), n("0.1"), 0},
		{n("-0"), record.FloatValue(0), 0},
		{record.IntValue(1), record.FloatValue(1.5), -1},
		{n("2"), n("1.5"), 1},
		{n("1.5"), n("2"), -1},
		{record.FloatValue(2.5), record.IntValue(2), 1},
		{record.IntValue(1 << 53), record.FloatValue(0x1p53), 0},
		{record.FloatValue(-0x1p53), record.IntValue(-1 << 53), 0},
		{record.IntValue(-1<<53 - 1), record.FloatValue(-0x1p53), -1},
		{record.FloatValue(-0x1p53), record.IntValue(-1<<53 - 1), 1},
		{record.IntValue(1<<53 + 1), record.FloatValue(0x1p53), 1},
		{record.FloatValue(0x1p53), record.IntValue(1<<53 + 1), -1},
		{record.FloatValue(0x1p53), n("9007199254740993"), -1},
		{n("9007199254740993"), record.FloatValue(0x1p53), 1},
		{n("12345678901234567891"), n("12345678901234567890"), 1},
		{n("1e400"), n("1e399"), 1},
		{n("-1e400"), record.IntValue(math.MinInt64), -1},
		{n("1.152921504606847e18"), n("1152921504606847000"), 0},
		// A float64 compares as the decimal it is written as, as a
		// literal of it would: 0.1, not 0.1000000000000000055511...
		{n("0.10000000000000000001"), record.FloatValue(0.1), 1},
		{record.FloatValue(0.1), n("0.10000000000000000001"), -1},
		{record.FloatValue(0x1p60), record.IntValue(1152921504606847000), 0},
		{record.IntValue(1 << 60), record.FloatValue(0x1p60), -1},
	}
	for _, c := range cases {
		got, err := record.CompareNumbers(c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("CompareNumbers(%s, %s) = %d, %v; want %d", c.a.AppendJSON(nil), c.b.AppendJSON(nil), got, err, c.want)
		}
	}
	for _, c := range [][2]record.Value{
		{record.StringValue("1"), record.IntValue(1)},
		{record.IntValue(1), record.BoolValue(true)},
		{n("1e1000000"), n("1")},
		{n("1"), n("1e-1000001")},
	} {
		if got, err := record.CompareNumbers(c[0], c[1]); err == nil {
			t.Errorf("CompareNumbers(%s, %s) = %d, want an error", c[0].AppendJSON(nil), c[1].AppendJSON(nil), got)
		}
	}
}

// Guarantee: Rat gives any number's exact value, up to 10^999999 and down
// to 1e-1000000, and beyond them an error that says why instead of
// expanding a million digits.
func TestRatLimits(t *testing.T) {
	for _, c := range []struct {
		lit        string
		num, denom int // bit lengths of the exact value's numerator and denominator
		err        string
	}{
		{"1e999999", 3321925, 1, ""}, // 10^999999
		{"1e-1000000", 1, 3321929, ""},
		{"1e1000000", 0, 0, "the number 1e1000000 is too large to compare (over a million digits)"},
		{"10e999999", 0, 0, "the number 10e999999 is too large to compare (over a million digits)"},
		{"1e-1000001", 0, 0, "the number 1e-1000001 has an exponent too large to compare (beyond a million)"},
	} {
		r, err := record.NumberLiteral(c.lit).Rat()
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Rat(%s) error %v, want %q", c.lit, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Rat(%s): %v", c.lit, err)
			continue
		}
		if r.Num().BitLen() != c.num || r.Denom().BitLen() != c.denom {
			t.Errorf("Rat(%s) has a %d-bit numerator and a %d-bit denominator, want %d and %d", c.lit, r.Num().BitLen(), r.Denom().BitLen(), c.num, c.denom)
		}
	}
	if r, err := record.NumberLiteral("-2.5").Rat(); err != nil || r.RatString() != "-5/2" {
		t.Errorf("Rat(-2.5) = %v, %v", r, err)
	}
	if r, err := record.FloatValue(0.1).Rat(); err != nil || r.RatString() != "1/10" {
		t.Errorf("Rat of the float64 0.1 = %v, %v: want the decimal it is written as", r, err)
	}
	if r, err := record.IntValue(-7).Rat(); err != nil || r.RatString() != "-7" {
		t.Errorf("Rat(-7) = %v, %v", r, err)
	}
	if _, err := record.StringValue("1").Rat(); err == nil || err.Error() != "string is not a number" {
		t.Errorf("Rat of a string: %v", err)
	}
}

// Guarantee: IntForm gives a number's int64 exactly when Form calls it
// IntForm, whatever the value, and IntFormIn gives what IntForm gives.
func TestIntFormAgreesWithForm(t *testing.T) {
	values := []record.Value{record.IntValue(0), record.IntValue(-1 << 63), record.FloatValue(3),
		record.FloatValue(0.5), record.NullValue(), record.StringValue("12"), record.BoolValue(true),
		record.DurationValue(5)}
	for _, lit := range []string{"0", "-0", "12", "-12", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e3", "12.0", "0.5", "1E2"} {
		values = append(values, record.NumberLiteral(lit))
	}
	for _, v := range values {
		form, i, _ := v.Form()
		got, ok := v.IntForm()
		if ok != (form == record.IntForm) || ok && got != i {
			t.Errorf("%v %s: IntForm gives %d, %v; Form gives %v, %d", v.Kind(), v.AppendJSON(nil), got, ok, form, i)
		}
		if inGot, inOK := record.IntFormIn(&v); inGot != got || inOK != ok {
			t.Errorf("%v %s: IntFormIn gives %d, %v; IntForm %d, %v", v.Kind(), v.AppendJSON(nil), inGot, inOK, got, ok)
		}
	}
}
