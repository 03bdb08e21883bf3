package record

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// This file is the JSON scanner every read of a record's value goes through:
// it checks a value's syntax and finds the top-level members of an object
// without decoding anything. Members are then read lazily, as Values that
// point into the record's own bytes.
//
// It accepts RFC 8259 JSON with two deliberate allowances, both so that a
// record weir did not change passes through as it came: strings may hold
// bytes that are not UTF-8 (encoding/json accepts them too), and numbers
// may be of any size or precision (they are kept as their literal; only an
// expression that computes with one needs it to fit a Go type). Nesting is
// limited to MaxDepth levels.

// MaxDepth is the deepest nesting of arrays and objects a value may have.
// It is encoding/json's limit too.
const MaxDepth = 10000

// SyntaxError is a value that is not JSON.
type SyntaxError struct {
	Offset int    // the byte where the problem is
	Msg    string // what is wrong there
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("record: value is not JSON: %s at byte %d", e.Msg, e.Offset)
}

func syntaxErr(b []byte, i int, want string) error {
	if i >= len(b) {
		return &SyntaxError{Offset: i, Msg: "unexpected end, " + want}
	}
	c := b[i]
	if c >= 0x20 && c < utf8.RuneSelf {
		return &SyntaxError{Offset: i, Msg: fmt.Sprintf("unexpected %q, %s", c, want)}
	}
	return &SyntaxError{Offset: i, Msg: fmt.Sprintf("unexpected byte 0x%02x, %s", c, want)}
}

// skipSpace returns the index of the first byte from b[i] on that is not
// whitespace. Most calls find none: that case is inlined.
func skipSpace(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return skipSpaces(b, i)
}

func skipSpaces(b []byte, i int) int {
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

// strFlags says what a string holds beyond plain bytes.
type strFlags uint8

const strEscaped strFlags = 1 // a backslash escape

// plain marks the bytes a string may hold as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString checks the string starting at b[i] (a quote) and returns the
// index after its closing quote.
func scanString(b []byte, i int) (int, strFlags, error) {
	var flags strFlags
	i++
	for {
		// The common run of plain bytes, without a switch per byte: eight
		// at a time while eight are left, then one at a time.
		for i+8 <= len(b) {
			if m := special8(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, 0, syntaxErr(b, i, "in a string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, flags, nil
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return 0, 0, syntaxErr(b, i+1, "in an escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, 0, &SyntaxError{Offset: i, Msg: `\u not followed by four hex digits`}
				}
				i += 6
			default:
				return 0, 0, &SyntaxError{Offset: i, Msg: fmt.Sprintf("unknown escape \\%c", b[i+1])}
			}
		default:
			return 0, 0, &SyntaxError{Offset: i, Msg: fmt.Sprintf("control character 0x%02x in a string (escape it)", c)}
		}
	}
}

// special8 returns a word whose lowest set bit is the top bit of the first
// byte of w (in memory order) that is not plain, or 0 when all eight are.
// Each of the three tests flags its first such byte exactly (a borrow can
// only flag bytes after it), so the lowest bit of their union is exact.
func special8(w uint64) uint64 {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	q := w ^ ones*'"'
	bs := w ^ ones*'\\'
	return ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w) & tops
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber checks the number starting at b[i] and returns the index after it.
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, syntaxErr(b, i, "in a number")
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, syntaxErr(b, start, "looking for a value")
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return 0, syntaxErr(b, j, "after a decimal point")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return 0, syntaxErr(b, j, "in an exponent")
		}
		i = j
	}
	return i, nil
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, syntaxErr(b, i, "looking for a value")
	}
	return i + len(lit), nil
}

