package record

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// This file is the fast path of LookupFields: a scanner that reads a JSON
// object's top-level members without decoding them, then decodes only the
// members asked for.
//
// Its contract is narrow on purpose. When it reports success, the document is
// one that encoding/json accepts (the scanner checks the whole of it, as
// json.Unmarshal does before decoding), and every value it returns is the one
// json.Unmarshal into an any gives. Whenever it is unsure (a syntax error, a
// value that is not an object, nesting deeper than maxScanDepth) it reports
// failure, and the caller decodes with encoding/json instead, which gives the
// exact error. It never has to reproduce encoding/json's errors, only its
// acceptance and its values.

// maxScanDepth bounds the scanner's recursion. encoding/json's own limit is
// 10000; documents nested deeper than this take the slow path, which applies
// that limit.
const maxScanDepth = 1000

// maxExactDigits is the longest number without an exponent that cannot
// overflow a float64 (whose largest value has 309 integer digits). A longer
// one, or one with an exponent, is parsed while scanning, because
// encoding/json rejects a document holding a number out of float64's range.
const maxExactDigits = 300

// scanObject checks that b is a valid JSON object and sets raw[i] to the bytes
// of the last member named names[i], or to nil if there is none. The last one,
// because json.Unmarshal lets a repeated key overwrite the earlier value.
func scanObject(b []byte, names []string, raw [][]byte) bool {
	clear(raw)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ks := i
		ke, flags, ok := scanString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		vs := skipSpace(b, i+1)
		ve, ok := skipValue(b, vs, 1)
		if !ok {
			return false
		}
		if k := matchName(b[ks:ke], flags, names); k >= 0 {
			raw[k] = b[vs:ve]
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// matchName returns the index in names of the key whose quoted bytes are q, or -1.
func matchName(q []byte, flags strFlags, names []string) int {
	if flags == 0 {
		inner := q[1 : len(q)-1]
		for k, n := range names {
			if string(inner) == n {
				return k
			}
		}
		return -1
	}
	s, ok := decodeString(q, flags)
	if !ok {
		return -1
	}
	for k, n := range names {
		if s == n {
			return k
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// strFlags says what a string holds beyond printable ASCII.
type strFlags uint8

const (
	strEscaped  strFlags = 1 << iota // a backslash escape
	strNonASCII                      // bytes of 0x80 or more, maybe not UTF-8
)

// scanString checks the string starting at b[i] (a quote) and returns the
// index after its closing quote.
func scanString(b []byte, i int) (int, strFlags, bool) {
	var flags strFlags
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, flags, true
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return 0, 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, 0, false
				}
				i += 6
			default:
				return 0, 0, false
			}
		case c < 0x20:
			return 0, 0, false
		case c >= utf8.RuneSelf:
			// encoding/json accepts invalid UTF-8 and decodes it as U+FFFD;
			// decodeString leaves that to it.
			flags |= strNonASCII
			i++
		default:
			i++
		}
	}
	return 0, 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber checks the number starting at b[i] and returns the index after it.
func scanNumber(b []byte, i int) (int, bool) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, false
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	exp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		exp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	if exp || i-start > maxExactDigits {
		if _, err := strconv.ParseFloat(string(b[start:i]), 64); err != nil {
			return 0, false
		}
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// skipValue checks the value starting at b[i] and returns the index after it.
// depth is the nesting depth of the value's container.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; c {
	case '"':
		end, _, ok := scanString(b, i)
		return end, ok
	case '{', '[':
		if depth >= maxScanDepth {
			return 0, false
		}
		return skipContainer(b, i, depth+1)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return scanNumber(b, i)
		}
		return 0, false
	}
}

func skipLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// skipContainer checks the object or array starting at b[i].
func skipContainer(b []byte, i, depth int) (int, bool) {
	object := b[i] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		if object {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			ke, _, ok := scanString(b, i)
			if !ok {
				return 0, false
			}
			i = skipSpace(b, ke)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
		ve, ok := skipValue(b, i, depth)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case end:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// decodeDocument decodes b, an object that scanObject accepted.
func decodeDocument(b []byte) (map[string]any, bool) {
	v, end, ok := decodeAt(b, 0)
	m, isObject := v.(map[string]any)
	return m, ok && isObject && skipSpace(b, end) == len(b)
}

// decodeValue decodes b, exactly one value that skipValue accepted, as
// json.Unmarshal into an any would.
func decodeValue(b []byte) (any, bool) {
	v, end, ok := decodeAt(b, 0)
	return v, ok && end == len(b)
}

func decodeAt(b []byte, i int) (any, int, bool) {
	i = skipSpace(b, i)
	switch c := b[i]; c {
	case '"':
		end, flags, _ := scanString(b, i)
		s, ok := decodeString(b[i:end], flags)
		return s, end, ok
	case '{':
		m := make(map[string]any)
		i = skipSpace(b, i+1)
		if b[i] == '}' {
			return m, i + 1, true
		}
		for {
			ke, flags, _ := scanString(b, i)
			k, ok := decodeString(b[i:ke], flags)
			if !ok {
				return nil, 0, false
			}
			i = skipSpace(b, ke) + 1 // the colon
			var v any
			if v, i, ok = decodeAt(b, i); !ok {
				return nil, 0, false
			}
			m[k] = v
			i = skipSpace(b, i)
			if b[i] == '}' {
				return m, i + 1, true
			}
			i = skipSpace(b, i+1) // past the comma
		}
	case '[':
		a := []any{}
		i = skipSpace(b, i+1)
		if b[i] == ']' {
			return a, i + 1, true
		}
		for {
			var v any
			var ok bool
			if v, i, ok = decodeAt(b, i); !ok {
				return nil, 0, false
			}
			a = append(a, v)
			i = skipSpace(b, i)
			if b[i] == ']' {
				return a, i + 1, true
			}
			i++ // the comma
		}
	case 't':
		return true, i + 4, true
	case 'f':
		return false, i + 5, true
	case 'n':
		return nil, i + 4, true
	default:
		end, ok := scanNumber(b, i)
		if !ok {
			return nil, 0, false
		}
		f, ok := parseNumber(b[i:end])
		return f, end, ok
	}
}

// parseNumber parses a number token as encoding/json does, with
// strconv.ParseFloat. Integers of up to 15 digits, most numbers in records,
// are converted directly: every such integer is exact in a float64, so the
// result is the one ParseFloat rounds to.
func parseNumber(t []byte) (float64, bool) {
	neg := len(t) > 0 && t[0] == '-'
	digits := t
	if neg {
		digits = t[1:]
	}
	if u, ok := smallInt(digits); ok {
		f := float64(u)
		if neg {
			f = -f // -0 too, as ParseFloat gives it
		}
		return f, true
	}
	f, err := strconv.ParseFloat(string(t), 64)
	return f, err == nil
}

// smallInt returns the value of digits if it is 1 to 15 decimal digits.
func smallInt(digits []byte) (uint64, bool) {
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return u, true
}

// decodeString decodes the quoted string q. Plain text (the common case) is
// copied as it is, which is what encoding/json does too; escapes and non-UTF-8
// bytes, which are rare, are left to encoding/json so that the result is its
// own to the byte (surrogate pairs, lone surrogates, U+FFFD replacement).
func decodeString(q []byte, flags strFlags) (string, bool) {
	inner := q[1 : len(q)-1]
	if flags&strEscaped == 0 && (flags&strNonASCII == 0 || utf8.Valid(inner)) {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", false
	}
	return s, true
}
