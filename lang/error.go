package lang

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Error is an expression that does not compile, or a warning about one
// that does (Warning set): where in the source, and what to do.
type Error struct {
	Src     string // the expression
	Pos     int    // byte offset of the problem in Src
	Line    int    // 1-based line of Pos in Src
	Column  int    // 1-based column of Pos, in characters
	Msg     string
	Warning bool
}

func errAt(src string, at int, msg string) *Error {
	line, col := lineCol(src, at)
	return &Error{Src: src, Pos: at, Line: line, Column: col, Msg: msg}
}

// Error returns "line:column: message".
func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg) }

// Excerpt returns the line of the source the problem is on, and under it a
// caret at its column, each line after indent.
func (e *Error) Excerpt(indent string) string {
	lines := strings.Split(e.Src, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return ""
	}
	line := strings.ReplaceAll(lines[e.Line-1], "\t", " ")
	return indent + line + "\n" + indent + strings.Repeat(" ", max(e.Column-1, 0)) + "^"
}

// lineCol converts a byte offset in src to a 1-based line and column.
func lineCol(src string, at int) (line, col int) {
	at = min(max(at, 0), len(src))
	before := src[:at]
	line = strings.Count(before, "\n") + 1
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, utf8.RuneCountInString(before) + 1
}
