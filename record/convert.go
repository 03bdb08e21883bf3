package record

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

func appendInt(dst []byte, i int64) []byte { return strconv.AppendInt(dst, i, 10) }

func floatOf(v Value) float64 { return math.Float64frombits(v.n) }

// FromGo converts a Go value to a Value: nil, bools, integers, floats,
// strings, []byte (as a string), time.Time, time.Duration, json numbers
// (as their literal), and slices and maps of these (maps with their members
// sorted by name). An unsigned integer beyond int64 keeps its digits as a
// Number. NaN and infinities, and other types, are errors.
func FromGo(x any) (Value, error) {
	switch t := x.(type) {
	case nil:
		return Value{}, nil
	case Value:
		return t, nil
	case bool:
		return BoolValue(t), nil
	case int:
		return IntValue(int64(t)), nil
	case int64:
		return IntValue(t), nil
	case int32:
		return IntValue(int64(t)), nil
	case float64:
		return floatFromGo(t)
	case float32:
		return floatFromGo(float64(t))
	case string:
		return StringValue(t), nil
	case []byte:
		return StringValue(string(t)), nil
	case time.Time:
		return TimeValue(t), nil
	case time.Duration:
		return DurationValue(t), nil
	case json.Number:
		if Valid([]byte(t)) == nil && t != "" && (t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
			return NumberLiteral(string(t)), nil
		}
		return Value{}, fmt.Errorf("%q is not a JSON number", string(t))
	case []any:
		out := make([]Value, len(t))
		for i, e := range t {
			v, err := FromGo(e)
			if err != nil {
				return Value{}, err
			}
			out[i] = v
		}
		return ArrayValue(out), nil
	case map[string]any:
		m := make(map[string]Value, len(t))
		for k, e := range t {
			v, err := FromGo(e)
			if err != nil {
				return Value{}, fmt.Errorf("%s: %w", k, err)
			}
			m[k] = v
		}
		return ObjectValue(SortedObj(m)), nil
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return IntValue(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u <= math.MaxInt64 {
			return IntValue(int64(u)), nil
		}
		return NumberLiteral(strconv.FormatUint(u, 10)), nil
	case reflect.Float32, reflect.Float64:
		return floatFromGo(rv.Float())
	case reflect.String:
		return StringValue(rv.String()), nil
	case reflect.Bool:
		return BoolValue(rv.Bool()), nil
	case reflect.Slice, reflect.Array:
		out := make([]Value, rv.Len())
		for i := range out {
			v, err := FromGo(rv.Index(i).Interface())
			if err != nil {
				return Value{}, err
			}
			out[i] = v
		}
		return ArrayValue(out), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		m := make(map[string]Value, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			v, err := FromGo(it.Value().Interface())
			if err != nil {
				return Value{}, err
			}
			m[it.Key().String()] = v
		}
		return ObjectValue(SortedObj(m)), nil
	case reflect.Pointer:
		if rv.IsNil() {
			return Value{}, nil
		}
		return FromGo(rv.Elem().Interface())
	}
	return Value{}, fmt.Errorf("a Go %T has no JSON form", x)
}

func floatFromGo(f float64) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, fmt.Errorf("%v is not a number JSON can hold", f)
	}
	return FloatValue(f), nil
}

// ToGo converts v to plain Go values: nil, bool, int (an integer that fits
// int64), float64 (a number a float64 holds exactly), string, time.Time,
// time.Duration, []any and map[string]any. A number that neither holds is
// an error (ErrNotExact).
func (v Value) ToGo() (any, error) {
	switch v.kind {
	case Null:
		return nil, nil
	case Bool:
		return v.n != 0, nil
	case Int:
		return int(int64(v.n)), nil
	case Float:
		return floatOf(v), nil
	case Number:
		form, i, f := v.Form()
		switch form {
		case IntForm:
			return int(i), nil
		case FloatForm:
			return f, nil
		}
		return nil, fmt.Errorf("the number %s %w as an int64 or a float64", shorten(v.s), ErrNotExact)
	case String:
		return v.Text(), nil
	case Time:
		return v.Time(), nil
	case Duration:
		return v.Duration(), nil
	case Array:
		out := []any{}
		var err error
		v.Elems(func(_ int, e Value) bool {
			var g any
			if g, err = e.ToGo(); err != nil {
				return false
			}
			out = append(out, g)
			return true
		})
		return out, err
	case Object:
		out := map[string]any{}
		var err error
		v.Range(func(name string, e Value) bool {
			var g any
			if g, err = e.ToGo(); err != nil {
				return false
			}
			out[name] = g
			return true
		})
		return out, err
	}
	return nil, fmt.Errorf("record: unknown kind %d", v.kind)
}
