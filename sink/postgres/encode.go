package postgres

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file turns a record value into one row of COPY's text format: the
// columns' values separated by tabs, \N for NULL, backslash escapes for
// backslash, tab, newline and carriage return, and a newline at the end. The
// server parses each value with its column type's input function, so a
// number travels as the literal the record holds and a numeric keeps every
// digit. Everything the server would change without a word (a timestamp's
// nanoseconds, the digits past a numeric's scale) is refused here instead,
// naming the column.

// colPlan says how one column is filled.
type colPlan struct {
	name  string
	typ   columnType
	whole bool     // the whole record value
	head  int      // index into encoder.heads of the path's first name
	rest  []string // the rest of a dotted path
	field string   // the path as configured, for messages
}

// encoder encodes rows; it keeps scratch space, so each sink has its own.
type encoder struct {
	cols  []colPlan
	heads []string // distinct first names of the columns' paths
	raw   [][]byte // per head: the member's raw JSON in the current record
	one   [1][]byte
	tmp   []byte
}

func newEncoder(cols []Column) *encoder {
	e := &encoder{}
	for _, c := range cols {
		t, _ := parseType(c.Type) // validated
		p := colPlan{name: c.Name, typ: t, whole: c.Value, head: -1}
		if !c.Value {
			p.field = c.Field
			if p.field == "" {
				p.field = c.Name
			}
			path := strings.Split(p.field, ".")
			if c.Field == "" {
				path = []string{c.Name} // a column name with a dot is still one field
			}
			p.head = -1
			for i, h := range e.heads {
				if h == path[0] {
					p.head = i
				}
			}
			if p.head < 0 {
				p.head = len(e.heads)
				e.heads = append(e.heads, path[0])
			}
			p.rest = path[1:]
		}
		e.cols = append(e.cols, p)
	}
	e.raw = make([][]byte, len(e.heads))
	return e
}

// colError is a record the sink cannot turn into a row: col is the column's
// index, or -1 when the value as a whole is at fault.
type colError struct {
	col int
	err error
}

// appendRow appends the row for value to dst. On error dst is returned
// unchanged in length (the caller truncates).
func (e *encoder) appendRow(dst, value []byte) ([]byte, *colError) {
	if len(e.heads) > 0 {
		if err := lookupMembers(value, e.heads, e.raw); err != nil {
			return dst, &colError{-1, err}
		}
	}
	for k := range e.cols {
		c := &e.cols[k]
		if k > 0 {
			dst = append(dst, '\t')
		}
		var err error
		if c.whole {
			dst, err = e.appendWhole(dst, c, value)
		} else {
			v := e.raw[c.head]
			for _, name := range c.rest {
				if v == nil || isNull(v) {
					v = nil
					break
				}
				if v[0] != '{' {
					err = fmt.Errorf("field %s: the part before %q is %s, not an object", c.field, name, kindOf(v))
					break
				}
				e.one[0] = nil
				if err = lookupMembers(v, []string{name}, e.one[:]); err != nil {
					break
				}
				v = e.one[0]
			}
			if err == nil {
				dst, err = e.appendValue(dst, c, v)
			}
		}
		if err != nil {
			return dst, &colError{k, err}
		}
	}
	return append(dst, '\n'), nil
}

// timestampLayout is how a timestamptz travels: UTC, microseconds, trailing
// zeros of the fraction left out.
const timestampLayout = "2006-01-02 15:04:05.999999Z07:00"

// appendTimestamp appends t, in UTC, as timestampLayout would, without
// reading the layout for every row (AppendFormat's layout parsing was most
// of a timestamp column's cost). Years outside 1–9999 take AppendFormat.
func appendTimestamp(dst []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 1 || year > 9999 {
		return t.AppendFormat(dst, timestampLayout)
	}
	hour, minute, sec := t.Clock()
	two := func(dst []byte, n int) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }
	dst = two(two(dst, year/100), year%100)
	dst = two(append(dst, '-'), int(month))
	dst = two(append(dst, '-'), day)
	dst = two(append(dst, ' '), hour)
	dst = two(append(dst, ':'), minute)
	dst = two(append(dst, ':'), sec)
	if us := t.Nanosecond() / 1000; us > 0 {
		var frac [7]byte
		frac[0] = '.'
		for i := 6; i > 0; i-- {
			frac[i] = byte('0' + us%10)
			us /= 10
		}
		n := 7
		for frac[n-1] == '0' {
			n--
		}
		dst = append(dst, frac[:n]...)
	}
	return append(dst, 'Z')
}

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