// skipValue checks the value starting at b[i] (not at a space) and returns
// the index after it. depth is the nesting of the value's container. It does
// not recurse: containers are tracked in a bit stack (1 for an object), so a
// deeply nested value costs no Go stack.
func skipValue(b []byte, i, depth int) (int, error) {
	// Most values are a string or a number: settled without the stack.
	if i < len(b) {
		switch b[i] {
		case '"':
			end, _, err := scanString(b, i)
			return end, err
		case '{', '[', 't', 'f', 'n':
		default:
			return scanNumber(b, i) // or the error of a byte no value starts with
		}
	}
	var small [4]uint64
	stack := small[:]
	n := 0 // containers open
	var err error
	for {
		// A value at b[i].
		if i >= len(b) {
			return 0, syntaxErr(b, i, "looking for a value")
		}
		switch c := b[i]; c {
		case '"':
			if i, _, err = scanString(b, i); err != nil {
				return 0, err
			}
		case '{', '[':
			if depth+n >= MaxDepth {
				return 0, &SyntaxError{Offset: i, Msg: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
			}
			if n/64 >= len(stack) {
				stack = append(stack, 0)
			}
			if c == '{' {
				stack[n/64] |= 1 << (n % 64)
			} else {
				stack[n/64] &^= 1 << (n % 64)
			}
			n++
			i = skipSpace(b, i+1)
			if i < len(b) && (b[i] == '}' && c == '{' || b[i] == ']' && c == '[') {
				i++
				n--
				break
			}
			if c == '{' {
				if i, err = skipKey(b, i); err != nil {
					return 0, err
				}
			}
			continue
		case 't':
			if i, err = skipLiteral(b, i, "true"); err != nil {
				return 0, err
			}
		case 'f':
			if i, err = skipLiteral(b, i, "false"); err != nil {
				return 0, err
			}
		case 'n':
			if i, err = skipLiteral(b, i, "null"); err != nil {
				return 0, err
			}
		default:
			if i, err = scanNumber(b, i); err != nil {
				return 0, err
			}
		}
		// After a value: close containers, or go on to the next element.
		for {
			if n == 0 {
				return i, nil
			}
			object := stack[(n-1)/64]&(1<<((n-1)%64)) != 0
			i = skipSpace(b, i)
			if i >= len(b) {
				return 0, syntaxErr(b, i, "looking for , or a closing bracket")
			}
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if object {
					if i, err = skipKey(b, i); err != nil {
						return 0, err
					}
				}
				break
			}
			if object && b[i] == '}' || !object && b[i] == ']' {
				i++
				n--
				continue
			}
			if object {
				return 0, syntaxErr(b, i, "looking for , or }")
			}
			return 0, syntaxErr(b, i, "looking for , or ]")
		}
	}
}

// skipKey checks a member's key and colon at b[i] and returns the index of
// its value.
func skipKey(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, syntaxErr(b, i, "looking for a member name")
	}
	ke, _, err := scanString(b, i)
	if err != nil {
		return 0, err
	}
	i = skipSpace(b, ke)
	if i >= len(b) || b[i] != ':' {
		return 0, syntaxErr(b, i, "looking for :")
	}
	return skipSpace(b, i+1), nil
}

// Valid reports whether b is one JSON value (with optional surrounding
// whitespace), as weir's scanner accepts it; the error says where it is not.
func Valid(b []byte) error {
	i := skipSpace(b, 0)
	end, err := skipValue(b, i, 0)
	if err != nil {
		return err
	}
	if end = skipSpace(b, end); end != len(b) {
		return syntaxErr(b, end, "after the value")
	}
	return nil
}

// member is one top-level member of an object: the offsets of its quoted key
// and of its value in the object's bytes.
type member struct {
	ks, ke, vs, ve int32
	esc            bool   // the key holds an escape
	tag            uint32 // keyTag of the key, when it has no escape
}

// newMember returns the member whose key is b[ks:ke] and value b[vs:ve].
func newMember(b []byte, ks, ke, vs, ve int, esc bool) member {
	m := member{int32(ks), int32(ke), int32(vs), int32(ve), esc, 0}
	if n := ke - ks - 2; n > 0 && !esc {
		m.tag = uint32(min(n, 0xffff))<<16 | uint32(b[ks+1])<<8 | uint32(b[ke-2])
	}
	return m
}

// keyTag is a summary of a name (its length and its first and last bytes)
// that two equal names share: the loops that match members against names
// compare it first, and compare the names only when it matches.
func keyTag(name string) uint32 {
	if len(name) == 0 {
		return 0
	}
	return uint32(min(len(name), 0xffff))<<16 | uint32(name[0])<<8 | uint32(name[len(name)-1])
}

// tagBit is one of 64 bits picked by a tag: the bits of a few names' tags,
// or'ed, tell most other names apart from them at once.
func tagBit(t uint32) uint64 { return 1 << (t * 0x9e3779b1 >> 26) }

