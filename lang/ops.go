package lang

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

// The operators of the expression language, evaluated by weir itself so
// that nothing is rounded or wraps in silence:
//
//   - Integers are int64. A result that does not fit (2 * 9223372036854775807,
//     -(-9223372036854775808)) is a record error.
//   - A number read from a record takes part as an int64 when it is an
//     integer literal within range, as a float64 when the float64 stands for
//     its decimal value exactly, and not at all otherwise: arithmetic on it
//     is a record error (comparing and copying it are exact).
//   - Mixing an int with a float converts the int to float64, which must
//     hold it exactly. Division (/) and ** always give a float64; the result
//     must be finite.
//   - % of two whole numbers is an integer; otherwise it is math.Mod.

// evalError is a record error of an operator or function: what went wrong,
// without the expression, which the caller adds.

// show describes a value in a message: numbers and strings as written (long
// ones cut), the rest by kind.
func show(v record.Value) string {
	switch v.Kind() {
	case record.Null:
		return "null"
	case record.Bool:
		if v.Bool() {
			return "true"
		}
		return "false"
	case record.Int, record.Float, record.Number:
		s := v.Literal()
		if len(s) > 40 {
			s = s[:20] + "…" + s[len(s)-10:]
		}
		return s
	case record.String:
		s := v.Text()
		if len(s) > 40 {
			s = s[:37] + "…"
		}
		return fmt.Sprintf("%q", s)
	case record.Time:
		return v.Time().Format(time.RFC3339Nano)
	case record.Duration:
		return v.Duration().String()
	}
	return "an " + v.Kind().String()
}

// typeName is the name of v's type in messages.
func typeName(v record.Value) string {
	switch v.Kind() {
	case record.Int:
		return "int"
	case record.Float:
		return "float"
	case record.Number:
		if f, _, _ := v.Form(); f == record.IntForm {
			return "int"
		}
		return "number"
	}
	return v.Kind().String()
}

func isNumber(v record.Value) bool {
	k := v.Kind()
	return k == record.Int || k == record.Float || k == record.Number
}

func mismatch(op string, a, b record.Value) error {
	if a.IsNull() || b.IsNull() {
		return errorf("invalid operation: %s %s %s (a missing field is null: default it with ??)", show(a), op, show(b))
	}
	return errorf("invalid operation: %s %s %s (mismatched types %s and %s)", show(a), op, show(b), typeName(a), typeName(b))
}

// operands returns the forms of two numbers for arithmetic, refusing those
// that arithmetic cannot hold exactly.
func operands(op string, a, b record.Value) (fa record.NumberForm, ia int64, xa float64, fb record.NumberForm, ib int64, xb float64, err error) {
	fa, ia, xa = a.Form()
	fb, ib, xb = b.Form()
	for _, c := range [2]struct {
		f record.NumberForm
		v record.Value
	}{{fa, a}, {fb, b}} {
		if c.f == record.BigForm {
			err = errorf("%s %s %s: %s fits neither int64 nor float64 exactly, so arithmetic on it would round (compare it, copy it or use string())",
				show(a), op, show(b), show(c.v))
			return
		}
	}
	if fa == record.IntForm && fb == record.IntForm {
		return
	}
	// A float is involved: both become float64, exactly.
	if fa == record.IntForm {
		if xa, err = intAsFloat(op, a, b, ia); err != nil {
			return
		}
	}
	if fb == record.IntForm {
		if xb, err = intAsFloat(op, a, b, ib); err != nil {
			return
		}
	}
	return
}

func intAsFloat(op string, a, b record.Value, i int64) (float64, error) {
	f, err := record.IntValue(i).Float()
	if err != nil {
		return 0, errorf("%s %s %s: %d has no exact float64, so mixing it with a float would round (convert the float with int() first)", show(a), op, show(b), i)
	}
	return f, nil
}

func floatResult(op string, a, b record.Value, f float64) (record.Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return record.Value{}, errorf("%s %s %s gives %v, which JSON cannot hold", show(a), op, show(b), f)
	}
	return record.FloatValue(f), nil
}

func overflow(op string, a, b record.Value) error {
	return errorf("integer overflow: %s %s %s does not fit int64", show(a), op, show(b))
}

func opAdd(a, b record.Value) (record.Value, error) {
	if isNumber(a) && isNumber(b) {
		fa, ia, xa, fb, ib, xb, err := operands("+", a, b)
		if err != nil {
			return record.Value{}, err
		}
		if fa == record.IntForm && fb == record.IntForm {
			s, ok := addInt(ia, ib)
			if !ok {
				return record.Value{}, overflow("+", a, b)
			}
			return record.IntValue(s), nil
		}
		return floatResult("+", a, b, xa+xb)
	}
	switch {
	case a.Kind() == record.String && b.Kind() == record.String:
		return record.StringValue(a.Text() + b.Text()), nil
	case a.Kind() == record.Time && b.Kind() == record.Duration:
		return record.TimeValue(a.Time().Add(b.Duration())), nil
	case a.Kind() == record.Duration && b.Kind() == record.Time:
		return record.TimeValue(b.Time().Add(a.Duration())), nil
	case a.Kind() == record.Duration && b.Kind() == record.Duration:
		return opAdd(record.IntValue(int64(a.Duration())), record.IntValue(int64(b.Duration())))
	case a.Kind() == record.Array && b.Kind() == record.Array:
		var out []record.Value
		a.Elems(func(_ int, e record.Value) bool { out = append(out, e); return true })
		b.Elems(func(_ int, e record.Value) bool { out = append(out, e); return true })
		return record.ArrayValue(out), nil
	}
	return record.Value{}, mismatch("+", a, b)
}

