package transform

import (
	"strconv"

	"github.com/expr-lang/expr/ast"

	"github.com/weir-etl/weir/record"
)

// Specialised evaluation. Most expressions do integer arithmetic, compare
// integers or build a string from constants and integers, and the generic
// nodes pay for what they could be given: every operator returns a whole
// record.Value and classifies both operands (int, float, literal of any
// size, string, time) before it computes. So the compiler also builds, for
// the subtrees whose shape allows it, a fast path over plain int64s and
// bytes, tried first: an int64 path for integer arithmetic and comparisons,
// and an appending path for string concatenation.
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

// strNode appends the text of a subtree's string to dst: ok is false when
// the generic node would give anything but a string, or fail.
type strNode func(f *frame, dst []byte) (out []byte, ok bool)

// specialise returns n compiled with a fast path in front of its generic
// node, or nil when n has none.
func (c *compiler) specialise(n ast.Node) (node, error) {
	switch n := n.(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "+", "-", "*":
			i, computed := c.intForm(n)
			var s strNode
			if n.Operator == "+" {
				s, _ = c.strForm(n) // a concatenation builds its string
			}
			if i == nil && s == nil {
				return nil, nil
			}
			generic, err := c.compileNode(n)
			if err != nil {
				return nil, err
			}
			if i != nil && computed {
				generic = intValue(i, generic)
			}
			if s != nil {
				generic = stringValue(s, generic)
			}
			return generic, nil
		case "/":
			return c.specialiseDiv(n)
		case "==", "!=", "<", ">", "<=", ">=":
			return c.specialiseCompare(n)
		}
	case *ast.CallNode, *ast.UnaryNode:
		i, computed := c.intForm(n)
		if i == nil || !computed {
			return nil, nil
		}
		generic, err := c.compileNode(n)
		if err != nil {
			return nil, err
		}
		return intValue(i, generic), nil
	case *ast.BuiltinNode:
		// string() of a string gives the string as it is, with the escapes
		// it was read with: only string() of an integer builds one.
		s, built := c.strForm(n)
		if s == nil || !built {
			return nil, nil
		}
		generic, err := c.compileNode(n)
		if err != nil {
			return nil, err
		}
		return stringValue(s, generic), nil
	}
	return nil, nil
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
// than the record's evaluation (see putEnv), and a buffer that grows leaves
// the strings already made in the old array, which they keep alive.
func stringValue(s strNode, generic node) node {
	return func(f *frame) (record.Value, error) {
		e := f.e
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

// read returns the fast read of a let variable or a field named name, or
// nil for a reserved name, which has no fast path.
func (c *compiler) read(name string) func(f *frame) record.Value {
	if slot := c.letSlot(name); slot >= 0 {
		return func(f *frame) record.Value { return f.lets[slot] }
	}
	switch name {
	case nameKey, nameHeaders, nameMeta, nameTimestamp, nameOrigin, "$env":
		return nil
	}
	k := c.slots.of(name)
	return func(f *frame) record.Value { return f.fieldIn(k, name) }
}

// intForm returns the int64 path of n, or nil if n has none. computed says
// that n's generic node gives an Int (a computed integer) when the path
// succeeds, rather than the number as read: string() and the encoder keep a
// read number's literal (-0, 1.0e3), so only a computed one may be made
// from the int64.
func (c *compiler) intForm(n ast.Node) (x intNode, computed bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		i := int64(n.Value)
		return func(*frame) (int64, bool) { return i, true }, true
	case *ast.IdentifierNode:
		// The reads are written out rather than calling c.read's: a field
		// read is most of an integer path's cost.
		if slot := c.letSlot(n.Value); slot >= 0 {
			return func(f *frame) (int64, bool) { return f.lets[slot].IntForm() }, false
		}
		if c.read(n.Value) == nil {
			return nil, false
		}
		name, k := n.Value, c.slots.of(n.Value)
		return func(f *frame) (int64, bool) { return f.intFieldIn(k, name) }, false
	case *ast.UnaryNode:
		if n.Operator != "-" {
			return nil, false
		}
		a, _ := c.intForm(n.Node)
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
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == modFunc && len(n.Arguments) == 2 {
			return c.intBinary("%", n.Arguments[0], n.Arguments[1])
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "+", "-", "*", "%":
			return c.intBinary(n.Operator, n.Left, n.Right)
		}
	}
	return nil, false
}

// intBinary is the int64 path of an arithmetic operator, with the generic
// operator's checks (ops.go): a result that does not fit int64, and a
// modulo by zero, give up.
func (c *compiler) intBinary(op string, left, right ast.Node) (intNode, bool) {
	l, _ := c.intForm(left)
	r, _ := c.intForm(right)
	if l == nil || r == nil {
		return nil, false
	}
	k := op[0]
	if n, ok := right.(*ast.IntegerNode); ok {
		return intByConstant(k, l, int64(n.Value)), true
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
	return func(f *frame) (int64, bool) {
		if a, ok := l(f); ok {
			return a % b, true
		}
		return 0, false
	}
}

// intOperands returns the integer forms of both operands of n and n's
// generic node; generic is nil when an operand has no integer form (or on
// err).
func (c *compiler) intOperands(n *ast.BinaryNode) (l, r intNode, generic node, err error) {
	l, _ = c.intForm(n.Left)
	r, _ = c.intForm(n.Right)
	if l == nil || r == nil {
		return nil, nil, nil, nil
	}
	generic, err = c.compileNode(n)
	if err != nil {
		return nil, nil, nil, err
	}
	return l, r, generic, nil
}

// specialiseDiv gives / of two integers its fast path: as opDiv, the
// integers become float64s, which must hold them exactly (every integer
// within ±2^53 does), and the quotient of finite numbers by a non-zero one
// is finite.
func (c *compiler) specialiseDiv(n *ast.BinaryNode) (node, error) {
	l, r, generic, err := c.intOperands(n)
	if generic == nil {
		return nil, err
	}
	const exact = 1 << 53
	if n, ok := n.Right.(*ast.IntegerNode); ok && n.Value != 0 && n.Value >= -exact && n.Value <= exact {
		b := float64(n.Value) // a constant divisor: a call less
		return func(f *frame) (record.Value, error) {
			if a, ok := l(f); ok && a >= -exact && a <= exact {
				return record.FloatValue(float64(a) / b), nil
			}
			return generic(f)
		}, nil
	}
	return func(f *frame) (record.Value, error) {
		if a, ok := l(f); ok && a >= -exact && a <= exact {
			if b, ok := r(f); ok && b != 0 && b >= -exact && b <= exact {
				return record.FloatValue(float64(a) / float64(b)), nil
			}
		}
		return generic(f)
	}, nil
}

// specialiseCompare gives the comparison of two integers its fast path.
func (c *compiler) specialiseCompare(n *ast.BinaryNode) (node, error) {
	l, r, generic, err := c.intOperands(n)
	if generic == nil {
		return nil, err
	}
	var holds func(a, b int64) bool
	switch n.Operator {
	case "==":
		holds = func(a, b int64) bool { return a == b }
	case "!=":
		holds = func(a, b int64) bool { return a != b }
	case "<":
		holds = func(a, b int64) bool { return a < b }
	case ">":
		holds = func(a, b int64) bool { return a > b }
	case "<=":
		holds = func(a, b int64) bool { return a <= b }
	default:
		holds = func(a, b int64) bool { return a >= b }
	}
	return func(f *frame) (record.Value, error) {
		if a, ok := l(f); ok {
			if b, ok := r(f); ok {
				return record.BoolValue(holds(a, b)), nil
			}
		}
		return generic(f)
	}, nil
}

// strForm returns the appending path of n, or nil if n has none: a string
// constant, a field or let variable that holds a string, string() of a
// string or of a computed integer, and the concatenation of two of these.
// built says that n's generic node makes a new string (a concatenation,
// string() of an integer) rather than giving one that exists: only such a
// node may be replaced by the appended text, since a string read with
// escapes is written out with them.
func (c *compiler) strForm(n ast.Node) (s strNode, built bool) {
	switch n := n.(type) {
	case *ast.StringNode:
		s := n.Value
		return func(_ *frame, dst []byte) ([]byte, bool) { return append(dst, s...), true }, false
	case *ast.IdentifierNode:
		read := c.read(n.Value)
		if read == nil {
			return nil, false
		}
		return func(f *frame, dst []byte) ([]byte, bool) {
			v := read(f)
			if v.Kind() != record.String {
				return dst, false
			}
			return append(dst, v.Text()...), true
		}, false
	case *ast.BuiltinNode:
		if n.Name != "string" || len(n.Arguments) != 1 {
			return nil, false
		}
		if i, computed := c.intForm(n.Arguments[0]); i != nil && computed {
			return func(f *frame, dst []byte) ([]byte, bool) {
				v, ok := i(f)
				if !ok {
					return dst, false
				}
				return strconv.AppendInt(dst, v, 10), true
			}, true
		}
		return c.strForm(n.Arguments[0]) // string() of a string is itself
	case *ast.BinaryNode:
		if n.Operator != "+" {
			return nil, false
		}
		l, _ := c.strForm(n.Left)
		r, _ := c.strForm(n.Right)
		if l == nil || r == nil {
			return nil, false
		}
		if k, ok := n.Left.(*ast.StringNode); ok { // a constant prefix: a call less
			prefix := k.Value
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
