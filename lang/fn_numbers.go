package lang

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/record"
)

func init() {
	num := Param{Name: "x", Type: TNumber | TNull}
	register(
		&Func{Name: "parse_int", Category: "numbers", Params: []Param{{Name: "s", Type: TString | TNull}, {Name: "base", Type: TNumber, Optional: true}}, Result: TInt,
			Doc: "The integer s writes, in base (10 by default; 16 for hex, 0 for a 0x/0o/0b prefix). Beyond int64 is a record error.", Example: `parse_int("ff", 16)`, Output: `255`,
			fn2: func(a, b record.Value) (record.Value, error) {
				s, err := str("parse_int", a)
				if err != nil {
					return record.Value{}, err
				}
				base, err := optInt("parse_int", "base", b, 10)
				if err != nil {
					return record.Value{}, err
				}
				if base != 0 && (base < 2 || base > 36) {
					return record.Value{}, fnError("parse_int", "base %d is not 0 or 2 to 36", base)
				}
				i, perr := strconv.ParseInt(strings.TrimSpace(s), int(base), 64)
				if perr != nil {
					if perr.(*strconv.NumError).Err == strconv.ErrRange {
						return record.Value{}, fnError("parse_int", "%q is beyond int64", truncateText(s))
					}
					return record.Value{}, fnError("parse_int", "%q is not an integer in base %d", truncateText(s), base)
				}
				return record.IntValue(i), nil
			}},
		&Func{Name: "parse_number", Category: "numbers", Params: []Param{{Name: "s", Type: TString | TNull}}, Result: TNumber, Aliases: []string{"parse_float"},
			Doc: "The number s writes, kept exactly as its literal (a 64-bit id or a long decimal is not rounded); written out, it is s.", Example: `parse_number("12345678901234567891")`, Output: `12345678901234567891`,
			fn1: func(v record.Value) (record.Value, error) {
				s, err := str("parse_number", v)
				if err != nil {
					return record.Value{}, err
				}
				s = strings.TrimSpace(s)
				if !isJSONNumber(s) {
					return record.Value{}, fnError("parse_number", "%q is not a number (as JSON writes them)", truncateText(s))
				}
				return record.NumberLiteral(strings.Clone(s)), nil
			}},
		&Func{Name: "round", Category: "numbers", Params: []Param{num, {Name: "places", Type: TNumber, Optional: true}}, Result: TNumber,
			Doc: "x rounded half away from zero to places decimals (0 by default: an integer), computed on its exact decimal value.", Example: `[round(2.345, 2), round(-2.5)]`, Output: `[2.35, -3]`,
			fn2: func(a, b record.Value) (record.Value, error) {
				p, err := optInt("round", "places", b, 0)
				if err != nil {
					return record.Value{}, err
				}
				if p < 0 || p > 30 {
					return record.Value{}, fnError("round", "places must be 0 to 30, not %d", p)
				}
				return roundPlaces("round", a, int(p))
			}},
		&Func{Name: "floor", Category: "numbers", Params: []Param{num}, Result: TInt, Doc: "The greatest integer not above x.", Example: `floor(-2.5)`, Output: `-3`,
			fn1: func(v record.Value) (record.Value, error) { return intRound("floor", v, -1) }},
		&Func{Name: "ceil", Category: "numbers", Params: []Param{num}, Result: TInt, Doc: "The least integer not below x.", Example: `ceil(2.1)`, Output: `3`,
			fn1: func(v record.Value) (record.Value, error) { return intRound("ceil", v, 1) }},
		&Func{Name: "abs", Category: "numbers", Params: []Param{num}, Result: TNumber, Doc: "x without its sign.", Example: `abs(-3)`, Output: `3`, fn1: absFn},
		&Func{Name: "min", Category: "numbers", Params: []Param{{Name: "x", Type: TAny, Variadic: true}}, Result: TAny,
			Doc: "The least of the arguments, or of the one array given (numbers exactly, strings by bytes, times).", Example: `min(3, 1.5, 2)`, Output: `1.5`,
			fnN: func(args []record.Value) (record.Value, error) { return extreme("min", args, -1) }},
		&Func{Name: "max", Category: "numbers", Params: []Param{{Name: "x", Type: TAny, Variadic: true}}, Result: TAny,
			Doc: "The greatest of the arguments, or of the one array given.", Example: `max([3, 10, 2])`, Output: `10`,
			fnN: func(args []record.Value) (record.Value, error) { return extreme("max", args, 1) }},
		&Func{Name: "clamp", Category: "numbers", Params: []Param{{Name: "x", Type: TAny}, {Name: "lo", Type: TAny}, {Name: "hi", Type: TAny}}, Result: TAny,
			Doc: "x, or lo when it is below, or hi when above.", Example: `clamp(120, 0, 100)`, Output: `100`,
			fn3: func(x, lo, hi record.Value) (record.Value, error) {
				if c, err := compare("clamp", lo, hi); err != nil || c > 0 {
					if err != nil {
						return record.Value{}, err
					}
					return record.Value{}, fnError("clamp", "lo %s is above hi %s", show(lo), show(hi))
				}
				if c, err := compare("clamp", x, lo); err != nil || c < 0 {
					return lo, err
				}
				if c, err := compare("clamp", x, hi); err != nil || c > 0 {
					return hi, err
				}
				return x, nil
			}},
		&Func{Name: "format_number", Category: "numbers", Params: []Param{num, {Name: "places", Type: TNumber, Optional: true}, {Name: "sep", Type: TString, Optional: true}}, Result: TString,
			Doc: "x written with sep (\",\" by default) between thousands, rounded to places decimals (as round) when given.", Example: `format_number(1234567.891, 2)`, Output: `"1,234,567.89"`,
			fn3: formatNumber},
	)
}