func opSub(a, b record.Value) (record.Value, error) {
	if isNumber(a) && isNumber(b) {
		fa, ia, xa, fb, ib, xb, err := operands("-", a, b)
		if err != nil {
			return record.Value{}, err
		}
		if fa == record.IntForm && fb == record.IntForm {
			d, ok := subInt(ia, ib)
			if !ok {
				return record.Value{}, overflow("-", a, b)
			}
			return record.IntValue(d), nil
		}
		return floatResult("-", a, b, xa-xb)
	}
	switch {
	case a.Kind() == record.Time && b.Kind() == record.Time:
		return record.DurationValue(a.Time().Sub(b.Time())), nil
	case a.Kind() == record.Time && b.Kind() == record.Duration:
		return record.TimeValue(a.Time().Add(-b.Duration())), nil
	case a.Kind() == record.Duration && b.Kind() == record.Duration:
		d, err := opSub(record.IntValue(int64(a.Duration())), record.IntValue(int64(b.Duration())))
		if err != nil {
			return d, err
		}
		i, _ := d.Int()
		return record.DurationValue(time.Duration(i)), nil
	}
	return record.Value{}, mismatch("-", a, b)
}

func opMul(a, b record.Value) (record.Value, error) {
	if isNumber(a) && isNumber(b) {
		fa, ia, xa, fb, ib, xb, err := operands("*", a, b)
		if err != nil {
			return record.Value{}, err
		}
		if fa == record.IntForm && fb == record.IntForm {
			p, ok := mulInt(ia, ib)
			if !ok {
				return record.Value{}, overflow("*", a, b)
			}
			return record.IntValue(p), nil
		}
		return floatResult("*", a, b, xa*xb)
	}
	if a.Kind() == record.Duration && isNumber(b) || isNumber(a) && b.Kind() == record.Duration {
		d, n := a, b
		if isNumber(a) {
			d, n = b, a
		}
		p, err := opMul(record.IntValue(int64(d.Duration())), n)
		if err != nil {
			return p, err
		}
		i, err := p.Int()
		if err != nil {
			return record.Value{}, errorf("%s * %s: %v", show(a), show(b), err)
		}
		return record.DurationValue(time.Duration(i)), nil
	}
	return record.Value{}, mismatch("*", a, b)
}

func opDiv(a, b record.Value) (record.Value, error) {
	if !isNumber(a) || !isNumber(b) {
		return record.Value{}, mismatch("/", a, b)
	}
	fa, ia, xa, fb, ib, xb, err := operands("/", a, b)
	if err != nil {
		return record.Value{}, err
	}
	// Division gives a float64 (as in expr): the ints are converted, exactly.
	if fa == record.IntForm {
		if xa, err = intAsFloat("/", a, b, ia); err != nil {
			return record.Value{}, err
		}
	}
	if fb == record.IntForm {
		if xb, err = intAsFloat("/", a, b, ib); err != nil {
			return record.Value{}, err
		}
	}
	if xb == 0 {
		return record.Value{}, errorf("division by zero: %s / %s", show(a), show(b))
	}
	return floatResult("/", a, b, xa/xb)
}

// wholeInt returns a number that is whole and within int64 as an int64.
func wholeInt(f record.NumberForm, i int64, x float64) (int64, bool) {
	switch f {
	case record.IntForm:
		return i, true
	case record.FloatForm:
		if x == math.Trunc(x) && x >= -0x1p63 && x < 0x1p63 {
			return int64(x), true
		}
	}
	return 0, false
}

func opMod(a, b record.Value) (record.Value, error) {
	if !isNumber(a) || !isNumber(b) {
		return record.Value{}, mismatch("%", a, b)
	}
	fa, ia, xa := a.Form()
	fb, ib, xb := b.Form()
	if x, ok := wholeInt(fa, ia, xa); ok {
		if y, ok := wholeInt(fb, ib, xb); ok {
			if y == 0 {
				return record.Value{}, errorf("integer modulo by zero: %s %% %s", show(a), show(b))
			}
			return record.IntValue(x % y), nil
		}
	}
	fa, ia, xa, fb, ib, xb, err := operands("%", a, b)
	if err != nil {
		return record.Value{}, err
	}
	_, _, _, _ = fa, ia, fb, ib
	if xb == 0 {
		return record.Value{}, errorf("modulo by zero: %s %% %s", show(a), show(b))
	}
	return floatResult("%", a, b, math.Mod(xa, xb))
}

