package transform

import (
	"errors"
	"fmt"

	"github.com/weir-etl/weir/lang"
)

// Expr is a compiled expression of a transform, named for errors ("filter
// condition", "map set \"total\""). The language is package lang's; this
// is how a transform holds one.
type Expr struct {
	what string
	p    *lang.Program
	cond bool
}

// ExprError is an expression that does not compile: what it is for, and
// the language's error (with the line, column and a caret).
type ExprError struct {
	What string // what the expression is for: "condition", "set user.name"
	Err  *lang.Error
}

func (e *ExprError) Error() string {
	return fmt.Sprintf("transform: %s: expression %q does not compile: %s (line %d, column %d of the expression)\n%s",
		e.What, e.Err.Src, e.Err.Msg, e.Err.Line, e.Err.Column, e.Err.Excerpt("    "))
}

// Unwrap returns the language's error.
func (e *ExprError) Unwrap() error { return e.Err }

// Compile compiles an expression whose result may be of any type, as a map
// transform's set values are; it may drop() the record. what names the
// expression in errors.
func Compile(what, src string) (*Expr, error) { return compileWith(what, src, lang.Options{}) }

// CompileCondition compiles an expression that must give a bool, as the
// conditions of filter and route do. A result whose type is known at compile
// time to be something else is an error here; one that is known only per
// record (a field's value) is a record error.
func CompileCondition(what, src string) (*Expr, error) {
	return compileWith(what, src, lang.Options{Want: lang.TBool, NoDrop: true})
}

func compileWith(what, src string, o lang.Options) (*Expr, error) {
	p, err := lang.Compile(src, o)
	if err != nil {
		var le *lang.Error
		if errors.As(err, &le) {
			return nil, &ExprError{What: what, Err: le}
		}
		return nil, fmt.Errorf("transform: %s: %w", what, err)
	}
	return &Expr{what: what, p: p, cond: o.Want == lang.TBool}, nil
}

// String returns the expression's source.
func (x *Expr) String() string { return x.p.String() }

// Warnings returns the warnings of the expression's compilation: each use
// of a bare name that was metadata before @ (see lang.MetadataNames).
func (x *Expr) Warnings() []*lang.Error { return x.p.Warnings() }

// Program returns the compiled program.
func (x *Expr) Program() *lang.Program { return x.p }

// recordError names the expression's purpose in a record error.
func (x *Expr) recordError(err error) error {
	if err == lang.ErrDrop {
		return err
	}
	return fmt.Errorf("transform: %s: %w", x.what, err)
}
