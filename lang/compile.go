package lang

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/weir-etl/weir/internal/suggest"
	"github.com/weir-etl/weir/record"
)

// Needs says which parts of a record a program reads, so that evaluating
// it builds only those: a filter on @key alone never decodes the value.
type Needs uint8

// The parts of a record.
const (
	NeedFields Needs = 1 << iota // the value's fields (or $)
	NeedKey
	NeedHeaders
	NeedMeta
	NeedTimestamp
	NeedOrigin

	NeedMetadata = NeedKey | NeedHeaders | NeedMeta | NeedTimestamp | NeedOrigin
)

// MetadataNames are the names under @, in the order the documentation
// presents them. Before @ they were bare names, which shadowed the fields of
// the same name; a bare one is now the field, with a warning (see
// docs/expressions.md, Migration).
var MetadataNames = []string{"key", "headers", "meta", "timestamp", "origin"}

// Options are how an expression is compiled.
type Options struct {
	// Want is the type the result must have (TBool for a condition); zero
	// means any. A result whose type is known at load and is not Want is a
	// compile error; one known only per record is a record error.
	Want Type
	// Fields, if set, numbers the fields the program reads together with
	// other programs' (the set expressions of one map).
	Fields *Fields
	// NoDrop refuses drop(), for programs that cannot drop a record (a
	// condition: a filter drops with false).
	NoDrop bool
}

// Program is a compiled expression.
type Program struct {
	src      string
	root     node
	typ      Type
	needs    Needs
	fields   []string // top-level fields read, sorted
	warnings []*Error
	konst    bool
	val      record.Value
	cond     condNode // the root's, see compiled.cond
}

// String returns the expression's source.
func (p *Program) String() string { return p.src }

// Fields returns the top-level fields the program reads, sorted: the only
// fields a condition looks up.
func (p *Program) Fields() []string { return p.fields }

// Needs returns the parts of a record the program reads.
func (p *Program) Needs() Needs { return p.needs }

// Type returns what is known of the result's type at load.
func (p *Program) Type() Type { return p.typ }

// Warnings returns what compiles but should be written otherwise: each use
// of a bare name that was metadata before @.
func (p *Program) Warnings() []*Error { return p.warnings }

// Constant returns the program's value when it reads nothing of the record
// and calls nothing impure: it was computed at load.
func (p *Program) Constant() (record.Value, bool) { return p.val, p.konst }

