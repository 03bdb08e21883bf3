package config

import (
	"fmt"
	"strings"
)

// Error is one problem in a pipeline file.
type Error struct {
	File string
	Line int // 1-based; 0 when the problem has no single place (an empty file)
	// Column is the 1-based column of the problem on Line, when it is known
	// that precisely (a YAML syntax error, a fault inside an expression); 0
	// otherwise, for a problem with a whole setting.
	Column int
	// Warning marks a problem that does not stop the file from loading
	// (a deprecated spelling): Options.Warn receives it.
	Warning bool
	// Flag is the command-line edit the problem is in ("--set
	// sinks.out.batch.max_age=5"), when the value came from one (see Set);
	// the problem is then not at a line of the file.
	Flag  string
	Field string // the setting, as a dotted path: "sinks.out.batch.max_bytes"
	Msg   string // what is wrong and how to fix it

	// explains are the settings whose other problems follow from this one
	// (see loader.result): an unset environment variable explains what its
	// empty value then fails, and an option spelt "pahts" explains why
	// "paths" is missing.
	explains []string
	// unknown is the option name of an "unknown option" problem that found
	// no near spelling to suggest.
	unknown string
}

// Error formats e as "file:line: field: message" ("file:line:column:
// message" for a syntax error), the form editors and
// terminals recognise as a place in a file, or "flag: field: message" for a
// value a command-line flag set.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Flag != "" {
		b.WriteString(e.Flag)
	} else {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Warning {
		b.WriteString("warning: ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in a pipeline file. Load and Parse return it
// whenever the file is invalid, so that a user fixes everything in one pass
// instead of one error per run.
type Errors struct {
	File string
	List []*Error // in the order of the file
}

// Error prints a summary line and then one problem per line.
func (e *Errors) Error() string {
	var b strings.Builder
	n := len(e.List)
	if n == 1 {
		fmt.Fprintf(&b, "config: 1 problem in %s:", e.File)
	} else {
		fmt.Fprintf(&b, "config: %d problems in %s:", n, e.File)
	}
	for _, x := range e.List {
		b.WriteString("\n")
		b.WriteString(x.Error())
	}
	return b.String()
}

// Unwrap returns the problems, for errors.As and errors.Is.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, x := range e.List {
		out[i] = x
	}
	return out
}
