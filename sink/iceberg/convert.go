package iceberg

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/weir-etl/weir/record"
)

// A record becomes a row in two passes. plan walks the column's type and
// the record's value together, checks every value and converts it into
// slots (one per scalar, one per struct, list or map saying whether it is
// null and how long it is); emit then appends the slots to the arrow
// builders. A record that fails anywhere in plan has appended nothing, so it
// can be rejected without leaving half a row in the group; emit cannot fail.

// kind is how a node's values are read and appended.
type kind uint8

const (
	kBool kind = iota
	kInt
	kLong
	kFloat
	kDouble
	kDecimal
	kString
	kBinary
	kDate
	kTimestamp
	kTimestampTz
	kStruct
	kList
	kMap
)

// node is one field of the table's schema, as the converter sees it.
type node struct {
	path     string // for errors: "payment.amount", "items[].price"
	name     string // the member name a struct field is read from
	kind     kind
	required bool
	prec     int // decimal
	scale    int
	children []*node // struct fields
	elem     *node   // list element
	key, val *node   // map
}

// slot is one converted value, or the header of a struct, list or map.
type slot struct {
	null bool
	i    int64 // bool (0, 1), int, long, date, timestamps; a list's or map's length
	f    float64
	s    string // string text, binary bytes, a map key's text
	d    decimal128.Num
}

