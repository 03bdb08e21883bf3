package transform

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/weir-etl/weir/record"
)

// Expressions are parsed and type-checked by expr (so its syntax and its
// compile-time errors are the language's), and evaluated by weir: the
// checked syntax tree is turned into a tree of closures over record.Value.
// Evaluating over Values rather than expr's Go values is what keeps numbers
// exact (a Value is a literal until it is computed with), lets every
// operator check its result (see ops.go), and reads fields without decoding
// or allocating (a Value points into the record's bytes).

// node evaluates one syntax node.
type node func(f *frame) (record.Value, error)

// frame is the state of one evaluation.
type frame struct {
	r *record.Record
	// Fields come from obj (a map, whose earlier steps changed it) or, for a
	// condition, from names/vals (looked up in the record's bytes).
	obj   *record.Obj
	names []string
	vals  []record.Value
	found []bool
	lets  []record.Value
	loops []loop
	e     *env
	// slots hold the fields a map's expressions read, each looked up once
	// per record (see fieldSlots); empty for a condition's frame.
	slots []fieldSlot
}

// fieldSlots numbers the top-level fields that the expressions of one map
// read, across all of them: each is then looked up once per record, and an
// integer parsed once, however many expressions read it. A map forgets a
// slot when it sets the field (see Map.Process).
type fieldSlots struct{ names []string }

// of returns the slot of name, adding it; -1 for a nil s.
func (s *fieldSlots) of(name string) int {
	if s == nil {
		return -1
	}
	if i := slices.Index(s.names, name); i >= 0 {
		return i
	}
	s.names = append(s.names, name)
	return len(s.names) - 1
}

// fieldSlot is a field as read in this record, once state is not slotEmpty.
type fieldSlot struct {
	v     record.Value
	i     int64 // v's integer form, with slotInt
	state uint8
}

const (
	slotEmpty  = iota // not read yet
	slotRead          // v is the field
	slotInt           // v is the field, and i its integer form
	slotNotInt        // v is the field, and it has no integer form
)

// fieldIn returns the field name, whose slot is k (-1 for none).
func (f *frame) fieldIn(k int, name string) record.Value {
	if uint(k) < uint(len(f.slots)) {
		s := &f.slots[k]
		if s.state == slotEmpty {
			s.v, s.state = f.field(name), slotRead
		}
		return s.v
	}
	return f.field(name)
}

// intFieldIn returns the integer form of the field name, whose slot is k
// (-1 for none), as record.Value.IntForm gives it.
func (f *frame) intFieldIn(k int, name string) (int64, bool) {
	if uint(k) < uint(len(f.slots)) {
		s := &f.slots[k]
		switch s.state {
		case slotEmpty:
			s.v = f.field(name)
			fallthrough
		case slotRead:
			var ok bool
			if s.i, ok = s.v.IntForm(); ok {
				s.state = slotInt
			} else {
				s.state = slotNotInt
			}
		}
		return s.i, s.state == slotInt
	}
	return f.field(name).IntForm()
}

// loop is the state of a predicate's iteration (#, #index, #acc).
type loop struct {
	item  record.Value
	index int
	acc   record.Value
}

// field returns the field name: null if the record has none.
func (f *frame) field(name string) record.Value {
	if f.obj != nil {
		v, _ := f.obj.Get(name)
		return v
	}
	for k, n := range f.names {
		if n == name {
			return f.vals[k]
		}
	}
	return record.Value{}
}

// errChain ends an optional chain (user?.name) at a null: the whole chain
// is null.
var errChain = errors.New("optional chain ended")

// let is a let variable in scope. Its slot is its own: a declaration's
// scope can end before another's begins ((let a = 1; a) + (let b = 2; b)),
// so the position in the scope does not name a slot.
type let struct {
	name string
	slot int
}

// compiler turns a checked syntax tree into nodes.
type compiler struct {
	lets   []let    // let variables in scope, innermost last
	nlets  int      // slots used
	depth  int      // predicate nesting
	fields []string // fields read, sorted
	needs  needs
	// generic turns the fast paths off (see fast.go), for the tests that
	// check them against the generic nodes.
	generic bool
	// slots numbers the fields read, shared by the expressions of one map;
	// nil elsewhere.
	slots *fieldSlots
}