// is reports whether m's key, in b, is name. It is small enough to be
// inlined into the loops that match every member against names; a key with
// an escape, which is rare, is decoded out of line.
func (m *member) is(b []byte, name string) bool {
	if m.esc {
		return m.escapedIs(b, name)
	}
	return string(b[m.ks+1:m.ke-1]) == name
}

//go:noinline
func (m *member) escapedIs(b []byte, name string) bool { return decodeKey(b[m.ks:m.ke]) == name }

// indexObject checks that b is a JSON object and appends its top-level
// members to dst, in order (duplicates too).
func indexObject(b []byte, dst []member) ([]member, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if err := Valid(b); err != nil {
			return dst, err
		}
		return dst, ErrNotObject
	}
	if len(b) > 1<<31-1 {
		return dst, &SyntaxError{Offset: 0, Msg: "a value over 2 GiB"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return dst, trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return dst, syntaxErr(b, i, "looking for a member name")
		}
		ks := i
		ke, flags, err := scanString(b, i)
		if err != nil {
			return dst, err
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return dst, syntaxErr(b, i, "looking for :")
		}
		vs := skipSpace(b, i+1)
		ve, err := skipValue(b, vs, 1)
		if err != nil {
			return dst, err
		}
		dst = append(dst, newMember(b, ks, ke, vs, ve, flags&strEscaped != 0))
		i = skipSpace(b, ve)
		if i >= len(b) {
			return dst, syntaxErr(b, i, "looking for , or }")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return dst, trailing(b, i+1)
		default:
			return dst, syntaxErr(b, i, "looking for , or }")
		}
	}
}

func trailing(b []byte, i int) error {
	if i = skipSpace(b, i); i != len(b) {
		return syntaxErr(b, i, "after the object")
	}
	return nil
}

// lookupObject checks that b is a JSON object and sets raw[k] to the value
// bytes of the last member named names[k] (the one a decoder keeps), or to
// nil when there is none.
func lookupObject(b []byte, names []string, raw [][]byte) error {
	clear(raw)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if err := Valid(b); err != nil {
			return err
		}
		return ErrNotObject
	}
	if len(b) > 1<<31-1 {
		// Member offsets are 32 bits, as in indexObject.
		return &SyntaxError{Offset: 0, Msg: "a value over 2 GiB"}
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return trailing(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return syntaxErr(b, i, "looking for a member name")
		}
		ks := i
		ke, flags, err := scanString(b, i)
		if err != nil {
			return err
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return syntaxErr(b, i, "looking for :")
		}
		vs := skipSpace(b, i+1)
		ve, err := skipValue(b, vs, 1)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			m := member{ks: int32(ks), ke: int32(ke), esc: flags&strEscaped != 0}
			for k, n := range names {
				if m.is(b, n) {
					raw[k] = b[vs:ve]
				}
			}
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return syntaxErr(b, i, "looking for , or }")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return trailing(b, i+1)
		default:
			return syntaxErr(b, i, "looking for , or }")
		}
	}
}

// findMember returns the value bytes of the last member named name in the
// object obj, which the scanner has already checked.
func findMember(obj []byte, name string) ([]byte, bool) {
	var found []byte
	ok := false
	forMembers(obj, func(m member) {
		if m.is(obj, name) {
			found, ok = obj[m.vs:m.ve], true
		}
	})
	return found, ok
}

// forMembers calls fn for each member of the checked object obj, in order.
func forMembers(obj []byte, fn func(m member)) {
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return
	}
	for {
		ks := i
		ke, flags, _ := scanString(obj, i)
		vs := skipSpace(obj, skipSpace(obj, ke)+1)
		ve, _ := skipValue(obj, vs, 1)
		fn(member{ks: int32(ks), ke: int32(ke), vs: int32(vs), ve: int32(ve), esc: flags&strEscaped != 0})
		i = skipSpace(obj, ve)
		if obj[i] == '}' {
			return
		}
		i = skipSpace(obj, i+1)
	}
}

// forElements calls fn with the bytes of each element of the checked array
// arr, in order, until fn returns false.
func forElements(arr []byte, fn func(i int, v []byte) bool) {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		return
	}
	for k := 0; ; k++ {
		ve, _ := skipValue(arr, i, 1)
		if !fn(k, arr[i:ve]) {
			return
		}
		i = skipSpace(arr, ve)
		if arr[i] == ']' {
			return
		}
		i = skipSpace(arr, i+1)
	}
}
