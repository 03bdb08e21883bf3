package lang

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"

	"github.com/weir-etl/weir/internal/suggest"
	"github.com/weir-etl/weir/record"
)

// Func is a library function: the one description from which `weir help
// functions`, `weir help NAME`, the reference in docs/expressions.md and
// the schema's completions are made, and its implementation. The
// implementation is called directly, with the arguments as values: no
// reflection.
type Func struct {
	Name     string
	Category string
	Params   []Param
	Result   Type
	Doc      string
	// Example is a call and Output what it gives, as an expression would
	// write it; a test evaluates every example and compares.
	Example, Output string
	// Aliases are other names of the function (expr's camelCase builtins).
	Aliases []string
	// Impure functions (now, uuid_v4) give another value each call: they
	// are never computed at load.
	Impure bool

	// One implementation: fn1 to fn3 for that many arguments, fnN for any
	// number, or build for what needs the call itself (constant arguments
	// prepared at load, predicates, try).
	fn1   func(a record.Value) (record.Value, error)
	fn2   func(a, b record.Value) (record.Value, error)
	fn3   func(a, b, c record.Value) (record.Value, error)
	fnN   func(args []record.Value) (record.Value, error)
	build func(c *compiler, x *callExpr, args []compiled) (compiled, *Error)
}

// Param is a parameter of a Func.
type Param struct {
	Name     string
	Type     Type
	Optional bool // may be left out (only at the end)
	Variadic bool // the last parameter, repeated
	// Lambda is an expression evaluated per element (# is the element).
	Lambda bool
	// Const must be a constant (a pattern, a layout), prepared once at
	// load.
	Const bool
}

// Signature writes the function as the reference shows it:
// "pad_left(s: string, width: int, pad?: string) -> string".
func (f *Func) Signature() string {
	var ps []string
	for _, p := range f.Params {
		s := p.Name
		if p.Optional {
			s += "?"
		}
		t := p.Type.String()
		if p.Lambda {
			t = "expression of #"
		}
		s += ": " + t
		if p.Variadic {
			s = "..." + s
		}
		ps = append(ps, s)
	}
	return fmt.Sprintf("%s(%s) -> %s", f.Name, strings.Join(ps, ", "), f.Result)
}

// Categories in the order the reference presents them.
var Categories = []string{"strings", "regex", "hashing", "encoding", "ids", "time", "parsing", "numbers", "collections", "control", "conversions"}

var (
	funcs   []*Func
	byName  = map[string]*Func{}
	aliases = map[string]string{}
)

func register(fs ...*Func) {
	for _, f := range fs {
		if _, dup := byName[f.Name]; dup {
			panic("lang: function " + f.Name + " defined twice")
		}
		if !slices.Contains(Categories, f.Category) {
			panic("lang: function " + f.Name + " has no known category")
		}
		funcs = append(funcs, f)
		byName[f.Name] = f
		for _, a := range f.Aliases {
			byName[a] = f
			aliases[a] = f.Name
		}
	}
}