// kindOf names the JSON kind of raw value v, for messages.
func kindOf(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// excerpt quotes the start of a raw value for a message.
func excerpt(v []byte) string {
	const n = 40
	cut, more := v, ""
	if len(v) > n {
		cut, more = v[:n], "..."
	}
	// A JSON value is shown as it was written (a string with its own quotes,
	// not quoted again); bytes that would not print are escaped.
	if utf8.Valid(cut) && !bytes.ContainsFunc(cut, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return string(cut) + more
	}
	return strconv.Quote(string(cut)) + more
}

// appendWhole appends the whole record value as column c.
func (e *encoder) appendWhole(dst []byte, c *colPlan, value []byte) ([]byte, error) {
	switch c.typ.kind {
	case typeBytea:
		return appendBytea(dst, value), nil
	case typeText:
		if err := checkText(value); err != nil {
			return dst, fmt.Errorf("the record value %w", err)
		}
	}
	// json and jsonb: the server checks the syntax, and a value it refuses is
	// found and rejected like any refused row.
	return appendCopy(dst, value), nil
}

func checkText(b []byte) error {
	if bytes.IndexByte(b, 0) >= 0 {
		return errNUL
	}
	if !utf8.Valid(b) {
		return errBadUTF8
	}
	return nil
}

// appendValue appends raw JSON value v (nil when the field is missing) as
// column c.
func (e *encoder) appendValue(dst []byte, c *colPlan, v []byte) ([]byte, error) {
	if v == nil {
		return append(dst, `\N`...), nil
	}
	if isNull(v) {
		if c.typ.kind == typeJSON || c.typ.kind == typeJSONB {
			return append(dst, "null"...), nil // JSON null is a value of its own
		}
		return append(dst, `\N`...), nil
	}
	bad := func(want string) error {
		return fmt.Errorf("field %s is %s %s, which is not %s", c.field, kindOf(v), excerpt(v), want)
	}
	switch c.typ.kind {
	case typeJSON, typeJSONB:
		if !utf8.Valid(v) {
			return dst, fmt.Errorf("field %s %w", c.field, errBadUTF8)
		}
		return appendCopy(dst, v), nil
	case typeText:
		switch v[0] {
		case '"':
			s, err := e.text(v)
			if err != nil {
				return dst, fmt.Errorf("field %s %w", c.field, err)
			}
			return appendCopy(dst, s), nil
		case '{', '[':
			if !utf8.Valid(v) {
				return dst, fmt.Errorf("field %s %w", c.field, errBadUTF8)
			}
		}
		return appendCopy(dst, v), nil // numbers, booleans and JSON text as written
	case typeSmallint, typeInteger, typeBigint:
		lit, ok := e.numberText(v)
		if !ok && v[0] == '"' {
			// A string holds an integer as PostgreSQL reads one ('+5',
			// '0012', ' 7 '), which is not always a JSON number.
			lit, ok = e.integerString(v)
		}
		if !ok {
			return dst, bad("an integer")
		}
		bits := 64
		switch c.typ.kind {
		case typeSmallint:
			bits = 16
		case typeInteger:
			bits = 32
		}
		if _, err := strconv.ParseInt(string(lit), 10, bits); err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return dst, fmt.Errorf("field %s is %s, out of the range of %s", c.field, excerpt(lit), c.typ)
			}
			return dst, bad("an integer (no fraction or exponent)")
		}
		return append(dst, lit...), nil
	case typeNumeric, typeDouble:
		lit, ok := e.numberText(v)
		if !ok {
			if s, isStr := e.specialNumber(v); isStr {
				return append(dst, s...), nil
			}
			return dst, bad("a number")
		}
		if c.typ.kind == typeNumeric && c.typ.precision > 0 {
			_, sh, _ := scanNumber(lit, 0)
			if sc := scaleOf(lit, sh); sc > c.typ.scale {
				return dst, fmt.Errorf("field %s is %s, with %d decimal places; %s keeps %d and PostgreSQL would round it",
					c.field, excerpt(lit), sc, c.typ, c.typ.scale)
			}
		}
		return append(dst, lit...), nil
	case typeBoolean:
		switch {
		case string(v) == "true" || string(v) == `"true"`:
			return append(dst, 't'), nil
		case string(v) == "false" || string(v) == `"false"`:
			return append(dst, 'f'), nil
		}
		return dst, bad("a boolean")
	case typeTimestamptz:
		if v[0] != '"' {
			return dst, bad("a timestamp (write it as an RFC 3339 string, 2006-01-02T15:04:05Z)")
		}
		s, err := e.text(v)
		if err != nil {
			return dst, fmt.Errorf("field %s %w", c.field, err)
		}
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return dst, fmt.Errorf("field %s is %s, not an RFC 3339 timestamp such as 2006-01-02T15:04:05.123456Z", c.field, excerpt(v))
		}
		if t.Nanosecond()%1000 != 0 {
			return dst, fmt.Errorf("field %s is %s, with nanoseconds; timestamptz keeps microseconds and PostgreSQL would round it", c.field, excerpt(v))
		}
		return appendTimestamp(dst, t.UTC()), nil
	case typeBytea:
		if v[0] != '"' {
			return dst, bad("base64 text")
		}
		s, err := e.text(v)
		if err != nil {
			return dst, fmt.Errorf("field %s %w", c.field, err)
		}
		n := base64.StdEncoding.DecodedLen(len(s))
		buf := make([]byte, n)
		m, err := base64.StdEncoding.Decode(buf, s)
		if err != nil {
			return dst, fmt.Errorf("field %s is not base64 (standard alphabet, padded): %v", c.field, err)
		}
		return appendBytea(dst, buf[:m]), nil
	}
	return dst, fmt.Errorf("column type %s has no encoder", c.typ)
}