func constant(v record.Value) node {
	return func(*frame) (record.Value, error) { return v, nil }
}

func (c *compiler) compile(n ast.Node) (node, error) {
	if !c.generic {
		if x, err := c.specialise(n); x != nil || err != nil {
			return x, err
		}
	}
	return c.compileNode(n)
}

// compileNode compiles n to its generic node (its children may have fast
// paths).
func (c *compiler) compileNode(n ast.Node) (node, error) {
	switch n := n.(type) {
	case *ast.NilNode:
		return constant(record.Value{}), nil
	case *ast.IntegerNode:
		return constant(record.IntValue(int64(n.Value))), nil
	case *ast.FloatNode:
		v, err := record.FromGo(n.Value)
		if err != nil {
			return nil, err
		}
		return constant(v), nil
	case *ast.BoolNode:
		return constant(record.BoolValue(n.Value)), nil
	case *ast.StringNode:
		return constant(record.StringValue(n.Value)), nil
	case *ast.ConstantNode:
		v, err := record.FromGo(n.Value)
		if err != nil {
			return nil, err
		}
		return constant(v), nil
	case *ast.IdentifierNode:
		return c.identifier(n)
	case *ast.UnaryNode:
		return c.unary(n)
	case *ast.BinaryNode:
		return c.binary(n)
	case *ast.ChainNode:
		inner, err := c.compile(n.Node)
		if err != nil {
			return nil, err
		}
		return func(f *frame) (record.Value, error) {
			v, err := inner(f)
			if err == errChain {
				return record.Value{}, nil
			}
			return v, err
		}, nil
	case *ast.MemberNode:
		return c.member(n)
	case *ast.SliceNode:
		return c.slice(n)
	case *ast.CallNode:
		return c.call(n)
	case *ast.BuiltinNode:
		return c.builtin(n)
	case *ast.PointerNode:
		if c.depth == 0 {
			return nil, fmt.Errorf("# is only valid inside a predicate")
		}
		switch n.Name {
		case "":
			return func(f *frame) (record.Value, error) { return f.loops[len(f.loops)-1].item, nil }, nil
		case "index":
			return func(f *frame) (record.Value, error) {
				return record.IntValue(int64(f.loops[len(f.loops)-1].index)), nil
			}, nil
		case "acc":
			return func(f *frame) (record.Value, error) { return f.loops[len(f.loops)-1].acc, nil }, nil
		}
		return nil, fmt.Errorf("unknown pointer #%s", n.Name)
	case *ast.ConditionalNode:
		cond, err := c.compile(n.Cond)
		if err != nil {
			return nil, err
		}
		a, err := c.compile(n.Exp1)
		if err != nil {
			return nil, err
		}
		b, err := c.compile(n.Exp2)
		if err != nil {
			return nil, err
		}
		return func(f *frame) (record.Value, error) {
			v, err := cond(f)
			if err != nil {
				return v, err
			}
			if v.Kind() != record.Bool {
				return record.Value{}, errorf("the condition of ?: gave %s, not a bool", show(v))
			}
			if v.Bool() {
				return a(f)
			}
			return b(f)
		}, nil
	case *ast.VariableDeclaratorNode:
		val, err := c.compile(n.Value)
		if err != nil {
			return nil, err
		}
		slot := c.nlets
		c.nlets++
		c.lets = append(c.lets, let{n.Name, slot})
		body, err := c.compile(n.Expr)
		c.lets = c.lets[:len(c.lets)-1]
		if err != nil {
			return nil, err
		}
		return func(f *frame) (record.Value, error) {
			v, err := val(f)
			if err != nil {
				return v, err
			}
			for len(f.lets) <= slot {
				f.lets = append(f.lets, record.Value{})
			}
			f.lets[slot] = v
			return body(f)
		}, nil
	case *ast.SequenceNode:
		nodes, err := c.compileAll(n.Nodes)
		if err != nil {
			return nil, err
		}
		return func(f *frame) (record.Value, error) {
			var v record.Value
			var err error
			for _, x := range nodes {
				if v, err = x(f); err != nil {
					return v, err
				}
			}
			return v, nil
		}, nil
	case *ast.ArrayNode:
		elems, err := c.compileAll(n.Nodes)
		if err != nil {
			return nil, err
		}
		if consts, ok := constants(n.Nodes); ok {
			// Written into every record: encoded once.
			return constant(record.EncodedArray(consts)), nil
		}
		return func(f *frame) (record.Value, error) {
			out := make([]record.Value, len(elems))
			for i, x := range elems {
				v, err := x(f)
				if err != nil {
					return v, err
				}
				out[i] = v
			}
			return record.ArrayValue(out), nil
		}, nil
	case *ast.MapNode:
		type pair struct{ k, v node }
		pairs := make([]pair, len(n.Pairs))
		for i, p := range n.Pairs {
			p := p.(*ast.PairNode)
			k, err := c.compile(p.Key)
			if err != nil {
				return nil, err
			}
			v, err := c.compile(p.Value)
			if err != nil {
				return nil, err
			}
			pairs[i] = pair{k, v}
		}
		return func(f *frame) (record.Value, error) {
			o := record.NewObj()
			for _, p := range pairs {
				k, err := p.k(f)
				if err != nil {
					return k, err
				}
				if k.Kind() != record.String {
					return record.Value{}, errorf("a map key must be a string, not %s", show(k))
				}
				v, err := p.v(f)
				if err != nil {
					return v, err
				}
				o.Set(k.Text(), own(v))
			}
			return record.ObjectValue(o), nil
		}, nil
	}
	return nil, fmt.Errorf("%T is not supported", n)
}

