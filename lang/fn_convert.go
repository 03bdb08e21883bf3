package lang

import (
	"math"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/record"
)

func init() {
	one := func(name, doc, ex, out string, result Type, fn func(record.Value) (record.Value, error), aliases ...string) *Func {
		return &Func{Name: name, Category: "conversions", Params: []Param{{Name: "x", Type: TAny}}, Result: result, Doc: doc, Example: ex, Output: out, fn1: fn, Aliases: aliases}
	}
	register(
		one("int", "x as an integer: integers as they are, floats truncated toward zero (within int64), integer strings parsed, durations in nanoseconds. Anything else, null included, is a record error.",
			`int("42") + int(7.9)`, `49`, TInt, toInt),
		one("float", "x as a float, exactly or not at all: numbers and numeric strings.", `float("0.5") * 2`, `1`, TFloat, toFloatFn),
		one("string", "x as a string: a number's literal as written (1.50 stays 1.50), an object or array as JSON, a time as RFC 3339, a duration as 1h30m0s.",
			`string(1.50) + string([1, "a"])`, `"1.50[1,\"a\"]"`, TString, toStringFn, "to_string"),
		one("bool", "x as a bool: true and false, and the strings \"true\" and \"false\".", `bool("true")`, `true`, TBool, toBool),
		one("type", "x's type: null, bool, int, float, string, array, object, time or duration.", `type(1.5)`, `"float"`, TString,
			func(v record.Value) (record.Value, error) { return sv(kindName(v)), nil }),
		one("is_null", "Whether x is null (or a missing field).", `is_null(null)`, `true`, TBool,
			func(v record.Value) (record.Value, error) { return record.BoolValue(v.IsNull()), nil }),
	)
}

// toInt is int(): integers as they are, floats truncated toward zero (if
// the result is within int64), numeric strings parsed.
func toInt(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.Int, record.Float, record.Number:
		// A number whose value is an integer is that integer, read from
		// its digits (1.152921504606847e18 is not the float64 nearest it,
		// 2^60); only a fraction is truncated.
		if i, err := v.Int(); err == nil {
			return record.IntValue(i), nil
		}
		form, i, x := v.Form()
		switch form {
		case record.IntForm:
			return record.IntValue(i), nil
		case record.FloatForm:
			t := math.Trunc(x)
			if t >= -0x1p63 && t < 0x1p63 {
				return record.IntValue(int64(t)), nil
			}
		}
		return record.Value{}, fnError("int", "%s is out of the int64 range", show(v))
	case record.String:
		s := strings.TrimSpace(v.Text())
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return record.Value{}, fnError("int", "%s is out of the int64 range", show(v))
			}
			return record.Value{}, fnError("int", "the string %s is not an integer", show(v))
		}
		return record.IntValue(i), nil
	case record.Bool:
		return record.Value{}, fnError("int", "%s: a bool is not a number", show(v))
	case record.Duration:
		return record.IntValue(int64(v.Duration())), nil
	case record.Null:
		return record.Value{}, fnError("int", "the value is null (a missing field?): default it, as in int(x ?? 0)")
	}
	return record.Value{}, fnError("int", "%s cannot be converted to int", show(v))
}

// toFloatFn is float(): exact, or an error.
func toFloatFn(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.Int, record.Float, record.Number:
		f, err := v.Float()
		if err != nil {
			return record.Value{}, fnError("float", "%s: %v", show(v), err)
		}
		return record.FloatValue(f), nil
	case record.String:
		s := strings.TrimSpace(v.Text())
		if !isJSONNumber(s) {
			return record.Value{}, fnError("float", "the string %s is not a number", show(v))
		}
		return toFloatFn(record.NumberLiteral(s))
	case record.Null:
		return record.Value{}, fnError("float", "the value is null (a missing field?): default it, as in float(x ?? 0)")
	}
	return record.Value{}, fnError("float", "%s cannot be converted to float", show(v))
}

func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && record.Valid([]byte(s)) == nil
}

// toStringFn is string(): numbers as their literal, objects and arrays as
// JSON, times as RFC 3339, durations as Go writes them.
func toStringFn(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.String:
		return v, nil
	case record.Int, record.Float, record.Number:
		return sv(v.Literal()), nil
	case record.Bool:
		return sv(strconv.FormatBool(v.Bool())), nil
	case record.Time:
		return sv(v.Time().Format("2006-01-02T15:04:05.999999999Z07:00")), nil
	case record.Duration:
		return sv(v.Duration().String()), nil
	case record.Object, record.Array:
		return sv(string(v.AppendJSON(nil))), nil
	case record.Null:
		return record.Value{}, fnError("string", `the value is null (a missing field?): default it, as in string(x ?? "")`)
	}
	return record.Value{}, fnError("string", "%s cannot be converted", show(v))
}

func toBool(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.Bool:
		return v, nil
	case record.String:
		switch v.Text() {
		case "true":
			return record.BoolValue(true), nil
		case "false":
			return record.BoolValue(false), nil
		}
	case record.Null:
		return record.Value{}, nullArg("bool")
	}
	return record.Value{}, fnError("bool", "%s is not true or false", show(v))
}

// kindName is type()'s name of v's type.
func kindName(v record.Value) string {
	switch v.Kind() {
	case record.Number:
		if f, _, _ := v.Form(); f == record.IntForm || f == record.BigForm && !strings.ContainsAny(v.Literal(), ".eE") {
			return "int"
		}
		return "float"
	}
	return v.Kind().String()
}
