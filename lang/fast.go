package lang

import (
	"strconv"

	"github.com/weir-etl/weir/record"
)

// Specialised evaluation. Most expressions do integer arithmetic, compare
// integers or build a string from constants and integers, and the generic
// nodes pay for what they could be given: every operator returns a whole
// record.Value and classifies both operands (int, float, literal of any
// size, string, time) before it computes. So the compiler also builds, for
// the subtrees whose shape allows it, a fast path over plain int64s, bytes
// and time.Times, tried first.
//
// A fast path never decides anything on its own. It gives up (ok false) on
// any value it was not built for (a float, a literal beyond int64, null, a
// string where an int was expected) and on anything the generic operator
// would refuse or treat specially (overflow, division or modulo by zero, an
// int without an exact float64), and the node then evaluates its generic
// form from the start, which gives the value or the record error exactly as
// it would have without the fast path. That is sound because every subtree
// that has a fast path is pure (it reads fields, let variables and
// constants only), so evaluating it twice gives the same result. Where a
// fast path succeeds, its result is the generic one: TestFastPathsAreGeneric
// checks it against the generic evaluator on generated expressions and
// records.

// intNode evaluates a subtree as an int64: ok is false when the generic
// node would give anything but an integer (of Form IntForm), or fail.
type intNode func(f *frame) (i int64, ok bool)

// condNode decides a condition's subtree: ok is false when the generic node
// would give anything but a bool, or fail.
type condNode func(f *frame) (b, ok bool)

// strNode appends the text of a subtree's string to dst: ok is false when
// the generic node would give anything but a string, or fail.
type strNode func(f *frame, dst []byte) (out []byte, ok bool)

// specialise returns x compiled with a fast path in front of its generic
// node, or a compiled with a nil eval when x has none.
func (c *compiler) specialise(x expr) (compiled, *Error) {
	switch x := x.(type) {
	case *binaryExpr:
		switch x.op {
		case "+", "-", "*", "%":
			i, computed := c.intForm(x)
			var s strNode
			if x.op == "+" {
				s, _ = c.strForm(x) // a concatenation builds its string
			}
			if i == nil && s == nil {
				return compiled{}, nil
			}
			generic, err := c.compileNode(x)
			if err != nil {
				return generic, err
			}
			if i != nil && computed {
				generic.eval = intValue(i, generic.eval)
			}
			if s != nil {
				generic.eval = stringValue(s, generic.eval)
			}
			return generic, nil
		case "/":
			return c.specialiseDiv(x)
		case "==", "!=", "<", ">", "<=", ">=":
			return c.specialiseCompare(x)
		case "&&", "||":
			return c.specialiseCond(x)
		}
	case *unaryExpr:
		if x.op == "!" {
			return c.specialiseCond(x)
		}
		i, computed := c.intForm(x)
		if i == nil || !computed {
			return compiled{}, nil
		}
		generic, err := c.compileNode(x)
		if err != nil {
			return generic, err
		}
		generic.eval = intValue(i, generic.eval)
		return generic, nil
	case *callExpr:
		// string() of a string gives the string as it is, with the escapes
		// it was read with: only string() of an integer builds one.
		if s, built := c.strForm(x); s != nil && built {
			generic, err := c.compileNode(x)
			if err != nil {
				return generic, err
			}
			generic.eval = stringValue(s, generic.eval)
			return generic, nil
		}
	}
	return compiled{}, nil
}

// intValue is the node of a subtree whose generic node computes an Int.
func intValue(i intNode, generic node) node {
	return func(f *frame) (record.Value, error) {
		if v, ok := i(f); ok {
			return record.IntValue(v), nil
		}
		return generic(f)
	}
}

// stringValue is the node of a subtree whose generic node gives a string.
// The string's bytes are appended to the env's scratch buffer rather than
// allocated: like every value of an evaluation, the string lives no longer
// than the record's evaluation (see Env.Bind), and a buffer that grows
// leaves the strings already made in the old array, which they keep alive.
func stringValue(s strNode, generic node) node {
	return func(f *frame) (record.Value, error) {
		e := f.env
		start := len(e.scratch)
		if b, ok := s(f, e.scratch); ok {
			e.scratch = b
			return record.StringValue(record.BytesString(b[start:])), nil
		}
		return generic(f)
	}
}

