package pgcdc

import (
	"encoding/base64"
	"encoding/hex"

	"github.com/weir-etl/weir/record"
)

// kind is how a column's text value becomes JSON. PostgreSQL sends every value
// in its text output form (pgoutput's default, and what the snapshot asks
// for); the kind, resolved once per column from its type, decides the JSON.
type kind uint8

const (
	kString      kind = iota // a JSON string of the text: text, uuid, date, interval, enums, and any type not listed
	kNumber                  // an integer literal, copied as it is: int2, int4, int8, oid
	kFloat                   // float4, float8: a number, or a string for NaN and ±Infinity
	kNumeric                 // numeric: a string, so that no digit or scale is lost to a float
	kBool                    // true or false
	kJSON                    // json, jsonb: the document itself
	kBytea                   // base64 (standard encoding, padded) of the bytes
	kTimestamptz             // RFC 3339 with its zone: 2026-01-02T03:04:05.123456Z
	kTimestamp               // ISO 8601 without a zone, as it has none: 2026-01-02T03:04:05.123456
	kArray                   // a JSON array of the element type's values
)

// colType is a resolved column type: its kind and, for an array, its
// element's type and the element delimiter of the array literal.
type colType struct {
	kind  kind
	elem  *colType
	delim byte
}

// builtin kinds by type OID (pg_type.h). Types not here are looked up in
// pg_type (domains, enums, arrays of other types) and default to kString.
var builtin = map[uint32]kind{
	16:   kBool,
	17:   kBytea,
	20:   kNumber,
	21:   kNumber,
	23:   kNumber,
	26:   kNumber,
	114:  kJSON,
	700:  kFloat,
	701:  kFloat,
	1114: kTimestamp,
	1184: kTimestamptz,
	1700: kNumeric,
	3802: kJSON,
}

// builtinArrays maps the common array types to their element type, so that
// they need no catalog lookup. The delimiter of all of them is a comma.
var builtinArrays = map[uint32]uint32{
	1000: 16,   // bool[]
	1001: 17,   // bytea[]
	1005: 21,   // int2[]
	1007: 23,   // int4[]
	1016: 20,   // int8[]
	1028: 26,   // oid[]
	1009: 25,   // text[]
	1014: 1042, // bpchar[]
	1015: 1043, // varchar[]
	1021: 700,  // float4[]
	1022: 701,  // float8[]
	1231: 1700, // numeric[]
	1182: 1082, // date[]
	1115: 1114, // timestamp[]
	1185: 1184, // timestamptz[]
	199:  114,  // json[]
	3807: 3802, // jsonb[]
	2951: 2950, // uuid[]
}

// appendValue appends the JSON form of text, a value of type t in
// PostgreSQL's text output format. Values whose text is not what the type's
// output function produces (which PostgreSQL never sends) are kept as JSON
// strings rather than guessed at: nothing is rounded or replaced.
func appendValue(dst []byte, t *colType, text []byte) []byte {
	switch t.kind {
	case kNumber:
		if isIntLiteral(text) {
			return append(dst, text...)
		}
	case kFloat:
		if isFloatLiteral(text) {
			return append(dst, text...)
		}
	case kBool:
		switch string(text) {
		case "t":
			return append(dst, "true"...)
		case "f":
			return append(dst, "false"...)
		}
	case kJSON:
		// json and jsonb output is a JSON document; json keeps the text as
		// it was written, spacing and key order included.
		return append(dst, text...)
	case kBytea:
		if b, ok := decodeByteaHex(text); ok {
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, b)
			return append(dst, '"')
		}
	case kTimestamptz:
		return appendTimestamp(dst, text, true)
	case kTimestamp:
		return appendTimestamp(dst, text, false)
	case kArray:
		if out, ok := appendArray(dst, t, text); ok {
			return out
		}
	}
	return appendString(dst, text)
}