func opPow(a, b record.Value) (record.Value, error) {
	if !isNumber(a) || !isNumber(b) {
		return record.Value{}, mismatch("**", a, b)
	}
	x, err := toFloat("**", a, b, a)
	if err != nil {
		return record.Value{}, err
	}
	y, err := toFloat("**", a, b, b)
	if err != nil {
		return record.Value{}, err
	}
	return floatResult("**", a, b, math.Pow(x, y))
}

func toFloat(op string, a, b, v record.Value) (float64, error) {
	f, err := v.Float()
	if err != nil {
		return 0, errorf("%s %s %s: %s has no exact float64, so the result would be rounded", show(a), op, show(b), show(v))
	}
	return f, nil
}

func opNeg(a record.Value) (record.Value, error) {
	switch a.Kind() {
	case record.Duration:
		if a.Duration() == math.MinInt64 {
			return record.Value{}, errorf("integer overflow: -(%s) does not fit int64", show(a))
		}
		return record.DurationValue(-a.Duration()), nil
	case record.Int, record.Float, record.Number:
	default:
		return record.Value{}, errorf("invalid operation: -%s (%s is not a number)", show(a), typeName(a))
	}
	f, i, x := a.Form()
	switch f {
	case record.IntForm:
		n, ok := negInt(i)
		if !ok {
			return record.Value{}, errorf("integer overflow: -(%s) does not fit int64", show(a))
		}
		return record.IntValue(n), nil
	case record.FloatForm:
		return record.FloatValue(-x), nil
	}
	// Exact: flip the literal's sign.
	lit := a.Literal()
	if strings.HasPrefix(lit, "-") {
		return record.NumberLiteral(lit[1:]), nil
	}
	return record.NumberLiteral("-" + lit), nil
}

// compare orders two values of the same ordered type: numbers (exactly),
// strings (by bytes), times and durations.
func compare(op string, a, b record.Value) (int, error) {
	switch {
	case isNumber(a) && isNumber(b):
		c, err := record.CompareNumbers(a, b)
		if err != nil {
			return 0, errorf("%s %s %s: %v", show(a), op, show(b), err)
		}
		return c, nil
	case a.Kind() == record.String && b.Kind() == record.String:
		return strings.Compare(a.Text(), b.Text()), nil
	case a.Kind() == record.Time && b.Kind() == record.Time:
		return a.Time().Compare(b.Time()), nil
	case a.Kind() == record.Duration && b.Kind() == record.Duration:
		switch {
		case a.Duration() < b.Duration():
			return -1, nil
		case a.Duration() > b.Duration():
			return 1, nil
		}
		return 0, nil
	}
	return 0, mismatch(op, a, b)
}

// equal is ==: values of different types are not equal (1 and "1"), numbers
// are compared by value (1 == 1.0), objects and arrays member by member.
func equal(a, b record.Value) (bool, error) {
	ka, kb := a.Kind(), b.Kind()
	switch {
	case isNumber(a) && isNumber(b):
		c, err := record.CompareNumbers(a, b)
		return c == 0, err
	case ka != kb:
		return false, nil
	}
	switch ka {
	case record.Null:
		return true, nil
	case record.Bool:
		return a.Bool() == b.Bool(), nil
	case record.String:
		return a.Text() == b.Text(), nil
	case record.Time:
		return a.Time().Equal(b.Time()), nil
	case record.Duration:
		return a.Duration() == b.Duration(), nil
	case record.Array:
		if a.Len() != b.Len() {
			return false, nil
		}
		eq := true
		var err error
		a.Elems(func(i int, e record.Value) bool {
			f, _ := b.Index(i)
			eq, err = equal(e, f)
			return eq && err == nil
		})
		return eq, err
	case record.Object:
		if a.Len() != b.Len() {
			return false, nil
		}
		eq := true
		var err error
		a.Range(func(name string, e record.Value) bool {
			f, ok := b.Get(name)
			if !ok {
				eq = false
				return false
			}
			eq, err = equal(e, f)
			return eq && err == nil
		})
		return eq, err
	}
	return false, nil
}

// opIn is `a in b`: an element of an array, a member name of an object.
func opIn(a, b record.Value) (record.Value, error) {
	switch b.Kind() {
	case record.Array:
		found := false
		var err error
		b.Elems(func(_ int, e record.Value) bool {
			found, err = equal(a, e)
			return !found && err == nil
		})
		return record.BoolValue(found), err
	case record.Object:
		if a.Kind() != record.String {
			return record.Value{}, errorf("invalid operation: %s in an object (member names are strings)", show(a))
		}
		_, ok := b.Get(a.Text())
		return record.BoolValue(ok), nil
	case record.Null:
		return record.BoolValue(false), nil
	}
	return record.Value{}, errorf("invalid operation: %s in %s (in needs an array or an object)", show(a), show(b))
}

// runeLen is len of a string, in characters as expr counts them.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
