package transform

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// The names below are reserved in expressions: they name record metadata, not
// fields. A field called "key" is therefore shadowed in an expression that
// uses the name key; every other field is a top-level variable.
const (
	nameKey       = "key"
	nameHeaders   = "headers"
	nameMeta      = "meta"
	nameTimestamp = "timestamp"
	nameOrigin    = "origin"
)

// ReservedNames lists the expression variables that name record metadata
// rather than fields, in the order the documentation presents them.
var ReservedNames = []string{nameKey, nameHeaders, nameMeta, nameTimestamp, nameOrigin}

// Origin is what an expression sees as origin: where the record was read.
type Origin struct {
	Source    string `expr:"source" json:"source"`
	Partition string `expr:"partition" json:"partition"`
	Offset    int64  `expr:"offset" json:"offset"`
}

// needs says which parts of a record an expression reads, so that evaluating
// it builds only those: a filter on key alone never decodes the value.
type needs uint8

const (
	needFields needs = 1 << iota
	needKey
	needHeaders
	needMeta
	needTimestamp
	needOrigin

	needReserved = needKey | needHeaders | needMeta | needTimestamp | needOrigin
)

// compileEnv gives the reserved names their types, so that `key + 1` or
// `origin.ofset` fail when the pipeline is loaded rather than on every record.
// Fields are unknown until run time: AllowUndefinedVariables types them as any.
// origin is a pointer so that a condition can read it from a struct the
// evaluation reuses, rather than from a copy boxed for every record.
var compileEnv = map[string]any{
	nameKey:       "",
	nameHeaders:   map[string]string{},
	nameMeta:      map[string]string{},
	nameTimestamp: time.Time{},
	nameOrigin:    &Origin{},
}

// Expr is a compiled expression over one record.
type Expr struct {
	what  string // what the expression is for, to name it in errors
	src   string
	root  node
	needs needs
	// fields are the top-level names the expression reads that are not
	// reserved, sorted: the only fields a condition decodes.
	fields []string
	// cond is set for conditions: their result is a bool, so nothing of the
	// environment outlives an evaluation, and reserved values may be reused.
	cond bool
}

// ExprError is an expression that does not compile.
type ExprError struct {
	What   string // what the expression is for: "condition", "set user.name"
	Expr   string // the expression's source
	Line   int    // 1-based line of the problem within Expr, 0 if unknown
	Column int    // 1-based column of the problem within Expr, 0 if unknown
	Msg    string
}

func (e *ExprError) Error() string {
	s := fmt.Sprintf("transform: %s: expression %q does not compile: %s", e.What, e.Expr, e.Msg)
	switch {
	case e.Line > 1:
		s += fmt.Sprintf(" (line %d, column %d of the expression)", e.Line, e.Column)
	case e.Column > 0:
		s += fmt.Sprintf(" (column %d)", e.Column)
	}
	return s
}

// wantKind is the result an expression must have, checked at compile time
// when the types are known and on every record otherwise.
type wantKind uint8

const (
	wantAny wantKind = iota
	wantBool
)

// Compile compiles an expression whose result may be of any type, as a map
// transform's set values are. what names the expression in errors.
func Compile(what, src string) (*Expr, error) { return compile(what, src, wantAny) }

// CompileCondition compiles an expression that must give a bool, as the
// conditions of filter and route do. A result whose type is known at compile
// time to be something else is an error here; one that is known only per
// record (a field's value) is a record error.
func CompileCondition(what, src string) (*Expr, error) { return compile(what, src, wantBool) }

func compile(what, src string, want wantKind) (*Expr, error) {
	return compileWith(what, src, want, &compiler{})
}

// compileWith compiles with c, which the tests set to compile generic nodes
// only (see fast.go).
func compileWith(what, src string, want wantKind, c *compiler) (*Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, &ExprError{What: what, Expr: src, Msg: "it is empty"}
	}
	// expr parses and checks; weir evaluates (see eval.go). Its optimizer
	// is off: it folds constants with Go's wrapping arithmetic.
	opts := []expr.Option{
		expr.Env(compileEnv),
		expr.AllowUndefinedVariables(),
		expr.Optimize(false),
		expr.Function(modFunc, func(...any) (any, error) { return nil, nil }),
		expr.Patch(modPatcher{}),
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, exprError(what, src, err)
	}
	// expr.AsBool is not used: it turns null into false at run time, and a
	// condition on a missing field must be a record error, not a silent drop.
	if t := prog.Node().Type(); want == wantBool && t != nil && t.Kind() != reflect.Interface && t.Kind() != reflect.Bool {
		return nil, &ExprError{What: what, Expr: src, Msg: fmt.Sprintf("it gives %s, but a condition must give a bool", t)}
	}
	e := &Expr{what: what, src: src, cond: want == wantBool}
	var walkErr *ExprError
	ast.Find(prog.Node(), func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IdentifierNode:
			if n.Value == "$env" {
				walkErr = &ExprError{What: what, Expr: src,
					Msg: "$env is not supported: name fields directly (user.age), or metadata as key, headers, meta, timestamp, origin"}
				walkErr.Line, walkErr.Column = lineCol(src, n.Location().From)
				return true
			}
		case *ast.CallNode:
			// Unknown names compile because fields are unknown until run time,
			// so an unknown function would otherwise fail on every record.
			if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value != modFunc {
				walkErr = &ExprError{What: what, Expr: src,
					Msg: fmt.Sprintf("unknown function %s", id.Value)}
				walkErr.Line, walkErr.Column = lineCol(src, id.Location().From)
				return true
			}
		}
		return false
	})
	if walkErr != nil {
		return nil, walkErr
	}
	root, err := c.compile(prog.Node())
	if err != nil {
		return nil, &ExprError{What: what, Expr: src, Msg: err.Error()}
	}
	e.root, e.needs, e.fields = root, c.needs, c.fields
	return e, nil
}

// addName adds name to the sorted set names.
func addName(names []string, name string) []string {
	i, found := slices.BinarySearch(names, name)
	if found {
		return names
	}
	return slices.Insert(names, i, name)
}

func exprError(what, src string, err error) *ExprError {
	var fe *file.Error
	if errors.As(err, &fe) {
		e := &ExprError{What: what, Expr: src, Msg: fe.Message}
		if fe.Line > 0 {
			e.Line, e.Column = fe.Line, fe.Column+1
		}
		return e
	}
	return &ExprError{What: what, Expr: src, Msg: err.Error()}
}

// lineCol converts a rune offset in src to a 1-based line and column.
func lineCol(src string, from int) (line, col int) {
	line, col = 1, 1
	i := 0
	for _, r := range src {
		if i == from {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i++
	}
	return line, col
}

// modFunc stands for the % operator while expr checks an expression: its
// checker accepts % on integers only, and a field read from JSON may be 4.0
// (% takes whole numbers as integers; see ops.go). compile turns it back
// into weir's own %.
const modFunc = "$mod"

// modPatcher rewrites a % b as $mod(a, b); see modFunc.
type modPatcher struct{}

func (modPatcher) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok || b.Operator != "%" {
		return
	}
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: modFunc},
		Arguments: []ast.Node{b.Left, b.Right},
	})
}

// String returns the expression's source.
func (e *Expr) String() string { return e.src }