// isIntLiteral reports whether b is an optionally signed run of digits, which
// is also a JSON number.
func isIntLiteral(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isFloatLiteral reports whether b is a JSON number. PostgreSQL prints floats
// as their shortest exact decimal (extra_float_digits > 0, which the
// connection sets), so the JSON number is the same float; NaN and the
// infinities are not JSON numbers and fall through to strings.
func isFloatLiteral(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == f {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		f := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == f {
			return false
		}
	}
	return i == len(b)
}

// decodeByteaHex decodes bytea's hex output format, \x0a0b (bytea_output is
// set to hex on every connection).
func decodeByteaHex(text []byte) ([]byte, bool) {
	if len(text) < 2 || text[0] != '\\' || text[1] != 'x' {
		return nil, false
	}
	b := make([]byte, hex.DecodedLen(len(text)-2))
	if _, err := hex.Decode(b, text[2:]); err != nil {
		return nil, false
	}
	return b, true
}

// appendTimestamp turns ISO output (DateStyle ISO, TimeZone UTC, both set on
// every connection), "2026-01-02 03:04:05.123456+00", into RFC 3339,
// "2026-01-02T03:04:05.123456Z". A zone other than +00 is kept as an offset
// (+05:30). Text of another shape (infinity, years before 1 or after 9999)
// is kept as it is, as a string.
func appendTimestamp(dst, text []byte, zoned bool) []byte {
	n := len(text)
	ok := n >= 19 && text[4] == '-' && text[7] == '-' && text[10] == ' ' && text[13] == ':' && text[16] == ':'
	for _, i := range [...]int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18} {
		ok = ok && text[i] >= '0' && text[i] <= '9'
	}
	if ok && n > 19 && text[19] == '.' {
		i := 20
		for i < n && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		ok = i > 20
		n = i
	} else {
		n = 19
	}
	if !ok {
		return appendString(dst, text)
	}
	zone := text[n:]
	switch {
	case !zoned && len(zone) == 0:
	case zoned && string(zone) == "+00":
		zone = []byte("Z")
	case zoned && len(zone) == 3 && (zone[0] == '+' || zone[0] == '-') && digits(zone[1:]):
		zone = append(append([]byte{}, zone...), ":00"...)
	case zoned && len(zone) == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':' && digits(zone[1:3]) && digits(zone[4:]):
	default:
		return appendString(dst, text)
	}
	dst = append(dst, '"')
	dst = append(dst, text[:10]...)
	dst = append(dst, 'T')
	dst = append(dst, text[11:n]...)
	dst = append(dst, zone...)
	return append(dst, '"')
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendArray appends an array literal ({1,2,3}, {{"a b",NULL},{c,d}}) as a
// JSON array whose elements are converted by the element type. It returns
// false for what it does not parse: a literal with explicit bounds
// ([0:1]={1,2}), which a JSON array cannot carry, is then kept as text.
func appendArray(dst []byte, t *colType, text []byte) ([]byte, bool) {
	if t.elem == nil || len(text) < 2 || text[0] != '{' {
		return dst, false
	}
	start := len(dst)
	p := arrayParser{src: text, elem: t.elem, delim: t.delim}
	out, ok := p.parse(dst)
	if !ok || p.i != len(text) {
		return dst[:start], false
	}
	return out, true
}

type arrayParser struct {
	src   []byte
	i     int
	elem  *colType
	delim byte
	buf   []byte // an unescaped quoted element
}

func (p *arrayParser) parse(dst []byte) ([]byte, bool) {
	if p.i >= len(p.src) || p.src[p.i] != '{' {
		return dst, false
	}
	p.i++
	dst = append(dst, '[')
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		return append(dst, ']'), true
	}
	for first := true; ; first = false {
		if !first {
			dst = append(dst, ',')
		}
		if p.i >= len(p.src) {
			return dst, false
		}
		var ok bool
		switch p.src[p.i] {
		case '{':
			dst, ok = p.parse(dst)
		case '"':
			dst, ok = p.quoted(dst)
		default:
			dst, ok = p.bare(dst)
		}
		if !ok || p.i >= len(p.src) {
			return dst, false
		}
		switch p.src[p.i] {
		case p.delim:
			p.i++
		case '}':
			p.i++
			return append(dst, ']'), true
		default:
			return dst, false
		}
	}
}

func (p *arrayParser) quoted(dst []byte) ([]byte, bool) {
	p.i++
	p.buf = p.buf[:0]
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch c {
		case '\\':
			if p.i+1 >= len(p.src) {
				return dst, false
			}
			p.buf = append(p.buf, p.src[p.i+1])
			p.i += 2
		case '"':
			p.i++
			return appendValue(dst, p.elem, p.buf), true
		default:
			p.buf = append(p.buf, c)
			p.i++
		}
	}
	return dst, false
}

func (p *arrayParser) bare(dst []byte) ([]byte, bool) {
	s := p.i
	for p.i < len(p.src) && p.src[p.i] != p.delim && p.src[p.i] != '}' {
		if c := p.src[p.i]; c == '{' || c == '"' || c == '\\' {
			return dst, false
		}
		p.i++
	}
	v := p.src[s:p.i]
	if len(v) == 0 {
		return dst, false
	}
	// NULL unquoted is the null element; a string "NULL" is always quoted.
	if string(v) == "NULL" {
		return append(dst, "null"...), true
	}
	return appendValue(dst, p.elem, v), true
}

// appendString appends b as a JSON string, as the record's value model
// writes strings (record.AppendString): every byte kept, the JSON specials
// escaped.
func appendString(dst, b []byte) []byte { return record.AppendString(dst, record.BytesString(b)) }