// Functions returns the library, sorted by category then name.
func Functions() []*Func {
	out := slices.Clone(funcs)
	sort.SliceStable(out, func(i, j int) bool {
		ci, cj := slices.Index(Categories, out[i].Category), slices.Index(Categories, out[j].Category)
		if ci != cj {
			return ci < cj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// LookupFunc returns the function called name (or an alias of it).
func LookupFunc(name string) (*Func, bool) {
	f, ok := byName[name]
	return f, ok
}

func lookupFunc(name string) *Func { return byName[name] }

// arity returns the least and most arguments f takes (-1: no most).
func (f *Func) arity() (least, most int) {
	for _, p := range f.Params {
		if p.Variadic {
			return least, -1
		}
		if !p.Optional {
			least++
		}
	}
	return least, len(f.Params)
}

// param returns the parameter argument i is for.
func (f *Func) param(i int) Param {
	if i < len(f.Params) {
		return f.Params[i]
	}
	return f.Params[len(f.Params)-1] // variadic
}

func (c *compiler) call(x *callExpr) (compiled, *Error) {
	f := lookupFunc(x.name)
	if f == nil {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		msg := fmt.Sprintf("unknown function %s", x.name)
		if s := suggest.Closest(x.name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		if slices.Contains(MetadataNames, x.name) {
			msg += fmt.Sprintf("; the metadata is @%s", x.name)
		}
		return compiled{}, errAt(c.src, x.at(), msg+`: "weir help functions" lists them`)
	}
	least, most := f.arity()
	if len(x.args) < least || most >= 0 && len(x.args) > most {
		want := fmt.Sprintf("%d", least)
		switch {
		case most < 0:
			want = fmt.Sprintf("at least %d", least)
		case most != least:
			want = fmt.Sprintf("%d to %d", least, most)
		}
		return compiled{}, c.errAt(x, "%s takes %s arguments, not %d: %s", x.name, want, len(x.args), f.Signature())
	}
	if f.Name == "drop" && c.noDrop {
		return compiled{}, c.errAt(x, "drop() is for a map or flat_map; a condition drops a record by being false")
	}
	args := make([]compiled, len(x.args))
	for i, a := range x.args {
		p := f.param(i)
		if p.Lambda {
			continue // compiled by the function, in its loop
		}
		if f.Name == "try" {
			c.tries++
		}
		n, err := c.compile(a)
		if f.Name == "try" {
			c.tries--
		}
		if err != nil {
			return n, err
		}
		if n.typ&p.Type == 0 {
			want := p.Type
			if want != TNull {
				want &^= TNull
			}
			return n, c.errAt(a, "%s: %s must be %s, not %s", f.Name, p.Name, want, n.typ)
		}
		if p.Const && !n.konst {
			return n, c.errAt(a, "%s: %s must be a constant, so that it is prepared once at load", f.Name, p.Name)
		}
		args[i] = n
	}
	if f.build != nil {
		return f.build(c, x, args)
	}
	return c.direct(f, args), nil
}

// direct is the node of a call of f's implementation with args.
func (c *compiler) direct(f *Func, args []compiled) compiled {
	pure := !f.Impure
	for _, a := range args {
		pure = pure && a.pure
	}
	out := compiled{typ: f.Result, pure: pure}
	switch {
	case len(args) == 0 && f.fnN != nil:
		fn := f.fnN
		out.eval = func(*frame) (record.Value, error) { return fn(nil) }
	case len(args) == 1 && f.fn1 != nil:
		fn, a := f.fn1, args[0].eval
		out.eval = func(fr *frame) (record.Value, error) {
			v, err := a(fr)
			if err != nil {
				return v, err
			}
			return fn(v)
		}
	case len(args) == 2 && f.fn2 != nil:
		fn, a, b := f.fn2, args[0].eval, args[1].eval
		if args[1].konst { // a constant second argument: a call less
			k := args[1].val
			out.eval = func(fr *frame) (record.Value, error) {
				v, err := a(fr)
				if err != nil {
					return v, err
				}
				return fn(v, k)
			}
			break
		}
		out.eval = func(fr *frame) (record.Value, error) {
			v, err := a(fr)
			if err != nil {
				return v, err
			}
			w, err := b(fr)
			if err != nil {
				return w, err
			}
			return fn(v, w)
		}
	case len(args) == 3 && f.fn3 != nil:
		fn, a, b, d := f.fn3, args[0].eval, args[1].eval, args[2].eval
		out.eval = func(fr *frame) (record.Value, error) {
			v, err := a(fr)
			if err != nil {
				return v, err
			}
			w, err := b(fr)
			if err != nil {
				return w, err
			}
			y, err := d(fr)
			if err != nil {
				return y, err
			}
			return fn(v, w, y)
		}
	default:
		fn := f.fnN
		if fn == nil {
			fn = f.adapt()
		}
		evals := make([]node, len(args))
		for i, a := range args {
			evals[i] = a.eval
		}
		out.eval = func(fr *frame) (record.Value, error) {
			// The arguments go on the frame's stack: no allocation.
			base := len(fr.args)
			for _, a := range evals {
				v, err := a(fr)
				if err != nil {
					fr.args = fr.args[:base]
					return v, err
				}
				fr.args = append(fr.args, v)
			}
			v, err := fn(fr.args[base:])
			fr.args = fr.args[:base]
			return v, err
		}
	}
	return out
}

// adapt calls the fixed-arity implementation of f with a slice, for a call
// that leaves out optional arguments.
func (f *Func) adapt() func(args []record.Value) (record.Value, error) {
	return func(args []record.Value) (record.Value, error) {
		var a [3]record.Value
		copy(a[:], args)
		switch {
		case f.fn3 != nil:
			return f.fn3(a[0], a[1], a[2])
		case f.fn2 != nil:
			return f.fn2(a[0], a[1])
		case f.fn1 != nil:
			return f.fn1(a[0])
		}
		return record.Value{}, fnError(f.Name, "cannot be called with %d arguments", len(args))
	}
}

func regexpMessage(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %q", se.Code, se.Expr)
	}
	return err.Error()
}