// newNode builds the converter of an Iceberg field.
func newNode(path, name string, t iceberg.Type, required bool) (*node, error) {
	n := &node{path: path, name: name, required: required}
	switch t := t.(type) {
	case iceberg.BooleanType:
		n.kind = kBool
	case iceberg.Int32Type:
		n.kind = kInt
	case iceberg.Int64Type:
		n.kind = kLong
	case iceberg.Float32Type:
		n.kind = kFloat
	case iceberg.Float64Type:
		n.kind = kDouble
	case iceberg.DecimalType:
		n.kind, n.prec, n.scale = kDecimal, t.Precision(), t.Scale()
	case iceberg.StringType:
		n.kind = kString
	case iceberg.BinaryType:
		n.kind = kBinary
	case iceberg.DateType:
		n.kind = kDate
	case iceberg.TimestampType:
		n.kind = kTimestamp
	case iceberg.TimestampTzType:
		n.kind = kTimestampTz
	case *iceberg.StructType:
		n.kind = kStruct
		for _, f := range t.FieldList {
			c, err := newNode(path+"."+f.Name, f.Name, f.Type, f.Required)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
	case *iceberg.ListType:
		n.kind = kList
		e, err := newNode(path+"[]", "", t.Element, t.ElementRequired)
		if err != nil {
			return nil, err
		}
		n.elem = e
	case *iceberg.MapType:
		n.kind = kMap
		k, err := newNode(path+"{key}", "", t.KeyType, true)
		if err != nil {
			return nil, err
		}
		v, err := newNode(path+"{}", "", t.ValueType, t.ValueRequired)
		if err != nil {
			return nil, err
		}
		n.key, n.val = k, v
	default:
		return nil, fmt.Errorf("column %s: %w", path, supported(t))
	}
	return n, nil
}

// valueError is a value that its column cannot hold.
type valueError struct {
	path string
	msg  string
}

func (e *valueError) Error() string { return e.path + ": " + e.msg }

func (n *node) fail(format string, args ...any) error {
	return &valueError{path: n.path, msg: fmt.Sprintf(format, args...)}
}

// plan appends v's slots to dst. present is false for a missing member.
func (n *node) plan(dst []slot, v record.Value, present bool) ([]slot, error) {
	if !present || v.IsNull() {
		if n.required {
			if !present {
				return dst, n.fail("is missing, and the column is required")
			}
			return dst, n.fail("is null, and the column is required")
		}
		return append(dst, slot{null: true}), nil
	}
	var s slot
	var err error
	switch n.kind {
	case kBool:
		s.i, err = n.boolean(v)
	case kInt:
		s.i, err = n.integer(v, 32)
	case kLong:
		s.i, err = n.integer(v, 64)
	case kFloat:
		s.f, err = n.float(v, 32)
	case kDouble:
		s.f, err = n.float(v, 64)
	case kDecimal:
		s.d, err = n.decimal(v)
	case kString:
		s.s, err = n.text(v)
	case kBinary:
		s.s, err = n.binary(v)
	case kDate:
		s.i, err = n.date(v)
	case kTimestamp:
		s.i, err = n.timestamp(v, false)
	case kTimestampTz:
		s.i, err = n.timestamp(v, true)
	case kStruct:
		if v.Kind() != record.Object {
			return dst, n.fail("is %s, and the column is a struct: it needs a JSON object", kindName(v))
		}
		dst = append(dst, slot{})
		for _, c := range n.children {
			cv, ok := v.Get(c.name)
			if dst, err = c.plan(dst, cv, ok); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case kList:
		if v.Kind() != record.Array {
			return dst, n.fail("is %s, and the column is a list: it needs a JSON array", kindName(v))
		}
		head := len(dst)
		dst = append(dst, slot{i: int64(v.Len())})
		v.Elems(func(_ int, e record.Value) bool {
			dst, err = n.elem.plan(dst, e, true)
			return err == nil
		})
		if err != nil {
			return dst[:head], err
		}
		return dst, nil
	case kMap:
		if v.Kind() != record.Object {
			return dst, n.fail("is %s, and the column is a map: it needs a JSON object", kindName(v))
		}
		head := len(dst)
		dst = append(dst, slot{})
		count := 0
		v.Range(func(name string, e record.Value) bool {
			var k slot
			if k, err = n.key.mapKey(name); err != nil {
				return false
			}
			dst = append(dst, k)
			if dst, err = n.val.plan(dst, e, true); err != nil {
				return false
			}
			count++
			return true
		})
		if err != nil {
			return dst[:head], err
		}
		dst[head].i = int64(count)
		return dst, nil
	}
	if err != nil {
		return dst, err
	}
	return append(dst, s), nil
}

// emit appends the slots plan made for one value to b and returns the rest.
func (n *node) emit(b array.Builder, slots []slot) []slot {
	s := slots[0]
	slots = slots[1:]
	if s.null {
		b.AppendNull()
		return slots
	}
	switch n.kind {
	case kBool:
		b.(*array.BooleanBuilder).Append(s.i != 0)
	case kInt:
		b.(*array.Int32Builder).Append(int32(s.i))
	case kLong:
		b.(*array.Int64Builder).Append(s.i)
	case kFloat:
		b.(*array.Float32Builder).Append(float32(s.f))
	case kDouble:
		b.(*array.Float64Builder).Append(s.f)
	case kDecimal:
		b.(*array.Decimal128Builder).Append(s.d)
	case kString:
		b.(*array.StringBuilder).Append(s.s)
	case kBinary:
		b.(*array.BinaryBuilder).AppendString(s.s)
	case kDate:
		b.(*array.Date32Builder).Append(arrow.Date32(s.i))
	case kTimestamp, kTimestampTz:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(s.i))
	case kStruct:
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, c := range n.children {
			slots = c.emit(sb.FieldBuilder(i), slots)
		}
	case kList:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		eb := lb.ValueBuilder()
		for range s.i {
			slots = n.elem.emit(eb, slots)
		}
	case kMap:
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		kb, ib := mb.KeyBuilder(), mb.ItemBuilder()
		for range s.i {
			slots = n.key.emit(kb, slots)
			slots = n.val.emit(ib, slots)
		}
	}
	return slots
}

func kindName(v record.Value) string {
	switch v.Kind() {
	case record.Bool:
		return "a boolean"
	case record.Int, record.Float, record.Number:
		return "a number"
	case record.String:
		return "a string"
	case record.Object:
		return "an object"
	case record.Array:
		return "an array"
	}
	return v.Kind().String()
}

func isNumber(v record.Value) bool {
	k := v.Kind()
	return k == record.Number || k == record.Int || k == record.Float
}

// numberText returns the literal of a number, or the text of a string that
// holds one (a decimal kept as a string by its producer).
func (n *node) numberText(v record.Value, what string) (string, error) {
	switch {
	case isNumber(v):
		return v.Literal(), nil
	case v.Kind() == record.String:
		return strings.TrimSpace(v.Text()), nil
	}
	return "", n.fail("is %s, and the column is %s: it needs a number, or a string holding one", kindName(v), what)
}

func (n *node) boolean(v record.Value) (int64, error) {
	switch v.Kind() {
	case record.Bool:
		if v.Bool() {
			return 1, nil
		}
		return 0, nil
	case record.String:
		switch v.Text() {
		case "true":
			return 1, nil
		case "false":
			return 0, nil
		}
	}
	return 0, n.fail("is %s, and the column is a boolean: it needs true or false", kindName(v))
}

func (n *node) integer(v record.Value, bits int) (int64, error) {
	what := "an int"
	if bits == 64 {
		what = "a long"
	}
	lit, err := n.numberText(v, what)
	if err != nil {
		return 0, err
	}
	i, err := strconv.ParseInt(lit, 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, n.fail("%s does not fit in %s (%d bits)", lit, what, bits)
		}
		return 0, n.fail("%q is not an integer (no fraction or exponent): the column is %s", lit, what)
	}
	return i, nil
}