// Compile compiles src. Its error is an *Error, at the place of the problem.
func Compile(src string, o Options) (*Program, error) {
	p, err := compile(src, o, false)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func compile(src string, o Options, generic bool) (*Program, *Error) {
	ast, err := parse(src)
	if err != nil {
		return nil, err
	}
	c := &compiler{src: src, slots: o.Fields, generic: generic, noDrop: o.NoDrop}
	root, err := c.compile(ast)
	if err != nil {
		return nil, err
	}
	if o.Want != 0 && root.typ&o.Want == 0 {
		if o.Want == TBool {
			return nil, errAt(src, 0, fmt.Sprintf("it gives %s, but a condition must give a bool", root.typ))
		}
		return nil, errAt(src, 0, fmt.Sprintf("it gives %s, but %s is needed here", root.typ, o.Want))
	}
	p := &Program{src: src, root: root.eval, typ: root.typ, needs: c.needs, fields: c.fields, warnings: c.warnings, cond: root.cond}
	if root.konst {
		p.konst, p.val = true, root.val
	}
	return p, nil
}

// compiled is a compiled node with what is known of it at load.
type compiled struct {
	eval node
	// cond, when set, decides a bool without building a Value: ok false
	// means eval decides (set by the fast paths, fast.go; only on the root
	// is it used, by Env.Condition).
	cond  condNode
	typ   Type
	konst bool         // its value is val, computed at load
	val   record.Value // with konst
	pure  bool         // it reads the record and constants only: evaluating it twice gives the same
}

func constant(v record.Value) compiled {
	return compiled{eval: func(*frame) (record.Value, error) { return v, nil }, typ: typeOf(v), konst: true, val: v, pure: true}
}

// let is a let variable in scope. Its slot is its own: a declaration's
// scope can end before another's begins ((let a = 1; a) + (let b = 2; b)).
type let struct {
	name string
	slot int
	typ  Type
}

// compiler turns a syntax tree into nodes.
type compiler struct {
	src      string
	lets     []let
	nlets    int
	depth    int // predicate nesting
	tries    int // try() nesting: an argument that fails at load is left to run
	fields   []string
	needs    Needs
	warnings []*Error
	// generic turns the fast paths off (see fast.go), for the tests that
	// check them against the generic nodes.
	generic bool
	// noFold leaves constant sub-expressions to run, for the benchmarks
	// of the functions (their examples are constants).
	noFold bool
	noDrop bool
	slots  *Fields
}

func (c *compiler) errAt(x expr, format string, a ...any) *Error {
	return errAt(c.src, x.at(), fmt.Sprintf(format, a...))
}

// compile compiles x, folding it to a constant when it can be.
func (c *compiler) compile(x expr) (compiled, *Error) {
	var n compiled
	var err *Error
	if !c.generic {
		n, err = c.specialise(x)
		if err != nil {
			return n, err
		}
	}
	if n.eval == nil {
		if n, err = c.compileNode(x); err != nil {
			return n, err
		}
	}
	return c.fold(x, n)
}

// fold evaluates a pure node whose value cannot depend on the record at
// load, once. A failure is a compile error (1 / 0, int("x")), except inside
// try(), whose fallback is then what runs.
func (c *compiler) fold(x expr, n compiled) (compiled, *Error) {
	if n.konst || !n.pure || c.noFold || !c.constantTree(x) {
		return n, nil
	}
	e := NewEnv()
	v, err := n.eval(&e.f)
	if err != nil {
		if err == ErrDrop || c.tries > 0 {
			n.pure = false
			return n, nil
		}
		var ee *EvalError
		if errors.As(err, &ee) {
			return n, c.errAt(x, "%s", ee.Msg)
		}
		return n, c.errAt(x, "%v", err)
	}
	// A constant object or array is written into every record: encode it
	// once. Strings built in the scratch buffer of e belong to it alone.
	switch v.Kind() {
	case record.Object, record.Array:
		if _, raw := v.Raw(); !raw {
			if p, err := record.ParseValue(v.AppendJSON(nil)); err == nil {
				v = p
			}
		}
	case record.String:
		v = record.StringValue(strings.Clone(v.Text()))
	}
	k := constant(v)
	return k, nil
}

// constantTree reports whether x reads nothing of the record, no variable
// and nothing impure.
func (c *compiler) constantTree(x expr) bool {
	ok := true
	walk(x, func(x expr) bool {
		switch x := x.(type) {
		case *identExpr, *metaExpr, *rootExpr, *elemExpr:
			ok = false
		case *callExpr:
			if f := lookupFunc(x.name); f == nil || f.Impure {
				ok = false
			}
		case *letExpr:
			ok = false // its body reads the variable
		}
		return ok
	})
	return ok
}

// walk calls fn for x and its sub-expressions, depth first, while fn
// returns true.
func walk(x expr, fn func(expr) bool) {
	if x == nil || !fn(x) {
		return
	}
	switch x := x.(type) {
	case *memberExpr:
		walk(x.x, fn)
	case *indexExpr:
		walk(x.x, fn)
		walk(x.index, fn)
	case *sliceExpr:
		walk(x.x, fn)
		walk(x.lo, fn)
		walk(x.hi, fn)
	case *unaryExpr:
		walk(x.x, fn)
	case *binaryExpr:
		walk(x.l, fn)
		walk(x.r, fn)
	case *condExpr:
		walk(x.cond, fn)
		walk(x.a, fn)
		walk(x.b, fn)
	case *callExpr:
		for _, a := range x.args {
			walk(a, fn)
		}
	case *arrayExpr:
		for _, a := range x.elems {
			walk(a, fn)
		}
	case *objectExpr:
		for i := range x.keys {
			walk(x.keys[i], fn)
			walk(x.vals[i], fn)
		}
	case *letExpr:
		walk(x.val, fn)
		walk(x.body, fn)
	}
}

// compileNode compiles x to its generic node (its children may have fast
// paths).
func (c *compiler) compileNode(x expr) (compiled, *Error) {
	switch x := x.(type) {
	case *litExpr:
		return constant(x.val), nil
	case *identExpr:
		return c.identifier(x), nil
	case *metaExpr:
		return c.meta(x, "")
	case *rootExpr:
		c.needs |= NeedFields
		return compiled{eval: func(f *frame) (record.Value, error) { return f.root(), nil }, typ: TObject | TNull, pure: true}, nil
	case *elemExpr:
		return c.elem(x)
	case *unaryExpr:
		return c.unary(x)
	case *binaryExpr:
		return c.binary(x)
	case *condExpr:
		return c.cond(x)
	case *memberExpr:
		return c.member(x)
	case *indexExpr:
		return c.index(x)
	case *sliceExpr:
		return c.slice(x)
	case *callExpr:
		return c.call(x)
	case *arrayExpr:
		return c.array(x)
	case *objectExpr:
		return c.object(x)
	case *letExpr:
		return c.let(x)
	}
	return compiled{}, c.errAt(x, "this is not supported")
}

func (c *compiler) identifier(x *identExpr) compiled {
	for i := len(c.lets) - 1; i >= 0; i-- {
		if l := c.lets[i]; l.name == x.name {
			slot := l.slot
			return compiled{eval: func(f *frame) (record.Value, error) { return f.lets[slot], nil }, typ: l.typ, pure: true}
		}
	}
	if slices.Contains(MetadataNames, x.name) {
		w := c.errAt(x, "%s is the record's field %q, no longer its metadata: write @%s for the metadata, or $.%s to keep the field without this warning",
			x.name, x.name, x.name, x.name)
		w.Warning = true
		c.warnings = append(c.warnings, w)
	}
	return c.field(x.name)
}

func (c *compiler) field(name string) compiled {
	c.needs |= NeedFields
	c.fields = addName(c.fields, name)
	k := c.slots.of(name)
	return compiled{eval: func(f *frame) (record.Value, error) { return f.fieldIn(k, name), nil }, typ: TAny, pure: true}
}

// addName adds name to the sorted set names.
func addName(names []string, name string) []string {
	i, found := slices.BinarySearch(names, name)
	if found {
		return names
	}
	return slices.Insert(names, i, name)
}

// meta compiles @name, or @name.prop when prop is not "" (a constant member
// read costs no object).
func (c *compiler) meta(x *metaExpr, prop string) (compiled, *Error) {
	str := func(fn func(r *record.Record) record.Value) compiled {
		return compiled{eval: func(f *frame) (record.Value, error) {
			if f.r == nil {
				return record.Value{}, nil
			}
			return fn(f.r), nil
		}, typ: TString, pure: true}
	}
	switch x.name {
	case "key":
		c.needs |= NeedKey
		if prop != "" {
			return compiled{}, c.errAt(x, "@key is a string, it has no .%s", prop)
		}
		return str(func(r *record.Record) record.Value { return record.StringValue(stringOf(r.Key)) }), nil
	case "headers":
		c.needs |= NeedHeaders
		if prop != "" {
			return str(func(r *record.Record) record.Value { return header(r, prop) }), nil
		}
		n := str(headersObject)
		n.typ = TObject
		return n, nil
	case "meta":
		c.needs |= NeedMeta
		if prop != "" {
			return str(func(r *record.Record) record.Value { return metaValue(r, prop) }), nil
		}
		n := str(metaObject)
		n.typ = TObject
		return n, nil
	case "timestamp":
		c.needs |= NeedTimestamp
		if prop != "" {
			return compiled{}, c.errAt(x, "@timestamp is a time, it has no .%s: use the time functions, as in format_time(@timestamp, \"%%Y\")", prop)
		}
		return compiled{eval: func(f *frame) (record.Value, error) { return f.env.timestamp(f.r), nil }, typ: TTime, pure: true}, nil
	case "origin":
		c.needs |= NeedOrigin
		switch prop {
		case "":
			n := str(originObject)
			n.typ = TObject
			return n, nil
		case "source":
			return str(func(r *record.Record) record.Value { return record.StringValue(r.Origin.Source) }), nil
		case "partition":
			return str(func(r *record.Record) record.Value { return record.StringValue(r.Origin.Partition) }), nil
		case "offset":
			n := str(func(r *record.Record) record.Value { return record.IntValue(r.Origin.Offset) })
			n.typ = TInt
			return n, nil
		}
		return compiled{}, c.errAt(x, "@origin has no %s: use @origin.source, @origin.partition or @origin.offset", prop)
	}
	msg := fmt.Sprintf("unknown metadata @%s: the metadata are @key, @headers, @meta, @timestamp and @origin", x.name)
	if s := suggest.Closest(x.name, MetadataNames); s != "" {
		msg = fmt.Sprintf("unknown metadata @%s (did you mean @%s?): the metadata are @key, @headers, @meta, @timestamp and @origin", x.name, s)
	}
	return compiled{}, errAt(c.src, x.at(), msg)
}

func (c *compiler) elem(x *elemExpr) (compiled, *Error) {
	if c.depth == 0 {
		return compiled{}, c.errAt(x, "#%s is only valid inside a predicate, as in filter(items, #.price > 0)", x.name)
	}
	var eval node
	typ := TAny
	switch x.name {
	case "":
		eval = func(f *frame) (record.Value, error) { return f.loops[len(f.loops)-1].item, nil }
	case "index":
		typ = TInt
		eval = func(f *frame) (record.Value, error) {
			return record.IntValue(int64(f.loops[len(f.loops)-1].index)), nil
		}
	case "key":
		typ = TString
		eval = func(f *frame) (record.Value, error) { return record.StringValue(f.loops[len(f.loops)-1].key), nil }
	case "acc":
		eval = func(f *frame) (record.Value, error) { return f.loops[len(f.loops)-1].acc, nil }
	default:
		return compiled{}, c.errAt(x, "unknown #%s: inside a predicate, # is the element, #index its index, #key its member name, #acc reduce's accumulator", x.name)
	}
	return compiled{eval: eval, typ: typ, pure: true}, nil
}

func (c *compiler) unary(x *unaryExpr) (compiled, *Error) {
	a, err := c.compile(x.x)
	if err != nil {
		return a, err
	}
	in := a.eval
	switch x.op {
	case "-":
		if a.typ&(TNumber|TDuration) == 0 {
			return a, c.errAt(x, "-%s: %s is not a number", "x", a.typ)
		}
		return compiled{eval: func(f *frame) (record.Value, error) {
			v, err := in(f)
			if err != nil {
				return v, err
			}
			return opNeg(v)
		}, typ: a.typ & (TNumber | TDuration), pure: a.pure}, nil
	case "+":
		if a.typ&TNumber == 0 {
			return a, c.errAt(x, "+x: %s is not a number", a.typ)
		}
		return compiled{eval: func(f *frame) (record.Value, error) {
			v, err := in(f)
			if err == nil && !isNumber(v) {
				return record.Value{}, errorf("invalid operation: +%s (%s is not a number)", show(v), typeName(v))
			}
			return v, err
		}, typ: a.typ & TNumber, pure: a.pure}, nil
	}
	if a.typ&TBool == 0 {
		return a, c.errAt(x, "!x: x is %s, not a bool", a.typ)
	}
	return compiled{eval: func(f *frame) (record.Value, error) {
		v, err := in(f)
		if err != nil {
			return v, err
		}
		if v.Kind() != record.Bool {
			return record.Value{}, errorf("invalid operation: !%s (%s is not a bool)", show(v), typeName(v))
		}
		return record.BoolValue(!v.Bool()), nil
	}, typ: TBool, pure: a.pure}, nil
}

func (c *compiler) cond(x *condExpr) (compiled, *Error) {
	cond, err := c.compile(x.cond)
	if err != nil {
		return cond, err
	}
	if cond.typ&TBool == 0 {
		return cond, c.errAt(x.cond, "the condition gives %s, not a bool", cond.typ)
	}
	a, err := c.compile(x.a)
	if err != nil {
		return a, err
	}
	b, err := c.compile(x.b)
	if err != nil {
		return b, err
	}
	if cond.konst && cond.val.Kind() == record.Bool { // folded: one branch
		if cond.val.Bool() {
			return a, nil
		}
		return b, nil
	}
	ce, ae, be := cond.eval, a.eval, b.eval
	return compiled{eval: func(f *frame) (record.Value, error) {
		v, err := ce(f)
		if err != nil {
			return v, err
		}
		if v.Kind() != record.Bool {
			return record.Value{}, errorf("the condition of ?: gave %s, not a bool", show(v))
		}
		if v.Bool() {
			return ae(f)
		}
		return be(f)
	}, typ: a.typ | b.typ, pure: cond.pure && a.pure && b.pure}, nil
}

func (c *compiler) let(x *letExpr) (compiled, *Error) {
	val, err := c.compile(x.val)
	if err != nil {
		return val, err
	}
	slot := c.nlets
	c.nlets++
	c.lets = append(c.lets, let{x.name, slot, val.typ})
	body, err := c.compile(x.body)
	c.lets = c.lets[:len(c.lets)-1]
	if err != nil {
		return body, err
	}
	ve, be := val.eval, body.eval
	return compiled{eval: func(f *frame) (record.Value, error) {
		v, err := ve(f)
		if err != nil {
			return v, err
		}
		for len(f.lets) <= slot {
			f.lets = append(f.lets, record.Value{})
		}
		f.lets[slot] = v
		return be(f)
	}, typ: body.typ, pure: val.pure && body.pure}, nil
}

func (c *compiler) array(x *arrayExpr) (compiled, *Error) {
	elems := make([]node, len(x.elems))
	pure := true
	for i, e := range x.elems {
		n, err := c.compile(e)
		if err != nil {
			return n, err
		}
		elems[i], pure = n.eval, pure && n.pure
	}
	return compiled{eval: func(f *frame) (record.Value, error) {
		out := make([]record.Value, len(elems))
		for i, x := range elems {
			v, err := x(f)
			if err != nil {
				return v, err
			}
			out[i] = own(v)
		}
		return record.ArrayValue(out), nil
	}, typ: TArray, pure: pure}, nil
}

func (c *compiler) object(x *objectExpr) (compiled, *Error) {
	type pair struct{ k, v node }
	pairs := make([]pair, len(x.keys))
	pure := true
	for i := range x.keys {
		k, err := c.compile(x.keys[i])
		if err != nil {
			return k, err
		}
		if k.typ&TString == 0 {
			return k, c.errAt(x.keys[i], "a member name must be a string, not %s", k.typ)
		}
		v, err := c.compile(x.vals[i])
		if err != nil {
			return v, err
		}
		pairs[i], pure = pair{k.eval, v.eval}, pure && k.pure && v.pure
	}
	return compiled{eval: func(f *frame) (record.Value, error) {
		o := record.NewObj()
		for _, p := range pairs {
			k, err := p.k(f)
			if err != nil {
				return k, err
			}
			if k.Kind() != record.String {
				return record.Value{}, errorf("a member name must be a string, not %s", show(k))
			}
			v, err := p.v(f)
			if err != nil {
				return v, err
			}
			o.Set(strings.Clone(k.Text()), own(v))
		}
		return record.ObjectValue(o), nil
	}, typ: TObject, pure: pure}, nil
}

// own returns v safe to store in a second place: an object built or
// changed by the expression is copied, so that changing one place does not
// change the other, and a string built in the scratch buffer is copied out
// of it.
func own(v record.Value) record.Value {
	switch v.Kind() {
	case record.Object:
		if _, ok := v.Raw(); !ok {
			return record.ObjectValue(v.Obj())
		}
	}
	return v
}

// Own is own for the transforms: v, stored in a record, must not share an
// object the expression may change.
func Own(v record.Value) record.Value { return own(v) }
