package lang

import (
	"strings"

	"github.com/weir-etl/weir/record"
)

// Type is what the compiler knows of a value's type before it runs: the set
// of kinds it may have. A field may be anything (Any); a literal, a
// metadata value and most functions' results are known. Where an argument's
// kinds and a parameter's have nothing in common, the call cannot succeed on
// any record, and it is an error at load (upper(42), 1 - "a").
type Type uint16

// The types.
const (
	TNull Type = 1 << iota
	TBool
	TInt
	TFloat
	TString
	TObject
	TArray
	TTime
	TDuration

	TNumber = TInt | TFloat
	TAny    = TNull | TBool | TNumber | TString | TObject | TArray | TTime | TDuration
)

// typeOf is the type of a value.
func typeOf(v record.Value) Type {
	switch v.Kind() {
	case record.Null:
		return TNull
	case record.Bool:
		return TBool
	case record.Int:
		return TInt
	case record.Float:
		return TFloat
	case record.Number:
		if f, _, _ := v.Form(); f == record.IntForm {
			return TInt
		}
		return TNumber
	case record.String:
		return TString
	case record.Object:
		return TObject
	case record.Array:
		return TArray
	case record.Time:
		return TTime
	case record.Duration:
		return TDuration
	}
	return TAny
}

var typeNames = []struct {
	t    Type
	name string
}{{TNull, "null"}, {TBool, "bool"}, {TInt, "int"}, {TFloat, "float"}, {TString, "string"}, {TObject, "object"},
	{TArray, "array"}, {TTime, "time"}, {TDuration, "duration"}}

// String names the type as the reference writes it: "string", "int|float",
// "any".
func (t Type) String() string {
	switch t {
	case TAny:
		return "any"
	case TNumber:
		return "number"
	case 0:
		return "nothing"
	}
	var parts []string
	null := t&TNull != 0 && t != TNull
	t &^= TNull * Type(b2i(null))
	if t&TNumber == TNumber {
		parts = append(parts, "number")
		t &^= TNumber
	}
	for _, n := range typeNames {
		if t&n.t != 0 {
			parts = append(parts, n.name)
		}
	}
	if null {
		parts = append(parts, "null")
	}
	return strings.Join(parts, " or ")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
