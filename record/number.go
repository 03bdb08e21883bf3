package record

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// A number read from a record is its literal. It is converted only when an
// expression computes with it, and only exactly:
//
//   - Int gives an int64 for a literal whose decimal value is an integer
//     within int64's range, however it is written (42, 1e3, 12.0,
//     1.152921504606847e18). It reads the literal's digits, not the float64
//     nearest them: that float64 can be another integer (2^60 for the last
//     example).
//   - Float gives a float64 when the float64 stands for the literal's exact
//     decimal value in the usual sense: its shortest decimal form is the
//     literal's value (0.1 is 0.1; 9007199254740993 and
//     0.10000000000000000001 are not, as the nearest float64 prints
//     otherwise).
//   - Rat gives the exact value of any literal, for comparisons.
//
// A float64 that an expression computed stands, likewise, for its shortest
// decimal form, the one it is written out as: 0.1 is 1/10, not the binary
// fraction nearest it, and 2^60 is 1152921504606847000. So a float64 and a
// literal of it convert and compare alike, and a number compares as it is
// written.
//
// Anything else is an error that says so; nothing is rounded in silence.

// ErrNotExact is the error of a number that the type asked for cannot hold
// exactly.
var ErrNotExact = errors.New("cannot be held exactly")

// NumberForm says how a number can be computed with.
type NumberForm uint8

// Number forms.
const (
	NotANumber NumberForm = iota
	IntForm               // exact as an int64
	FloatForm             // exact as a float64 (a fraction or exponent, or an integer written with one)
	BigForm               // neither: only comparisons and copies are exact
)

// Form returns how v, a number of any kind, can be computed with, with its
// int64 or float64 value.
func (v Value) Form() (NumberForm, int64, float64) {
	switch v.kind {
	case Int:
		return IntForm, int64(v.n), 0
	case Float:
		return FloatForm, 0, math.Float64frombits(v.n)
	case Number:
		return literalForm(v.s)
	}
	return NotANumber, 0, 0
}

// literalForm classifies the JSON number literal s.
func literalForm(s string) (NumberForm, int64, float64) {
	if i, ok := parseIntLiteral(s); ok {
		return IntForm, i, 0
	}
	if isIntegerLiteral(s) {
		return BigForm, 0, 0
	}
	if f, ok := exactFloat(s); ok {
		return FloatForm, 0, f
	}
	return BigForm, 0, 0
}

func isIntegerLiteral(s string) bool {
	return !strings.ContainsAny(s, ".eE")
}

