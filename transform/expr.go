package transform

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/weir-etl/weir/record"
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

var reservedNeeds = map[string]needs{
	nameKey:       needKey,
	nameHeaders:   needHeaders,
	nameMeta:      needMeta,
	nameTimestamp: needTimestamp,
	nameOrigin:    needOrigin,
}

// compileEnv gives the reserved names their types, so that `key + 1` or
// `origin.ofset` fail when the pipeline is loaded rather than on every record.
// Fields are unknown until run time: AllowUndefinedVariables types them as any.
var compileEnv = map[string]any{
	nameKey:       "",
	nameHeaders:   map[string]string{},
	nameMeta:      map[string]string{},
	nameTimestamp: time.Time{},
	nameOrigin:    Origin{},
}

// modFunc replaces the % operator. JSON numbers decode as float64, and expr's
// % accepts integers only, so `id % 2 == 0` would fail on every record; modFunc
// treats whole floats as integers.
const modFunc = "$mod"

// Expr is a compiled expression over one record.
type Expr struct {
	what  string // what the expression is for, to name it in errors
	src   string
	prog  *vm.Program
	needs needs
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
	if strings.TrimSpace(src) == "" {
		return nil, &ExprError{What: what, Expr: src, Msg: "it is empty"}
	}
	opts := []expr.Option{
		expr.Env(compileEnv),
		expr.AllowUndefinedVariables(),
		expr.Function(modFunc, mod),
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
	e := &Expr{what: what, src: src, prog: prog}
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
			if need, ok := reservedNeeds[n.Value]; ok {
				e.needs |= need
			} else {
				// Any other name is a field (or a let variable, which is
				// harmless to treat as one: it only costs a decode).
				e.needs |= needFields
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
	return e, nil
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

// String returns the expression's source.
func (e *Expr) String() string { return e.src }

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

func mod(args ...any) (any, error) {
	a, aInt, err := number(args[0])
	if err != nil {
		return nil, err
	}
	b, bInt, err := number(args[1])
	if err != nil {
		return nil, err
	}
	if aInt && bInt {
		x, y := int(a), int(b)
		if y == 0 {
			return nil, errors.New("integer modulo by zero")
		}
		return x % y, nil
	}
	if b == 0 {
		return nil, errors.New("modulo by zero")
	}
	return math.Mod(a, b), nil
}

// number returns v as a float64 and whether it is a whole number that fits an int.
func number(v any) (float64, bool, error) {
	var f float64
	switch n := v.(type) {
	case int:
		return float64(n), true, nil
	case int64:
		return float64(n), true, nil
	case int32:
		return float64(n), true, nil
	case float64:
		f = n
	case float32:
		f = float64(n)
	default:
		return 0, false, fmt.Errorf("invalid operation: %% on %T", v)
	}
	whole := f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64
	return f, whole, nil
}

// env is the per-evaluation state: a VM and the environment map handed to
// it. Pooled, because a VM and a map per record would dominate the cost of a
// filter.
type env struct {
	vm  vm.VM
	m   map[string]any
	rec *record.Record
}

var envPool = sync.Pool{New: func() any { return &env{m: make(map[string]any, 16)} }}

func getEnv(r *record.Record) *env {
	e := envPool.Get().(*env)
	e.rec = r
	return e
}

func putEnv(e *env) {
	clear(e.m)
	e.rec = nil
	envPool.Put(e)
}

// eval evaluates x against the record of e. fields is the record's decoded
// fields when x needs them (the caller decoded them once for all its
// expressions).
func (e *env) eval(x *Expr, fields map[string]any) (any, error) {
	var m map[string]any
	switch {
	case x.needs&needReserved == 0 && fields != nil:
		// Fields only: the record's own map is the environment. This is the
		// common case, and it copies nothing.
		m = fields
	default:
		// Reserved names shadow fields of the same name. The fields are copied
		// in again on each evaluation because a map transform's earlier
		// assignments may have changed them.
		clear(e.m)
		for k, v := range fields {
			e.m[k] = v
		}
		e.addReserved(x.needs)
		m = e.m
	}
	out, err := e.vm.Run(x.prog, m)
	if err != nil {
		return nil, fmt.Errorf("transform: %s: expression %q: %s", x.what, x.src, firstLine(err))
	}
	return out, nil
}

func (e *env) addReserved(n needs) {
	r := e.rec
	if n&needKey != 0 {
		e.m[nameKey] = string(r.Key)
	}
	if n&needHeaders != 0 {
		h := make(map[string]string, len(r.Headers))
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		e.m[nameHeaders] = h
	}
	if n&needMeta != 0 {
		mm := make(map[string]string, len(r.Meta))
		for _, kv := range r.Meta {
			mm[kv.Key] = kv.Value
		}
		e.m[nameMeta] = mm
	}
	if n&needTimestamp != 0 {
		e.m[nameTimestamp] = r.Time
	}
	if n&needOrigin != 0 {
		e.m[nameOrigin] = Origin{Source: r.Origin.Source, Partition: r.Origin.Partition, Offset: r.Origin.Offset}
	}
}

// evalBool evaluates a condition. A result that is not a bool is a record
// error: a condition that is neither true nor false cannot be decided.
func (e *env) evalBool(x *Expr, fields map[string]any) (bool, error) {
	v, err := e.eval(x, fields)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("transform: %s: expression %q gave %s, not a bool", x.what, x.src, describe(v))
	}
	return b, nil
}

// fieldsFor decodes r's fields if n includes needFields. A record whose value
// is not a JSON object cannot be evaluated by such an expression.
func fieldsFor(r *record.Record, n needs) (map[string]any, error) {
	if n&needFields == 0 {
		return nil, nil
	}
	f, err := r.Fields()
	if err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	return f, nil
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func describe(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T %v", v, v)
}