// roundPlaces rounds v's exact decimal value half away from zero to places
// decimals: an Int for 0 places (a literal beyond int64), else the decimal
// literal with exactly that many places.
func roundPlaces(fn string, v record.Value, places int) (record.Value, error) {
	if v.IsNull() {
		return record.Value{}, nullArg(fn)
	}
	if !isNumber(v) {
		return record.Value{}, fnError(fn, "%s is not a number", show(v))
	}
	if i, ok := v.IntForm(); ok {
		if places == 0 {
			return record.IntValue(i), nil
		}
	}
	r, err := v.Rat()
	if err != nil {
		return record.Value{}, fnError(fn, "%v", err)
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	n := new(big.Int).Mul(r.Num(), scale)
	q, rem := new(big.Int).QuoRem(n, r.Denom(), new(big.Int))
	rem.Abs(rem).Mul(rem, big.NewInt(2))
	if rem.Cmp(r.Denom()) >= 0 {
		if n.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	digits := q.String()
	if places == 0 {
		if q.IsInt64() {
			return record.IntValue(q.Int64()), nil
		}
		return record.NumberLiteral(digits), nil
	}
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if len(digits) <= places {
		digits = strings.Repeat("0", places-len(digits)+1) + digits
	}
	lit := digits[:len(digits)-places] + "." + digits[len(digits)-places:]
	if neg && strings.Trim(lit, "0.") != "" {
		lit = "-" + lit
	}
	return record.NumberLiteral(lit), nil
}

func intRound(fn string, v record.Value, dir int) (record.Value, error) {
	if v.IsNull() {
		return record.Value{}, nullArg(fn)
	}
	if !isNumber(v) {
		return record.Value{}, fnError(fn, "%s is not a number", show(v))
	}
	if i, ok := v.IntForm(); ok {
		return record.IntValue(i), nil
	}
	r, err := v.Rat()
	if err != nil {
		return record.Value{}, fnError(fn, "%v", err)
	}
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor for a positive denominator
	if dir > 0 && m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return record.Value{}, fnError(fn, "%s is beyond int64", show(v))
	}
	return record.IntValue(q.Int64()), nil
}

func absFn(v record.Value) (record.Value, error) {
	if !isNumber(v) {
		if v.IsNull() {
			return record.Value{}, nullArg("abs")
		}
		return record.Value{}, fnError("abs", "%s is %s, not a number", show(v), typeName(v))
	}
	c, err := record.CompareNumbers(v, record.IntValue(0))
	if err != nil {
		return record.Value{}, fnError("abs", "%v", err)
	}
	if c >= 0 {
		return v, nil
	}
	n, err := opNeg(v)
	if err != nil {
		return n, fnError("abs", "%v", err)
	}
	return n, nil
}

// extreme is max (want 1) or min (want -1) of vals, or of the one array
// given.
func extreme(name string, vals []record.Value, want int) (record.Value, error) {
	if len(vals) == 1 && vals[0].Kind() == record.Array {
		var elems []record.Value
		vals[0].Elems(func(_ int, e record.Value) bool { elems = append(elems, e); return true })
		vals = elems
	}
	if len(vals) == 0 {
		return record.Value{}, fnError(name, "of nothing")
	}
	best := vals[0]
	for _, v := range vals[1:] {
		c, err := compare(name, v, best)
		if err != nil {
			return record.Value{}, err
		}
		if c == want {
			best = v
		}
	}
	return best, nil
}

func formatNumber(a, b, c record.Value) (record.Value, error) {
	v := a
	if !b.IsNull() {
		p, err := integer("format_number", "places", b)
		if err != nil {
			return record.Value{}, err
		}
		if v, err = roundPlaces("format_number", a, int(p)); err != nil {
			return v, err
		}
		if v.Kind() == record.Int && p > 0 {
			v = record.NumberLiteral(v.Literal() + "." + strings.Repeat("0", int(p)))
		}
	} else if !isNumber(v) {
		if v.IsNull() {
			return record.Value{}, nullArg("format_number")
		}
		return record.Value{}, fnError("format_number", "%s is not a number", show(v))
	}
	sep, err := optStr("format_number", c, ",")
	if err != nil {
		return record.Value{}, err
	}
	lit := v.Literal()
	if strings.ContainsAny(lit, "eE") {
		return record.Value{}, fnError("format_number", "%s has an exponent: round it first, as in format_number(x, 2)", lit)
	}
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	ip, frac, hasFrac := strings.Cut(lit, ".")
	var out strings.Builder
	if neg {
		out.WriteByte('-')
	}
	for i, d := range ip {
		if i > 0 && (len(ip)-i)%3 == 0 {
			out.WriteString(sep)
		}
		out.WriteRune(d)
	}
	if hasFrac {
		out.WriteString("." + frac)
	}
	return sv(out.String()), nil
}
