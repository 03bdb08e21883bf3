package record

import (
	"math"
	"strconv"
	"time"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds of Value. A JSON number read from a record is a Number: its
// literal, converted on demand (see Value.Int and Value.Float) so that no
// digit is lost by reading it. Int and Float are numbers an expression
// computed.
const (
	Null Kind = iota
	Bool
	Int
	Float
	Number
	String
	Object
	Array
	Time
	Duration
)

var kindNames = [...]string{Null: "null", Bool: "bool", Int: "int", Float: "float", Number: "number",
	String: "string", Object: "object", Array: "array", Time: "time", Duration: "duration"}

func (k Kind) String() string { return kindNames[k] }

// Value is one JSON value, or a value an expression computed. Values read
// from a record share its bytes and keep them: a value that is only moved
// (copied to another field, renamed) is written out exactly as it was read.
//
// The zero Value is null. Values are immutable, except for the *Obj of an
// Object value, which belongs to whoever built it.
type Value struct {
	kind Kind
	// raw says s holds the value's JSON text as read: the literal of a
	// Number, the quoted text of a String that has escapes, the text of an
	// Object or Array that was read and not changed.
	raw bool
	n   uint64 // Bool (0 or 1), Int (int64), Float (float64 bits), Duration (ns)
	s   string // String's text (or quoted JSON, with raw), Number's literal, Object or Array JSON (an EncodedArray's too)
	x   any    // *Obj of a built or changed Object, []Value of a built Array, time.Time
}

// Constructors.

// NullValue returns null.
func NullValue() Value { return Value{} }

// BoolValue returns b.
func BoolValue(b bool) Value {
	v := Value{kind: Bool}
	if b {
		v.n = 1
	}
	return v
}

// IntValue returns i.
func IntValue(i int64) Value { return Value{kind: Int, n: uint64(i)} }

// FloatValue returns f, which must be finite (JSON has no NaN or infinity).
func FloatValue(f float64) Value { return Value{kind: Float, n: math.Float64bits(f)} }

// StringValue returns s. s may hold any bytes: they are written out as they
// are (see AppendString).
func StringValue(s string) Value { return Value{kind: String, s: s} }

// ObjectValue returns an object value backed by o.
func ObjectValue(o *Obj) Value { return Value{kind: Object, x: o} }

// ArrayValue returns an array of elems. The slice must not be changed later.
func ArrayValue(elems []Value) Value { return Value{kind: Array, x: elems} }

// EncodedArray returns the array of elems, as ArrayValue does, with its JSON
// written once now: for a constant that is written into many records. The
// slice must not be changed later.
func EncodedArray(elems []Value) Value {
	v := ArrayValue(elems)
	v.s = string(v.AppendJSON(nil))
	return v
}

// TimeValue returns t.
func TimeValue(t time.Time) Value { return Value{kind: Time, x: t} }

// DurationValue returns d.
func DurationValue(d time.Duration) Value { return Value{kind: Duration, n: uint64(d)} }

// NumberLiteral returns the number whose JSON literal is lit, which must be a
// valid JSON number.
func NumberLiteral(lit string) Value { return Value{kind: Number, raw: true, s: lit} }

// RawValue returns the value whose JSON text is b, which the scanner checked
// (one value, no surrounding space). The value shares b.
func RawValue(b []byte) Value {
	k, raw, n, s := rawParts(b)
	return Value{kind: k, raw: raw, n: n, s: s}
}

// setRaw makes *v RawValue(b), field by field where it lies. Storing
// RawValue's result instead (record.Lookup, into its dst) goes through a
// copy on the stack made with wider loads than the stores that wrote it, a
// store-forwarding stall on every call.
func (v *Value) setRaw(b []byte) {
	v.kind, v.raw, v.n, v.s = rawParts(b)
	v.x = nil
}

// rawParts is RawValue's fields, returned in registers.
func rawParts(b []byte) (k Kind, raw bool, n uint64, s string) {
	s = bytesString(b)
	switch b[0] {
	case '"':
		// Text that AppendString would write differently keeps its quoted
		// form: escapes, and the bytes of a surrogate, which AppendString
		// writes as an escape.
		for _, c := range b[1 : len(b)-1] {
			if c == '\\' || c == 0xed {
				return String, true, 0, s
			}
		}
		return String, false, 0, s[1 : len(s)-1]
	case '{':
		return Object, true, 0, s
	case '[':
		return Array, true, 0, s
	case 't':
		return Bool, false, 1, ""
	case 'f':
		return Bool, false, 0, ""
	case 'n':
		return Null, false, 0, ""
	}
	return Number, true, 0, s
}

// ParseValue checks that b is one JSON value and returns it. The value
// shares b.
func ParseValue(b []byte) (Value, error) {
	if err := Valid(b); err != nil {
		return Value{}, err
	}
	i := skipSpace(b, 0)
	end, _ := skipValue(b, i, 0)
	return RawValue(b[i:end]), nil
}

// Accessors.

// Kind returns v's kind.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == Null }

// Bool returns a Bool's value.
func (v Value) Bool() bool { return v.n != 0 }

// Text returns a String's text, decoding its escapes if it has any.
func (v Value) Text() string {
	if v.raw {
		return decodeQuoted(stringBytes(v.s))
	}
	return v.s
}

// Time returns a Time's value.
func (v Value) Time() time.Time { t, _ := v.x.(time.Time); return t }

// Duration returns a Duration's value.
func (v Value) Duration() time.Duration { return time.Duration(v.n) }

// Literal returns a Number's literal as read, or a computed number's text.
func (v Value) Literal() string {
	switch v.kind {
	case Number:
		return v.s
	case Int:
		return strconv.FormatInt(int64(v.n), 10)
	case Float:
		return string(appendFloat(nil, math.Float64frombits(v.n)))
	}
	return ""
}

// Raw returns the JSON text v was read from, where v keeps it: a number's
// literal, an object or array read and not changed, a string read with
// escapes. It returns false for a value that was computed or built (it has
// no text of its own until it is encoded), and for a string read without
// escapes, which is held as its text (and written back as it was read).
func (v Value) Raw() (string, bool) {
	switch {
	case v.kind == Number && v.raw, v.kind == Object && v.raw, v.kind == Array && v.raw:
		return v.s, true
	case v.kind == String && v.raw:
		return v.s, true
	}
	return "", false
}

// Obj returns an Object value as an *Obj that can be read and changed
// without changing v: a read object is indexed afresh, a built one copied.
func (v Value) Obj() *Obj {
	if o, ok := v.x.(*Obj); ok {
		return o.clone()
	}
	o := &Obj{}
	if v.raw {
		o.raw = stringBytes(v.s)
		o.members, _ = indexObject(o.raw, o.mbuf[:0])
	}
	return o
}

// Built returns the *Obj of an Object value that was built or changed (nil
// for one read as it was). Whoever built the value may change it in place.
func (v Value) Built() *Obj { o, _ := v.x.(*Obj); return o }

// objView returns an Object value's *Obj for reading only: a shared one, or
// nil for a read object (use its raw text).
func (v Value) objView() *Obj { o, _ := v.x.(*Obj); return o }

// Get returns the member name of an Object (null and false if it has none);
// of duplicates, the last.
func (v Value) Get(name string) (Value, bool) {
	if v.kind != Object {
		return Value{}, false
	}
	if o := v.objView(); o != nil {
		return o.Get(name)
	}
	b, ok := findMember(stringBytes(v.s), name)
	if !ok {
		return Value{}, false
	}
	return RawValue(b), true
}

// Len returns the number of elements of an Array or members of an Object
// (of duplicate names, one).
func (v Value) Len() int {
	switch v.kind {
	case Array:
		if e, ok := v.x.([]Value); ok {
			return len(e)
		}
		n := 0
		forElements(stringBytes(v.s), func(int, []byte) bool { n++; return true })
		return n
	case Object:
		n := 0
		v.Range(func(string, Value) bool { n++; return true })
		return n
	}
	return 0
}

// Index returns element i of an Array.
func (v Value) Index(i int) (Value, bool) {
	if v.kind != Array || i < 0 {
		return Value{}, false
	}
	if e, ok := v.x.([]Value); ok {
		if i >= len(e) {
			return Value{}, false
		}
		return e[i], true
	}
	var out Value
	found := false
	forElements(stringBytes(v.s), func(k int, b []byte) bool {
		if k == i {
			out, found = RawValue(b), true
			return false
		}
		return true
	})
	return out, found
}

// Elems calls fn with each element of an Array, in order, until it returns
// false.
func (v Value) Elems(fn func(i int, e Value) bool) {
	if v.kind != Array {
		return
	}
	if e, ok := v.x.([]Value); ok {
		for i := range e {
			if !fn(i, e[i]) {
				return
			}
		}
		return
	}
	forElements(stringBytes(v.s), func(i int, b []byte) bool { return fn(i, RawValue(b)) })
}

// Range calls fn with each member of an Object, in the order it is written
// out, until fn returns false. Of duplicate names, only the last is given,
// at the place of the last.
func (v Value) Range(fn func(name string, e Value) bool) {
	if v.kind != Object {
		return
	}
	o := v.objView()
	if o == nil {
		o = v.Obj()
	}
	o.Range(fn)
}