// letSlot returns the slot of the let variable name in scope, or -1.
func (c *compiler) letSlot(name string) int {
	for i := len(c.lets) - 1; i >= 0; i-- {
		if c.lets[i].name == name {
			return c.lets[i].slot
		}
	}
	return -1
}

// read returns the fast read of a let variable or a field named name.
func (c *compiler) read(x *identExpr) func(f *frame) record.Value {
	if slot := c.letSlot(x.name); slot >= 0 {
		return func(f *frame) record.Value { return f.lets[slot] }
	}
	name, k := x.name, c.slots.of(x.name)
	return func(f *frame) record.Value { return f.fieldIn(k, name) }
}

// intForm returns the int64 path of x, or nil if x has none. computed says
// that x's generic node gives an Int (a computed integer) when the path
// succeeds, rather than the number as read: string() and the encoder keep a
// read number's literal (-0, 1.0e3), so only a computed one may be made
// from the int64.
func (c *compiler) intForm(x expr) (n intNode, computed bool) {
	switch x := x.(type) {
	case *litExpr:
		if x.val.Kind() != record.Int {
			return nil, false
		}
		i, _ := x.val.Int()
		return func(*frame) (int64, bool) { return i, true }, true
	case *identExpr:
		// The reads are written out rather than calling c.read's: a field
		// read is most of an integer path's cost.
		if slot := c.letSlot(x.name); slot >= 0 {
			return func(f *frame) (int64, bool) { return f.lets[slot].IntForm() }, false
		}
		name, k := x.name, c.slots.of(x.name)
		return func(f *frame) (int64, bool) { return f.intFieldIn(k, name) }, false
	case *unaryExpr:
		if x.op != "-" {
			return nil, false
		}
		a, _ := c.intForm(x.x)
		if a == nil {
			return nil, false
		}
		return func(f *frame) (int64, bool) {
			i, ok := a(f)
			if !ok {
				return 0, false
			}
			return negInt(i)
		}, true
	case *binaryExpr:
		switch x.op {
		case "+", "-", "*", "%":
			return c.intBinary(x.op, x.l, x.r)
		}
	}
	return nil, false
}

// intBinary is the int64 path of an arithmetic operator, with the generic
// operator's checks (ops.go): a result that does not fit int64, and a
// modulo by zero, give up.
func (c *compiler) intBinary(op string, left, right expr) (intNode, bool) {
	l, _ := c.intForm(left)
	r, _ := c.intForm(right)
	if l == nil || r == nil {
		return nil, false
	}
	k := op[0]
	if n, ok := right.(*litExpr); ok {
		b, _ := n.val.Int()
		return intByConstant(k, l, b), true
	}
	return func(f *frame) (int64, bool) {
		a, ok := l(f)
		if !ok {
			return 0, false
		}
		b, ok := r(f)
		if !ok {
			return 0, false
		}
		switch k {
		case '+':
			return addInt(a, b)
		case '-':
			return subInt(a, b)
		case '*':
			return mulInt(a, b)
		}
		if b == 0 {
			return 0, false // the generic % says "modulo by zero"
		}
		return a % b, true
	}, true
}

// intByConstant is intBinary's path when the right operand is the
// constant b, which saves a call per operation: most arithmetic has one.
func intByConstant(k byte, l intNode, b int64) intNode {
	switch k {
	case '+':
		return func(f *frame) (int64, bool) {
			if a, ok := l(f); ok {
				return addInt(a, b)
			}
			return 0, false
		}
	case '-':
		return func(f *frame) (int64, bool) {
			if a, ok := l(f); ok {
				return subInt(a, b)
			}
			return 0, false
		}
	case '*':
		return func(f *frame) (int64, bool) {
			if a, ok := l(f); ok {
				return mulInt(a, b)
			}
			return 0, false
		}
	}
	if b == 0 {
		return func(*frame) (int64, bool) { return 0, false } // the generic % says "modulo by zero"
	}
	if b > 0 && b&(b-1) == 0 {
		// A power of two (sampling one record in 2^n is common): a mask
		// instead of a division, which takes a few nanoseconds. Go's %
		// takes the dividend's sign, so a negative a's non-zero remainder
		// is the mask's minus b.
		mask := b - 1
		return func(f *frame) (int64, bool) {
			if a, ok := l(f); ok {
				r := a & mask
				if a < 0 && r != 0 {
					r -= b
				}
				return r, true
			}
			return 0, false
		}
	}
	return func(f *frame) (int64, bool) {
		if a, ok := l(f); ok {
			return a % b, true
		}
		return 0, false
	}
}

