package postgres

import (
	"errors"
	"unicode/utf8"
)

// This file reads the JSON of a record value without decoding it: it finds
// the raw bytes of the members a column maps, so that a number reaches the
// table as the literal the record holds (9007199254740993 stays itself; it
// never passes through a float64), and checks the document's syntax on the
// way. Strings are decoded only when a column needs their text.

// maxDepth bounds the nesting the scanner follows; a deeper document is
// refused rather than risking the stack.
const maxDepth = 1000

var (
	errNotObject = errors.New("the record value is not a JSON object")
	errSyntax    = errors.New("the record value is not valid JSON")
	errDepth     = errors.New("the record value is nested more than 1000 levels deep")
)

// lookupMembers scans the JSON object doc and sets out[i] to the raw bytes of
// the last member named names[i] (the last, as encoding/json lets a repeated
// key win), or nil when there is none.
func lookupMembers(doc []byte, names []string, out [][]byte) error {
	clear(out)
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return errNotObject
	}
	end, err := scanObject(doc, i, 0, names, out)
	if err != nil {
		return err
	}
	if skipWS(doc, end) != len(doc) {
		return errSyntax
	}
	return nil
}

// scanObject checks the object at b[i] and returns the index after it,
// storing the members named in names into out as it goes.
func scanObject(b []byte, i, depth int, names []string, out [][]byte) (int, error) {
	if depth >= maxDepth {
		return 0, errDepth
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		ks := i
		ke, escaped, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		vs := skipWS(b, i+1)
		ve, err := skipValue(b, vs, depth+1)
		if err != nil {
			return 0, err
		}
		if len(names) > 0 {
			if k := matchKey(b[ks+1:ke-1], escaped, names); k >= 0 {
				out[k] = b[vs:ve]
			}
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// matchKey returns the index in names of the key whose raw (quoted, still
// escaped) content is k, or -1.
func matchKey(k []byte, escaped bool, names []string) int {
	if escaped {
		s, err := appendUnescaped(nil, k)
		if err != nil {
			return -1
		}
		k = s
	}
	for n, name := range names {
		if string(k) == name {
			return n
		}
	}
	return -1
}

func skipWS(b []byte, i int) int {
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

// scanString checks the string starting at the quote b[i] and returns the
// index after its closing quote, and whether it holds escapes.
func scanString(b []byte, i int) (int, bool, error) {
	escaped := false
	for i++; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false, errSyntax
				}
				i += 6
			default:
				return 0, false, errSyntax
			}
		case c < 0x20:
			return 0, false, errSyntax
		default:
			i++
		}
	}
	return 0, false, errSyntax
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c-'a') + 10
	}
	return rune(c-'A') + 10
}

// numberShape says what a JSON number literal looks like.
type numberShape struct {
	integer bool // no fraction and no exponent
	frac    int  // digits after the point
	exp     int  // the exponent's value, saturated at ±1e6
}

// scanNumber checks the number at b[i] and returns the index after it.
func scanNumber(b []byte, i int) (int, numberShape, error) {
	var sh numberShape
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, sh, errSyntax
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, sh, errSyntax
	}
	sh.integer = true
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, sh, errSyntax
		}
		sh.integer, sh.frac, i = false, j-i-1, j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		sh.integer = false
		i++
		neg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			neg = b[i] == '-'
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, sh, errSyntax
		}
		for _, c := range b[i:j] {
			if sh.exp < 1e6 {
				sh.exp = sh.exp*10 + int(c-'0')
			}
		}
		if neg {
			sh.exp = -sh.exp
		}
		i = j
	}
	return i, sh, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// skipValue checks the value starting at b[i] and returns the index after it.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; c {
	case '"':
		end, _, err := scanString(b, i)
		return end, err
	case '{':
		return scanObject(b, i, depth, nil, nil)
	case '[':
		return skipArray(b, i, depth)
	case 't':
		return skipLiteral(b, i, "true")
	case 'f':
		return skipLiteral(b, i, "false")
	case 'n':
		return skipLiteral(b, i, "null")
	default:
		end, _, err := scanNumber(b, i)
		return end, err
	}
}

func skipArray(b []byte, i, depth int) (int, error) {
	if depth >= maxDepth {
		return 0, errDepth
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		ve, err := skipValue(b, i, depth+1)
		if err != nil {
			return 0, err
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

var (
	errNUL       = errors.New("holds the character U+0000, which PostgreSQL text cannot store")
	errBadUTF8   = errors.New("holds bytes that are not UTF-8")
	errSurrogate = errors.New("holds a lone UTF-16 surrogate escape, which is no character")
)

// appendUnescaped appends the text of the JSON string content s (between the
// quotes, already checked by scanString) to dst. It refuses what a
// PostgreSQL text value cannot hold, rather than replacing it: U+0000, bytes
// that are not UTF-8, lone surrogates.
func appendUnescaped(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i
			for j < len(s) && s[j] != '\\' {
				j++
			}
			if !utf8.Valid(s[i:j]) {
				return dst, errBadUTF8
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		switch s[i+1] {
		case 'u':
			r := hexVal(s[i+2])<<12 | hexVal(s[i+3])<<8 | hexVal(s[i+4])<<4 | hexVal(s[i+5])
			i += 6
			if 0xD800 <= r && r < 0xDC00 {
				if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
					return dst, errSurrogate
				}
				lo := hexVal(s[i+2])<<12 | hexVal(s[i+3])<<8 | hexVal(s[i+4])<<4 | hexVal(s[i+5])
				if lo < 0xDC00 || lo >= 0xE000 {
					return dst, errSurrogate
				}
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			} else if 0xDC00 <= r && r < 0xE000 {
				return dst, errSurrogate
			}
			if r == 0 {
				return dst, errNUL
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst, nil
}