func (n *node) float(v record.Value, bits int) (float64, error) {
	what := "a float"
	if bits == 64 {
		what = "a double"
	}
	lit, err := n.numberText(v, what)
	if err != nil {
		return 0, err
	}
	switch lit {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(lit, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, n.fail("%s is out of the range of %s", lit, what)
		}
		return 0, n.fail("%q is not a number: the column is %s", lit, what)
	}
	return f, nil
}

// decimal converts a number literal to the column's scale exactly: digits
// are moved, never rounded, so a value with more decimal places than the
// scale (other than trailing zeros) or more digits than the precision is an
// error, not a nearby number.
func (n *node) decimal(v record.Value) (decimal128.Num, error) {
	what := fmt.Sprintf("decimal(%d,%d)", n.prec, n.scale)
	lit, err := n.numberText(v, what)
	if err != nil {
		return decimal128.Num{}, err
	}
	u, err := unscaled(lit, n.scale)
	if err != nil {
		return decimal128.Num{}, n.fail("%s: the column is %s", err, what)
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.prec)), nil)
	if new(big.Int).Abs(u).Cmp(limit) >= 0 {
		return decimal128.Num{}, n.fail("%s has more than %d digits: the column is %s", lit, n.prec, what)
	}
	return decimal128.FromBigInt(u), nil
}

// unscaled returns the integer lit × 10^scale, or an error when lit is not a
// decimal number or that is not an integer.
func unscaled(lit string, scale int) (*big.Int, error) {
	s := lit
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 1000 || e < -1000 {
			return nil, fmt.Errorf("%q is not a decimal number", lit)
		}
		exp, s = e, s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return nil, fmt.Errorf("%q is not a decimal number", lit)
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	// value = digits × 10^(exp - len(frac)); unscaled = value × 10^scale.
	shift := exp - len(frac) + scale
	if digits == "" {
		return new(big.Int), nil
	}
	if shift < 0 {
		cut := len(digits) + shift
		if cut < 0 {
			cut = 0
		}
		if strings.Trim(digits[cut:], "0") != "" {
			return nil, fmt.Errorf("%s has more than %d decimal places (weir does not round)", lit, scale)
		}
		digits, shift = digits[:cut], 0
		if digits == "" {
			return new(big.Int), nil
		}
	}
	if len(digits)+shift > 40 {
		return nil, fmt.Errorf("%s has more than 38 digits", lit)
	}
	u, ok := new(big.Int).SetString(digits+strings.Repeat("0", shift), 10)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal number", lit)
	}
	if neg {
		u.Neg(u)
	}
	return u, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (n *node) text(v record.Value) (string, error) {
	if v.Kind() == record.String {
		t := v.Text()
		if !validUTF8(t) {
			return "", n.fail("holds bytes that are not UTF-8 (or a lone surrogate escape): a string column holds text; use binary for bytes")
		}
		return t, nil
	}
	// Any other JSON value is written as its JSON text, as it came in.
	return string(v.AppendJSON(nil)), nil
}

