package lang

import (
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

// Argument checks of the library functions, each giving a record error
// that names the function, the argument and what it got.

func nullArg(fn string) error {
	return fnError(fn, "the value is null (a missing field?): default it with ??, as in %s(x ?? ...)", fn)
}

func str(fn string, v record.Value) (string, error) {
	switch v.Kind() {
	case record.String:
		return v.Text(), nil
	case record.Null:
		return "", nullArg(fn)
	}
	return "", fnError(fn, "%s is %s, not a string (convert it with string())", show(v), typeName(v))
}

// text is str for functions that work on characters and would replace
// bytes that are not UTF-8 (upper): such a string is refused.
func text(fn string, v record.Value) (string, error) {
	s, err := str(fn, v)
	if err == nil && !utf8.ValidString(s) {
		return "", fnError(fn, "the string holds bytes that are not UTF-8, which %s would replace", fn)
	}
	return s, err
}

// optStr is an optional string argument: def when null.
func optStr(fn string, v record.Value, def string) (string, error) {
	if v.IsNull() {
		return def, nil
	}
	return str(fn, v)
}

func integer(fn, what string, v record.Value) (int64, error) {
	if v.IsNull() {
		return 0, nullArg(fn)
	}
	if !isNumber(v) {
		return 0, fnError(fn, "%s must be an integer, not %s", what, show(v))
	}
	i, ok := v.IntForm()
	if !ok {
		if x, err := v.Int(); err == nil {
			return x, nil
		}
		return 0, fnError(fn, "%s must be an integer within int64, not %s", what, show(v))
	}
	return i, nil
}

func optInt(fn, what string, v record.Value, def int64) (int64, error) {
	if v.IsNull() {
		return def, nil
	}
	return integer(fn, what, v)
}

func array(fn string, v record.Value) ([]record.Value, error) {
	switch v.Kind() {
	case record.Array:
		var out []record.Value
		v.Elems(func(_ int, e record.Value) bool { out = append(out, e); return true })
		return out, nil
	case record.Null:
		return nil, nullArg(fn)
	}
	return nil, fnError(fn, "%s is %s, not an array", show(v), typeName(v))
}

func object(fn string, v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.Object:
		return v, nil
	case record.Null:
		return v, nullArg(fn)
	}
	return v, fnError(fn, "%s is %s, not an object", show(v), typeName(v))
}

func strings2(fn string, a, b record.Value) (string, string, error) {
	x, err := str(fn, a)
	if err != nil {
		return "", "", err
	}
	y, err := str(fn, b)
	return x, y, err
}

// maxBuilt bounds the strings and arrays a function builds from a count
// in the record (repeat, pad), so that one bad record cannot take the
// process's memory.
const maxBuilt = 16 << 20

func sv(s string) record.Value { return record.StringValue(s) }