// intOperands returns the integer forms of both operands of x and x's
// generic node; generic has a nil eval when an operand has no integer form
// (or on err).
func (c *compiler) intOperands(x *binaryExpr) (l, r intNode, generic compiled, err *Error) {
	l, _ = c.intForm(x.l)
	r, _ = c.intForm(x.r)
	if l == nil || r == nil {
		return nil, nil, compiled{}, nil
	}
	generic, err = c.compileNode(x)
	return l, r, generic, err
}

// specialiseDiv gives / of two integers its fast path: as opDiv, the
// integers become float64s, which must hold them exactly (every integer
// within ±2^53 does), and the quotient of finite numbers by a non-zero one
// is finite.
func (c *compiler) specialiseDiv(x *binaryExpr) (compiled, *Error) {
	l, r, generic, err := c.intOperands(x)
	if generic.eval == nil || err != nil {
		return generic, err
	}
	g := generic.eval
	const exact = 1 << 53
	if n, ok := x.r.(*litExpr); ok && n.val.Kind() == record.Int {
		b64, _ := n.val.Int()
		if b64 != 0 && b64 >= -exact && b64 <= exact {
			b := float64(b64) // a constant divisor: a call less
			generic.eval = func(f *frame) (record.Value, error) {
				if a, ok := l(f); ok && a >= -exact && a <= exact {
					return record.FloatValue(float64(a) / b), nil
				}
				return g(f)
			}
			return generic, nil
		}
	}
	generic.eval = func(f *frame) (record.Value, error) {
		if a, ok := l(f); ok && a >= -exact && a <= exact {
			if b, ok := r(f); ok && b != 0 && b >= -exact && b <= exact {
				return record.FloatValue(float64(a) / float64(b)), nil
			}
		}
		return g(f)
	}
	return generic, nil
}

// specialiseCompare gives the comparison of two integers its fast path,
// and a condition its path that decides without building a Value
// (compiled.cond).
func (c *compiler) specialiseCompare(x *binaryExpr) (compiled, *Error) {
	_, _, generic, err := c.intOperands(x)
	if generic.eval == nil || err != nil {
		return generic, err
	}
	return withCond(generic, c.condForm(x)), nil
}

// specialiseCond gives &&, || and ! of conditions with a fast path theirs.
func (c *compiler) specialiseCond(x expr) (compiled, *Error) {
	cond := c.condForm(x)
	if cond == nil {
		return compiled{}, nil
	}
	generic, err := c.compileNode(x)
	if err != nil {
		return generic, err
	}
	return withCond(generic, cond), nil
}

// withCond puts cond in front of generic's node.
func withCond(generic compiled, cond condNode) compiled {
	g := generic.eval
	generic.eval = func(f *frame) (record.Value, error) {
		if b, ok := cond(f); ok {
			return record.BoolValue(b), nil
		}
		return g(f)
	}
	generic.cond = cond
	return generic
}

// condForm returns the deciding path of x, or nil if x has none: a
// comparison of two integer paths (intForm), and &&, || and ! of such.
// Like the generic && and ||, it evaluates the right operand only when the
// left does not decide.
func (c *compiler) condForm(x expr) condNode {
	switch x := x.(type) {
	case *binaryExpr:
		switch x.op {
		case "==", "!=", "<", ">", "<=", ">=":
			l, _ := c.intForm(x.l)
			r, _ := c.intForm(x.r)
			if l == nil || r == nil {
				return nil
			}
			if n, ok := x.r.(*litExpr); ok && n.val.Kind() == record.Int {
				k, _ := n.val.Int() // a constant right operand: a call less
				return compareIntTo(x.op, l, k)
			}
			return compareInts(x.op, l, r)
		case "&&", "||":
			l, r := c.condForm(x.l), c.condForm(x.r)
			if l == nil || r == nil {
				return nil
			}
			stopOn := x.op == "||"
			return func(f *frame) (bool, bool) {
				a, ok := l(f)
				if !ok {
					return false, false
				}
				if a == stopOn {
					return a, true
				}
				return r(f)
			}
		}
	case *unaryExpr:
		if x.op != "!" {
			return nil
		}
		a := c.condForm(x.x)
		if a == nil {
			return nil
		}
		return func(f *frame) (bool, bool) {
			b, ok := a(f)
			return !b, ok
		}
	}
	return nil
}