// constants returns the values of nodes if they are all literals.
func constants(nodes []ast.Node) ([]record.Value, bool) {
	out := make([]record.Value, len(nodes))
	for i, n := range nodes {
		switch n := n.(type) {
		case *ast.IntegerNode:
			out[i] = record.IntValue(int64(n.Value))
		case *ast.StringNode:
			out[i] = record.StringValue(n.Value)
		case *ast.BoolNode:
			out[i] = record.BoolValue(n.Value)
		case *ast.NilNode:
		case *ast.FloatNode:
			v, err := record.FromGo(n.Value)
			if err != nil {
				return nil, false
			}
			out[i] = v
		default:
			return nil, false
		}
	}
	return out, true
}

// own returns v safe to store in a second place: an object built or
// changed by the expression is copied, so that changing one place does not
// change the other.
func own(v record.Value) record.Value {
	if v.Kind() != record.Object { // most values: inlined
		return v
	}
	return ownObject(v)
}

func ownObject(v record.Value) record.Value {
	if _, ok := v.Raw(); !ok {
		return record.ObjectValue(v.Obj())
	}
	return v
}

func (c *compiler) compileAll(ns []ast.Node) ([]node, error) {
	out := make([]node, len(ns))
	for i, n := range ns {
		x, err := c.compile(n)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

func (c *compiler) identifier(n *ast.IdentifierNode) (node, error) {
	for i := len(c.lets) - 1; i >= 0; i-- {
		if c.lets[i].name == n.Value {
			slot := c.lets[i].slot
			return func(f *frame) (record.Value, error) { return f.lets[slot], nil }, nil
		}
	}
	switch n.Value {
	case nameKey:
		c.needs |= needKey
		return func(f *frame) (record.Value, error) { return record.StringValue(stringOf(f.r.Key)), nil }, nil
	case nameHeaders:
		c.needs |= needHeaders
		return func(f *frame) (record.Value, error) { return headersObject(f.r), nil }, nil
	case nameMeta:
		c.needs |= needMeta
		return func(f *frame) (record.Value, error) { return metaObject(f.r), nil }, nil
	case nameTimestamp:
		c.needs |= needTimestamp
		return func(f *frame) (record.Value, error) { return f.e.timestamp(f.r), nil }, nil
	case nameOrigin:
		c.needs |= needOrigin
		return func(f *frame) (record.Value, error) { return originObject(f.r), nil }, nil
	case "$env":
		return nil, fmt.Errorf("$env is not supported")
	}
	name := n.Value
	c.needs |= needFields
	c.fields = addName(c.fields, name)
	k := c.slots.of(name)
	return func(f *frame) (record.Value, error) { return f.fieldIn(k, name), nil }, nil
}

func (c *compiler) unary(n *ast.UnaryNode) (node, error) {
	x, err := c.compile(n.Node)
	if err != nil {
		return nil, err
	}
	switch n.Operator {
	case "-":
		return func(f *frame) (record.Value, error) {
			v, err := x(f)
			if err != nil {
				return v, err
			}
			return opNeg(v)
		}, nil
	case "+":
		return func(f *frame) (record.Value, error) {
			v, err := x(f)
			if err == nil && !isNumber(v) {
				return record.Value{}, errorf("invalid operation: +%s (%s is not a number)", show(v), typeName(v))
			}
			return v, err
		}, nil
	case "!", "not":
		return func(f *frame) (record.Value, error) {
			v, err := x(f)
			if err != nil {
				return v, err
			}
			if v.Kind() != record.Bool {
				return record.Value{}, errorf("invalid operation: !%s (%s is not a bool)", show(v), typeName(v))
			}
			return record.BoolValue(!v.Bool()), nil
		}, nil
	}
	return nil, fmt.Errorf("unary operator %s is not supported", n.Operator)
}

func (c *compiler) binary(n *ast.BinaryNode) (node, error) {
	l, err := c.compile(n.Left)
	if err != nil {
		return nil, err
	}
	r, err := c.compile(n.Right)
	if err != nil {
		return nil, err
	}
	both := func(op func(a, b record.Value) (record.Value, error)) node {
		return func(f *frame) (record.Value, error) {
			a, err := l(f)
			if err != nil {
				return a, err
			}
			b, err := r(f)
			if err != nil {
				return b, err
			}
			return op(a, b)
		}
	}
	order := func(op string, want func(c int) bool) node {
		return both(func(a, b record.Value) (record.Value, error) {
			c, err := compare(op, a, b)
			if err != nil {
				return record.Value{}, err
			}
			return record.BoolValue(want(c)), nil
		})
	}
	logic := func(op string, stopOn bool) node {
		return func(f *frame) (record.Value, error) {
			a, err := l(f)
			if err != nil {
				return a, err
			}
			if a.Kind() != record.Bool {
				return record.Value{}, errorf("invalid operation: %s %s … (%s is not a bool)", show(a), op, typeName(a))
			}
			if a.Bool() == stopOn {
				return a, nil
			}
			b, err := r(f)
			if err != nil {
				return b, err
			}
			if b.Kind() != record.Bool {
				return record.Value{}, errorf("invalid operation: %s %s %s (%s is not a bool)", show(a), op, show(b), typeName(b))
			}
			return b, nil
		}
	}
	strOp := func(op string, fn func(a, b string) bool) node {
		return both(func(a, b record.Value) (record.Value, error) {
			if a.IsNull() || b.IsNull() {
				return record.BoolValue(false), nil
			}
			if a.Kind() != record.String || b.Kind() != record.String {
				return record.Value{}, mismatch(op, a, b)
			}
			return record.BoolValue(fn(a.Text(), b.Text())), nil
		})
	}
	switch n.Operator {
	case "==", "!=":
		ne := n.Operator == "!="
		return both(func(a, b record.Value) (record.Value, error) {
			eq, err := equal(a, b)
			if err != nil {
				return record.Value{}, errorf("%s %s %s: %v", show(a), n.Operator, show(b), err)
			}
			return record.BoolValue(eq != ne), nil
		}), nil
	case "<":
		return order("<", func(c int) bool { return c < 0 }), nil
	case ">":
		return order(">", func(c int) bool { return c > 0 }), nil
	case "<=":
		return order("<=", func(c int) bool { return c <= 0 }), nil
	case ">=":
		return order(">=", func(c int) bool { return c >= 0 }), nil
	case "+":
		return both(opAdd), nil
	case "-":
		return both(opSub), nil
	case "*":
		return both(opMul), nil
	case "/":
		return both(opDiv), nil
	case "%":
		return both(opMod), nil
	case "**", "^":
		return both(opPow), nil
	case "&&", "and":
		return logic(n.Operator, false), nil
	case "||", "or":
		return logic(n.Operator, true), nil
	case "??":
		return func(f *frame) (record.Value, error) {
			a, err := l(f)
			if err != nil && err != errChain {
				return a, err
			}
			if err == nil && !a.IsNull() {
				return a, nil
			}
			return r(f)
		}, nil
	case "in":
		return both(opIn), nil
	case "contains":
		return strOp("contains", strings.Contains), nil
	case "startsWith":
		return strOp("startsWith", func(a, b string) bool { return len(a) >= len(b) && a[:len(b)] == b }), nil
	case "endsWith":
		return strOp("endsWith", func(a, b string) bool { return len(a) >= len(b) && a[len(a)-len(b):] == b }), nil
	case "matches":
		if s, ok := n.Right.(*ast.StringNode); ok {
			re, err := regexp.Compile(s.Value)
			if err != nil {
				return nil, err
			}
			return func(f *frame) (record.Value, error) {
				a, err := l(f)
				if err != nil || a.IsNull() {
					return record.BoolValue(false), err
				}
				if a.Kind() != record.String {
					return record.Value{}, errorf("invalid operation: %s matches … (%s is not a string)", show(a), typeName(a))
				}
				return record.BoolValue(re.MatchString(a.Text())), nil
			}, nil
		}
		return both(func(a, b record.Value) (record.Value, error) {
			if a.IsNull() || b.IsNull() {
				return record.BoolValue(false), nil
			}
			if a.Kind() != record.String || b.Kind() != record.String {
				return record.Value{}, mismatch("matches", a, b)
			}
			re, err := regexp.Compile(b.Text())
			if err != nil {
				return record.Value{}, errorf("matches: %v", err)
			}
			return record.BoolValue(re.MatchString(a.Text())), nil
		}), nil
	case "..":
		return both(func(a, b record.Value) (record.Value, error) {
			x, err1 := a.Int()
			y, err2 := b.Int()
			if !isNumber(a) || !isNumber(b) || err1 != nil || err2 != nil {
				return record.Value{}, errorf("invalid range %s..%s: both ends must be integers", show(a), show(b))
			}
			if y-x >= 1_000_000 {
				return record.Value{}, errorf("range %d..%d has over a million elements", x, y)
			}
			var out []record.Value
			for i := x; i <= y; i++ {
				out = append(out, record.IntValue(i))
			}
			return record.ArrayValue(out), nil
		}), nil
	}
	return nil, fmt.Errorf("operator %s is not supported", n.Operator)
}

func (c *compiler) member(n *ast.MemberNode) (node, error) {
	// Metadata read by a constant name costs no object.
	if id, ok := n.Node.(*ast.IdentifierNode); ok && !c.isLet(id.Value) {
		if prop, ok := n.Property.(*ast.StringNode); ok {
			switch id.Value {
			case nameOrigin:
				c.needs |= needOrigin
				switch prop.Value {
				case "source":
					return func(f *frame) (record.Value, error) { return record.StringValue(f.r.Origin.Source), nil }, nil
				case "partition":
					return func(f *frame) (record.Value, error) { return record.StringValue(f.r.Origin.Partition), nil }, nil
				case "offset":
					return func(f *frame) (record.Value, error) { return record.IntValue(f.r.Origin.Offset), nil }, nil
				}
				return nil, fmt.Errorf("origin has no %s: use origin.source, origin.partition or origin.offset", prop.Value)
			case nameHeaders:
				c.needs |= needHeaders
				name := prop.Value
				return func(f *frame) (record.Value, error) { return header(f.r, name), nil }, nil
			case nameMeta:
				c.needs |= needMeta
				name := prop.Value
				return func(f *frame) (record.Value, error) { return metaValue(f.r, name), nil }, nil
			}
		}
	}
	base, err := c.compile(n.Node)
	if err != nil {
		return nil, err
	}
	optional := n.Optional
	if prop, ok := n.Property.(*ast.StringNode); ok {
		name := prop.Value
		return func(f *frame) (record.Value, error) {
			v, err := base(f)
			if err != nil {
				return v, err
			}
			return getMember(v, name, optional)
		}, nil
	}
	prop, err := c.compile(n.Property)
	if err != nil {
		return nil, err
	}
	return func(f *frame) (record.Value, error) {
		v, err := base(f)
		if err != nil {
			return v, err
		}
		p, err := prop(f)
		if err != nil {
			return p, err
		}
		if p.Kind() == record.String {
			return getMember(v, p.Text(), optional)
		}
		return index(v, p, optional)
	}, nil
}

func (c *compiler) isLet(name string) bool {
	return slices.ContainsFunc(c.lets, func(l let) bool { return l.name == name })
}

// getMember is v.name.
func getMember(v record.Value, name string, optional bool) (record.Value, error) {
	switch v.Kind() {
	case record.Object:
		m, _ := v.Get(name)
		return m, nil
	case record.Null:
		if optional {
			return v, errChain
		}
		return v, errorf("cannot read .%s of null (a missing field?): write ?.%s to get null instead", name, name)
	}
	return record.Value{}, errorf("cannot read .%s of %s: it is %s, not an object", name, show(v), typeName(v))
}

// index is v[i] for an array (negative i counts from the end).
func index(v record.Value, p record.Value, optional bool) (record.Value, error) {
	switch v.Kind() {
	case record.Array:
		i, err := p.Int()
		if !isNumber(p) || err != nil {
			return record.Value{}, errorf("an array index must be an integer, not %s", show(p))
		}
		n := int64(v.Len())
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return record.Value{}, errorf("index %s out of range (the array has %d elements)", show(p), n)
		}
		e, _ := v.Index(int(i))
		return e, nil
	case record.Null:
		if optional {
			return v, errChain
		}
		return v, errorf("cannot index null (a missing field?) with %s", show(p))
	}
	return record.Value{}, errorf("cannot index %s with %s", show(v), show(p))
}

func (c *compiler) slice(n *ast.SliceNode) (node, error) {
	base, err := c.compile(n.Node)
	if err != nil {
		return nil, err
	}
	var from, to node
	if n.From != nil {
		if from, err = c.compile(n.From); err != nil {
			return nil, err
		}
	}
	if n.To != nil {
		if to, err = c.compile(n.To); err != nil {
			return nil, err
		}
	}
	return func(f *frame) (record.Value, error) {
		v, err := base(f)
		if err != nil {
			return v, err
		}
		var length int
		switch v.Kind() {
		case record.Array:
			length = v.Len()
		case record.String:
			length = len(v.Text())
		default:
			return record.Value{}, errorf("cannot slice %s", show(v))
		}
		bound := func(x node, def int) (int, error) {
			if x == nil {
				return def, nil
			}
			b, err := x(f)
			if err != nil {
				return 0, err
			}
			i, err := b.Int()
			if err != nil || !isNumber(b) {
				return 0, errorf("a slice bound must be an integer, not %s", show(b))
			}
			if i < 0 {
				i += int64(length)
			}
			return int(max(0, min(i, int64(length)))), nil
		}
		lo, err := bound(from, 0)
		if err != nil {
			return record.Value{}, err
		}
		hi, err := bound(to, length)
		if err != nil {
			return record.Value{}, err
		}
		hi = max(hi, lo)
		if v.Kind() == record.String {
			return record.StringValue(v.Text()[lo:hi]), nil
		}
		out := make([]record.Value, 0, hi-lo)
		v.Elems(func(i int, e record.Value) bool {
			if i >= lo && i < hi {
				out = append(out, e)
			}
			return i < hi
		})
		return record.ArrayValue(out), nil
	}, nil
}