// parseIntLiteral parses an integer literal of up to 19 digits without
// strconv's allocation-free but slower generality.
func parseIntLiteral(s string) (int64, bool) {
	neg := s != "" && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if d == "" || len(d) > 19 {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if len(d) == 19 && d > "9223372036854775808" {
		return 0, false // u wrapped
	}
	if neg {
		if u > math.MaxInt64+1 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// exactFloat returns the float64 of the literal s if that float64 stands
// for s's decimal value exactly (see the comment at the top of this file).
func exactFloat(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	digits, exp := normDecimal(s)
	if len(digits) <= 15 && f != 0 && math.Abs(f) >= 0x1p-1022 {
		// Every decimal of 15 significant digits or fewer within the
		// normal range is the shortest form of its nearest float64.
		return f, true
	}
	if digits == "" {
		return f, true // a zero
	}
	var buf [32]byte
	fd, fexp := normDecimal(string(strconv.AppendFloat(buf[:0], f, 'e', -1, 64)))
	return f, fd == digits && fexp == exp
}

// normDecimal returns the significant digits of the decimal literal s
// (without leading or trailing zeros) and the exponent e such that s's
// absolute value is 0.digits × 10^e. A zero gives "" and 0.
func normDecimal(s string) (string, int) {
	s = strings.TrimPrefix(s, "-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			e = math.MaxInt32 // beyond anything a float64 has
		}
		exp = e
		s = s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	all := intPart + frac
	exp += len(intPart)
	lead := 0
	for lead < len(all) && all[lead] == '0' {
		lead++
	}
	all = all[lead:]
	exp -= lead
	all = strings.TrimRight(all, "0")
	if all == "" {
		return "", 0
	}
	return all, exp
}

// Rat returns the exact value of a number, or an error for one too far
// from 1 to expand: a value of over a million digits (10^1000000), or a
// literal whose exponent is beyond a million (math/big's limit: 1e-1000001).
func (v Value) Rat() (*big.Rat, error) {
	switch v.kind {
	case Int:
		return new(big.Rat).SetInt64(int64(v.n)), nil
	case Float:
		r, _ := new(big.Rat).SetString(shortestFloat(floatOf(v)))
		return r, nil
	case Number:
		if _, exp := normDecimal(v.s); exp > 1e6 {
			return nil, fmt.Errorf("the number %s is too large to compare (over a million digits)", shorten(v.s))
		}
		// A valid literal that math/big refuses has an exponent beyond its
		// limit; a value that small has its first digit a million places
		// after the point, so no bound of ours is needed below.
		r, ok := new(big.Rat).SetString(v.s)
		if !ok {
			return nil, fmt.Errorf("the number %s has an exponent too large to compare (beyond a million)", shorten(v.s))
		}
		return r, nil
	}
	return nil, fmt.Errorf("%s is not a number", v.kind)
}

// Int returns a number as an int64, exactly, or an error saying why it
// cannot be one.
func (v Value) Int() (int64, error) {
	switch v.kind {
	case Int:
		return int64(v.n), nil
	case Float:
		// Within ±2^53 an integral float64 is its own shortest form; beyond,
		// its shortest form may be another integer (2^60).
		if f := floatOf(v); f == math.Trunc(f) && math.Abs(f) <= 0x1p53 {
			return int64(f), nil
		}
		if i, ok := decimalInt(shortestFloat(floatOf(v))); ok {
			return i, nil
		}
	case Number:
		if i, ok := parseIntLiteral(v.s); ok {
			return i, nil
		}
		if i, ok := decimalInt(v.s); ok {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s %w as an int64", shorten(v.Literal()), ErrNotExact)
}

// decimalInt returns the value of the number literal s if it is an integer
// within int64's range, written with an exponent or a fraction.
func decimalInt(s string) (int64, bool) {
	digits, exp := normDecimal(s)
	if digits == "" {
		return 0, true
	}
	if exp < len(digits) || exp > 19 {
		return 0, false // a fraction, or more than 19 digits
	}
	var buf [20]byte
	b := buf[:0]
	if s[0] == '-' {
		b = append(b, '-')
	}
	b = append(b, digits...)
	for range exp - len(digits) {
		b = append(b, '0')
	}
	return parseIntLiteral(string(b))
}

// Float returns a number as a float64, exactly (see the comment at the top
// of this file), or an error saying why it cannot be one.
func (v Value) Float() (float64, error) {
	form, i, f := v.Form()
	switch form {
	case FloatForm:
		return f, nil
	case IntForm:
		if g, ok := intToFloat(i); ok {
			return g, nil
		}
	}
	return 0, fmt.Errorf("%s %w as a float64", shorten(v.Literal()), ErrNotExact)
}

// shortestFloat returns the shortest decimal form of f, the number f stands
// for.
func shortestFloat(f float64) string {
	var buf [32]byte
	return string(strconv.AppendFloat(buf[:0], f, 'e', -1, 64))
}

// intToFloat converts i to the float64 that stands for it exactly, if any:
// every integer up to 2^53 in magnitude, and beyond it those whose float64
// prints as the same integer (10^17, not 2^60).
func intToFloat(i int64) (float64, bool) {
	if i >= -(1<<53) && i <= 1<<53 {
		return float64(i), true
	}
	g := float64(i)
	if g >= 0x1p63 || int64(g) != i {
		return 0, false
	}
	var a, b [32]byte
	d1, e1 := normDecimal(string(strconv.AppendInt(a[:0], i, 10)))
	d2, e2 := normDecimal(string(strconv.AppendFloat(b[:0], g, 'e', -1, 64)))
	return g, d1 == d2 && e1 == e2
}

// shorten cuts a long literal for messages.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:20] + "…" + s[len(s)-10:] + fmt.Sprintf(" (%d characters)", len(s))
	}
	return s
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// form, with an exponent only for very large or small magnitudes.
func appendFloat(dst []byte, f float64) []byte {
	if d, ok := appendShortDecimal(dst, f); ok {
		return d
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// CompareNumbers compares two numbers exactly: -1, 0 or 1.
func CompareNumbers(a, b Value) (int, error) {
	fa, ia, xa := a.Form()
	fb, ib, xb := b.Form()
	switch {
	case fa == IntForm && fb == IntForm:
		switch {
		case ia < ib:
			return -1, nil
		case ia > ib:
			return 1, nil
		}
		return 0, nil
	case fa == FloatForm && fb == FloatForm:
		switch {
		case xa < xb:
			return -1, nil
		case xa > xb:
			return 1, nil
		}
		return 0, nil
	case fa == IntForm && fb == FloatForm && ia >= -(1<<53) && ia <= 1<<53:
		return CompareNumbers(FloatValue(float64(ia)), b)
	case fa == FloatForm && fb == IntForm && ib >= -(1<<53) && ib <= 1<<53:
		return CompareNumbers(a, FloatValue(float64(ib)))
	}
	ra, err := a.Rat()
	if err != nil {
		return 0, err
	}
	rb, err := b.Rat()
	if err != nil {
		return 0, err
	}
	return ra.Cmp(rb), nil
}

// IntForm returns the int64 of a number whose Form is IntForm, and false for
// any other value. It is Form's answer for integer arithmetic without the
// cost of classifying the numbers that are not integers.
func (v Value) IntForm() (int64, bool) { return v.intForm() }

// IntFormIn is v.IntForm(), read where v lies. A caller that has a Value in
// memory and passes it on by value copies it first, and a copy made with
// loads wider than the stores that wrote the Value just before stalls the
// core (store forwarding): the evaluation of a condition did so for every
// record.
func IntFormIn(v *Value) (int64, bool) { return v.intForm() }

func (v *Value) intForm() (int64, bool) {
	switch v.kind {
	case Int:
		return int64(v.n), true
	case Number:
		return parseIntLiteral(v.s)
	}
	return 0, false
}