// compareInts is the comparison op of two integers: ok is false when either
// operand is not one, and the generic node decides.
func compareInts(op string, l, r intNode) condNode {
	switch op {
	case "==":
		return func(f *frame) (bool, bool) {
			a, ok := l(f)
			if !ok {
				return false, false
			}
			b, ok := r(f)
			return a == b, ok
		}
	case "!=":
		return func(f *frame) (bool, bool) {
			a, ok := l(f)
			if !ok {
				return false, false
			}
			b, ok := r(f)
			return a != b, ok
		}
	case "<":
		return func(f *frame) (bool, bool) {
			a, ok := l(f)
			if !ok {
				return false, false
			}
			b, ok := r(f)
			return a < b, ok
		}
	case ">":
		return func(f *frame) (bool, bool) {
			a, ok := l(f)
			if !ok {
				return false, false
			}
			b, ok := r(f)
			return a > b, ok
		}
	case "<=":
		return func(f *frame) (bool, bool) {
			a, ok := l(f)
			if !ok {
				return false, false
			}
			b, ok := r(f)
			return a <= b, ok
		}
	default:
		return func(f *frame) (bool, bool) {
			a, ok := l(f)
			if !ok {
				return false, false
			}
			b, ok := r(f)
			return a >= b, ok
		}
	}
}

// compareIntTo is the comparison op of an integer with the constant k.
func compareIntTo(op string, l intNode, k int64) condNode {
	switch op {
	case "==":
		return func(f *frame) (bool, bool) { a, ok := l(f); return a == k, ok }
	case "!=":
		return func(f *frame) (bool, bool) { a, ok := l(f); return a != k, ok }
	case "<":
		return func(f *frame) (bool, bool) { a, ok := l(f); return a < k, ok }
	case ">":
		return func(f *frame) (bool, bool) { a, ok := l(f); return a > k, ok }
	case "<=":
		return func(f *frame) (bool, bool) { a, ok := l(f); return a <= k, ok }
	default:
		return func(f *frame) (bool, bool) { a, ok := l(f); return a >= k, ok }
	}
}

// strForm returns the appending path of x, or nil if x has none: a string
// constant, a field or let variable that holds a string, string() of a
// string or of a computed integer, a function with an appending form
// (format_time), and the concatenation of two of these. built says that
// x's generic node makes a new string (a concatenation, string() of an
// integer) rather than giving one that exists: only such a node may be
// replaced by the appended text, since a string read with escapes is
// written out with them.
func (c *compiler) strForm(x expr) (s strNode, built bool) {
	switch x := x.(type) {
	case *litExpr:
		if x.val.Kind() != record.String {
			return nil, false
		}
		s := x.val.Text()
		return func(_ *frame, dst []byte) ([]byte, bool) { return append(dst, s...), true }, false
	case *identExpr:
		read := c.read(x)
		return func(f *frame, dst []byte) ([]byte, bool) {
			v := read(f)
			if v.Kind() != record.String {
				return dst, false
			}
			return append(dst, v.Text()...), true
		}, false
	case *callExpr:
		f := lookupFunc(x.name)
		if f == nil {
			return nil, false
		}
		if f.Name == "string" && len(x.args) == 1 {
			if i, computed := c.intForm(x.args[0]); i != nil && computed {
				return func(f *frame, dst []byte) ([]byte, bool) {
					v, ok := i(f)
					if !ok {
						return dst, false
					}
					return strconv.AppendInt(dst, v, 10), true
				}, true
			}
			return c.strForm(x.args[0]) // string() of a string is itself
		}
		if f.Name == "format_time" {
			return c.formatTimeForm(x)
		}
	case *binaryExpr:
		if x.op != "+" {
			return nil, false
		}
		l, _ := c.strForm(x.l)
		r, _ := c.strForm(x.r)
		if l == nil || r == nil {
			return nil, false
		}
		if k, ok := x.l.(*litExpr); ok { // a constant prefix: a call less
			prefix := k.val.Text()
			return func(f *frame, dst []byte) ([]byte, bool) { return r(f, append(dst, prefix...)) }, true
		}
		return func(f *frame, dst []byte) ([]byte, bool) {
			dst, ok := l(f, dst)
			if !ok {
				return dst, false
			}
			return r(f, dst)
		}, true
	}
	return nil, false
}
