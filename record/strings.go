package record

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Strings are decoded and encoded so that nothing is replaced: a string that
// is read and written again comes out as it went in.
//
//   - Bytes that are not UTF-8 are kept as they are, in both directions.
//   - An escaped surrogate that is not half of a pair (\ud800) cannot be
//     UTF-8; it is decoded to the three bytes UTF-8's scheme would give it
//     (as WTF-8 does), and those three bytes are encoded as the escape again.
//   - Encoding escapes only what JSON requires (the quote, the backslash and
//     control characters), so the escape-free strings of a record, which are
//     most of them, encode to the bytes they were read from.

// bytesString returns b as a string without copying. The record's bytes are
// never modified after New (its documented contract), so a string that
// shares them stays valid for as long as it is referenced.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// BytesString returns b as a string that shares b's bytes, for bytes that
// never change, such as a record's key, value and header values (see
// Record). It lets expressions read them without copying.
func BytesString(b []byte) string { return bytesString(b) }

// stringBytes returns the bytes of s without copying, for reading only.
func stringBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// decodeKey decodes a checked, quoted member name.
func decodeKey(q []byte) string { return decodeQuoted(q) }

// decodeQuoted decodes the checked JSON string q (quotes included). A string
// without escapes shares q's bytes.
func decodeQuoted(q []byte) string {
	inner := q[1 : len(q)-1]
	esc := -1
	for i, c := range inner {
		if c == '\\' {
			esc = i
			break
		}
	}
	if esc < 0 {
		return bytesString(inner)
	}
	out := make([]byte, 0, len(inner))
	out = append(out, inner[:esc]...)
	for i := esc; i < len(inner); {
		c := inner[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch inner[i+1] {
		case '"', '\\', '/':
			out = append(out, inner[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(inner[i+2:])
			i += 6
			if utf16.IsSurrogate(r) && r < 0xdc00 && i+6 <= len(inner) && inner[i] == '\\' && inner[i+1] == 'u' {
				if r2 := hex4(inner[i+2:]); 0xdc00 <= r2 && r2 < 0xe000 {
					out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
					i += 6
					continue
				}
			}
			out = appendCodePoint(out, r)
			continue
		}
		i += 2
	}
	return bytesString(out)
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c <= '9':
			r |= rune(c - '0')
		case c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			r |= rune(c - 'a' + 10)
		}
	}
	return r
}

// appendCodePoint appends r in UTF-8's three-byte scheme even when it is a
// surrogate, which utf8.AppendRune would replace.
func appendCodePoint(b []byte, r rune) []byte {
	if utf16.IsSurrogate(r) {
		return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
	}
	return utf8.AppendRune(b, r)
}

// AppendString appends s to dst as a JSON string (see the comment at the
// top of this file for what is escaped).
func AppendString(dst []byte, s string) []byte {
	// Most strings need no escape: found in one loop over a table, and
	// written in one piece.
	n := 0
	for n < len(s) && asIs[s[n]] {
		n++
	}
	dst = append(dst, '"')
	if n == len(s) {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	start := 0
	for i := n; i < len(s); {
		c := s[i]
		if asIs[c] {
			i++
			continue
		}
		if c == 0xed {
			if i+2 < len(s) && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2] >= 0x80 && s[i+2] <= 0xbf {
				// A surrogate decoded from an escape: escape it again.
				dst = append(dst, s[start:i]...)
				r := rune(c&0x0f)<<12 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f)
				dst = append(dst, '\\', 'u', hexDigit[r>>12], hexDigit[r>>8&0xf], hexDigit[r>>4&0xf], hexDigit[r&0xf])
				i += 3
				start = i
				continue
			}
			i++ // any other 0xed is written as it is
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigit[c>>4], hexDigit[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigit = "0123456789abcdef"

// asIs marks the bytes AppendString writes as they are wherever they are:
// not a quote, a backslash or a control character, nor the first byte of
// an encoded surrogate (0xed), which AppendString looks at more closely. It
// is the only definition of them both of its loops use.
var asIs = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != 0xed
	}
	return t
}()