// text returns the decoded text of JSON string v, in scratch space that the
// next call reuses.
func (e *encoder) text(v []byte) ([]byte, error) {
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		if !utf8.Valid(in) {
			return nil, errBadUTF8
		}
		return in, nil
	}
	var err error
	e.tmp, err = appendUnescaped(e.tmp[:0], in)
	return e.tmp, err
}

// numberText returns the number literal of v: v itself if it is a JSON
// number, or the text of a JSON string that holds exactly a JSON number
// (sources such as CSV give every field as a string).
func (e *encoder) numberText(v []byte) ([]byte, bool) {
	lit := v
	if v[0] == '"' {
		lit = v[1 : len(v)-1]
	} else if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return nil, false
	}
	if len(lit) == 0 {
		return nil, false
	}
	end, _, err := scanNumber(lit, 0)
	if err != nil || end != len(lit) {
		return nil, false
	}
	return lit, true
}

// integerString returns the text of JSON string v when it is an integer as
// PostgreSQL's integer input takes one: spaces around it, an optional sign,
// then decimal digits only (leading zeros too).
func (e *encoder) integerString(v []byte) ([]byte, bool) {
	s, err := e.text(v)
	if err != nil {
		return nil, false
	}
	s = bytes.Trim(s, " \t\n\r\v\f")
	digits := s
	if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	return s, true
}

// specialNumber accepts the strings "NaN", "Infinity" and "-Infinity" that
// numeric and double precision hold and JSON numbers cannot.
func (e *encoder) specialNumber(v []byte) ([]byte, bool) {
	switch string(v) {
	case `"NaN"`, `"Infinity"`, `"-Infinity"`:
		return v[1 : len(v)-1], true
	}
	return nil, false
}

// scaleOf returns how many decimal places literal lit needs: its fraction
// digits less the exponent, trailing zeros of the fraction not counted.
func scaleOf(lit []byte, sh numberShape) int {
	frac := sh.frac
	if frac > 0 {
		dot := bytes.IndexByte(lit, '.')
		for frac > 0 && lit[dot+frac] == '0' {
			frac--
		}
	}
	return max(frac-sh.exp, 0)
}

// appendCopy appends s escaped for COPY's text format.
func appendCopy(dst, s []byte) []byte {
	for {
		i := indexSpecial(s)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		switch s[i] {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		}
		s = s[i+1:]
	}
}

// indexSpecial returns the index of the first byte COPY needs escaped, or -1.
// It tests eight bytes at a time: a JSON document in a jsonb or text column
// is mostly bytes that need nothing, and the byte loop was a fifth of the
// encoder's time.
func indexSpecial(s []byte) int {
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(s[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '\n' || c == '\r' || c == '\t' {
			return i
		}
	}
	return -1
}

// specialMask has the high bit set of the lowest byte of w (in little-endian
// order) that is a backslash, \n, \r or \t, and possibly of higher bytes,
// and is 0 when no byte is: for each of the four, a byte equal to it is a zero
// byte of w XOR it, and (x - 0x01...) &^ x & 0x80... flags the lowest zero
// byte of x exactly (a borrow can flag bytes above it only).
func specialMask(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) &^ x & highs }
	return zero(w^(ones*'\\')) | zero(w^(ones*'\n')) | zero(w^(ones*'\r')) | zero(w^(ones*'\t'))
}

const hexDigits = "0123456789abcdef"

// appendBytea appends b as bytea's hex input (\x...), its backslash escaped
// for COPY.
func appendBytea(dst, b []byte) []byte {
	dst = append(dst, '\\', '\\', 'x')
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}