func (n *node) binary(v record.Value) (string, error) {
	if v.Kind() != record.String {
		return "", n.fail("is %s, and the column is binary: it needs a base64 string (standard alphabet, padded)", kindName(v))
	}
	b, err := base64.StdEncoding.DecodeString(v.Text())
	if err != nil {
		return "", n.fail("is not base64 (standard alphabet, padded): the column is binary")
	}
	return string(b), nil
}

func (n *node) date(v record.Value) (int64, error) {
	if v.Kind() != record.String {
		return 0, n.fail("is %s, and the column is a date: it needs a string such as \"2026-03-01\"", kindName(v))
	}
	t, err := time.Parse(time.DateOnly, v.Text())
	if err != nil {
		return 0, n.fail("%q is not a date of the form 2026-03-01", v.Text())
	}
	return floorDiv(t.Unix(), 86400), nil
}

func (n *node) mapKey(name string) (slot, error) {
	switch n.kind {
	case kString:
		if !validUTF8(name) {
			return slot{}, n.fail("a member name holds bytes that are not UTF-8")
		}
		return slot{s: name}, nil
	case kInt, kLong:
		bits := 32
		if n.kind == kLong {
			bits = 64
		}
		i, err := strconv.ParseInt(name, 10, bits)
		if err != nil {
			return slot{}, n.fail("member name %q is not an integer of %d bits, and the map's keys are", name, bits)
		}
		return slot{i: i}, nil
	case kDate:
		t, err := time.Parse(time.DateOnly, name)
		if err != nil {
			return slot{}, n.fail("member name %q is not a date of the form 2026-03-01, and the map's keys are dates", name)
		}
		return slot{i: floorDiv(t.Unix(), 86400)}, nil
	}
	return slot{}, n.fail("is not a key type weir fills")
}

// Timestamps: timestamptz takes an RFC 3339 instant with its offset and
// stores it in UTC; timestamp (a local date and time, no zone) takes the
// same form without an offset. Both keep microseconds: a value with finer
// digits is refused rather than rounded.
const localLayout = "2006-01-02T15:04:05.999999999"

func (n *node) timestamp(v record.Value, tz bool) (int64, error) {
	if v.Kind() != record.String {
		if tz {
			return 0, n.fail("is %s, and the column is a timestamptz: it needs an RFC 3339 string such as \"2026-03-01T12:30:45.123456+02:00\"", kindName(v))
		}
		return 0, n.fail("is %s, and the column is a timestamp: it needs a string such as \"2026-03-01T12:30:45.123456\"", kindName(v))
	}
	text := v.Text()
	var t time.Time
	var err error
	if tz {
		t, err = time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return 0, n.fail("%q is not an RFC 3339 time with an offset, such as 2026-03-01T12:30:45.123456+02:00 or ...Z", text)
		}
	} else {
		t, err = time.Parse(localLayout, strings.Replace(text, " ", "T", 1))
		if err != nil {
			if _, zerr := time.Parse(time.RFC3339Nano, text); zerr == nil {
				return 0, n.fail("%q has a time zone offset, and the column is a timestamp without one: use a timestamptz column", text)
			}
			return 0, n.fail("%q is not a date and time such as 2026-03-01T12:30:45.123456", text)
		}
	}
	if t.Nanosecond()%1000 != 0 {
		return 0, n.fail("%q has digits finer than microseconds, which the column cannot hold (weir does not round)", text)
	}
	return t.UnixMicro(), nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
