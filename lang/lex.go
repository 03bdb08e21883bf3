package lang

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tMeta   // @name
	tElem   // #, #index, #key, #acc
	tNumber // a number literal
	tString // a string literal, decoded
	tOp     // an operator or punctuation
)

type token struct {
	kind tokKind
	pos  int
	text string // the identifier, operator, number literal as written, or the decoded string
}

// operators, longest first so that "?." is not read as "?".
var operators = []string{
	"...", "??", "?.", "==", "!=", "<=", ">=", "&&", "||", "**", "..",
	"+", "-", "*", "/", "%", "^", "<", ">", "!", "?", ":", "$", ".", ",", "(", ")", "[", "]", "{", "}", "|", ";", "=",
}

// lexer turns a source into tokens, all at once: expressions are short.
type lexer struct {
	src  string
	toks []token
}

func lex(src string) ([]token, *Error) {
	l := &lexer{src: src}
	i := 0
	for {
		i = l.skip(i)
		if i < 0 {
			return nil, errAt(src, len(src), "a comment /* is not closed with */")
		}
		if i >= len(src) {
			l.toks = append(l.toks, token{kind: tEOF, pos: len(src)})
			return l.toks, nil
		}
		c := src[i]
		switch {
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			l.toks = append(l.toks, token{kind: tIdent, pos: i, text: src[i:j]})
			i = j
		case c == '@':
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			if j == i+1 {
				return nil, errAt(src, i, "@ must be followed by a metadata name: @key, @headers, @meta, @timestamp or @origin")
			}
			l.toks = append(l.toks, token{kind: tMeta, pos: i, text: src[i+1 : j]})
			i = j
		case c == '#':
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			l.toks = append(l.toks, token{kind: tElem, pos: i, text: src[i+1 : j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9' && !l.afterOperand():
			j, err := l.number(i)
			if err != nil {
				return nil, err
			}
			l.toks = append(l.toks, token{kind: tNumber, pos: i, text: src[i:j]})
			i = j
		case c == '"' || c == '\'':
			s, j, err := l.quoted(i)
			if err != nil {
				return nil, err
			}
			l.toks = append(l.toks, token{kind: tString, pos: i, text: s})
			i = j
		case c == '`':
			j := strings.IndexByte(src[i+1:], '`')
			if j < 0 {
				return nil, errAt(src, i, "a raw string `...` is not closed")
			}
			l.toks = append(l.toks, token{kind: tString, pos: i, text: src[i+1 : i+1+j]})
			i += j + 2
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" || op == "..." {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, errAt(src, i, fmt.Sprintf("unexpected character %q", r))
			}
			// "?." before a digit is ? and a number (a ? .5 : 1).
			if op == "?." && i+2 < len(src) && src[i+2] >= '0' && src[i+2] <= '9' {
				op = "?"
			}
			l.toks = append(l.toks, token{kind: tOp, pos: i, text: op})
			i += len(op)
		}
	}
}

// afterOperand reports whether the last token ends an operand, so that a
// following "." is a member access (a.5 is not valid, but x .5 is odd).
func (l *lexer) afterOperand() bool {
	if len(l.toks) == 0 {
		return false
	}
	t := l.toks[len(l.toks)-1]
	switch t.kind {
	case tIdent, tMeta, tElem, tNumber, tString:
		return true
	case tOp:
		return t.text == ")" || t.text == "]" || t.text == "}"
	}
	return false
}

// skip skips spaces and comments from i; -1 for an unclosed comment.
func (l *lexer) skip(i int) int {
	src := l.src
	for i < len(src) {
		switch {
		case src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				return len(src)
			}
			i += j + 1
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return -1
			}
			i += j + 4
		default:
			return i
		}
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// number scans a number literal at i: decimal digits with _ separators, a
// fraction and an exponent, or 0x, 0o, 0b integers.
func (l *lexer) number(i int) (int, *Error) {
	src := l.src
	j := i
	if src[j] == '0' && j+1 < len(src) && strings.ContainsRune("xXoObB", rune(src[j+1])) {
		j += 2
		for j < len(src) && (isHexDigit(src[j]) || src[j] == '_') {
			j++
		}
		return j, nil
	}
	digits := func() {
		for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '_') {
			j++
		}
	}
	digits()
	// A fraction, but not a range (1..5) or a member (1.x is an error later).
	if j+1 < len(src) && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
		j++
		digits()
	} else if j < len(src) && src[j] == '.' && (j+1 == len(src) || src[j+1] != '.' && !isIdentStart(src[j+1])) {
		j++ // 1. is 1.0
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && src[k] >= '0' && src[k] <= '9' {
			j = k
			digits()
		} else {
			return 0, errAt(src, j, "an exponent needs digits, as in 1e6")
		}
	}
	if j < len(src) && isIdentStart(src[j]) {
		return 0, errAt(src, j, fmt.Sprintf("unexpected %q after the number %s", src[j], src[i:j]))
	}
	return j, nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// quoted decodes the string literal at i, quoted with ' or ": the escapes
// \n \t \r \\ \' \" \0 \xHH \uXXXX \u{X...}.
func (l *lexer) quoted(i int) (string, int, *Error) {
	src := l.src
	q := src[i]
	var b strings.Builder
	j := i + 1
	for {
		if j >= len(src) {
			return "", 0, errAt(src, i, fmt.Sprintf("the string starting here is not closed with %c", q))
		}
		c := src[j]
		switch {
		case c == q:
			return b.String(), j + 1, nil
		case c == '\\':
			if j+1 >= len(src) {
				return "", 0, errAt(src, j, "a \\ ends the expression")
			}
			e := src[j+1]
			j += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '\\', '\'', '"', '/', '`':
				b.WriteByte(e)
			case 'x':
				if j+2 > len(src) {
					return "", 0, errAt(src, j-2, `\x needs two hex digits, as in \x41`)
				}
				n, err := strconv.ParseUint(src[j:j+2], 16, 8)
				if err != nil {
					return "", 0, errAt(src, j-2, `\x needs two hex digits, as in \x41`)
				}
				b.WriteByte(byte(n))
				j += 2
			case 'u':
				var hex string
				if j < len(src) && src[j] == '{' {
					k := strings.IndexByte(src[j:], '}')
					if k < 0 {
						return "", 0, errAt(src, j-2, `\u{...} is not closed`)
					}
					hex, j = src[j+1:j+k], j+k+1
				} else {
					if j+4 > len(src) {
						return "", 0, errAt(src, j-2, `\u needs four hex digits, as in \u00e9`)
					}
					hex, j = src[j:j+4], j+4
				}
				n, err := strconv.ParseUint(hex, 16, 32)
				if err != nil || n > utf8.MaxRune {
					return "", 0, errAt(src, j-2, fmt.Sprintf(`\u%s is not a code point`, hex))
				}
				b.WriteRune(rune(n))
			default:
				return "", 0, errAt(src, j-2, fmt.Sprintf(`unknown escape \%c: write \\ for a backslash`, e))
			}
		default:
			b.WriteByte(c)
			j++
		}
	}
}
