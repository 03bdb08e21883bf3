package lang

import (
	"regexp"
	"strings"
	"time"

	"github.com/weir-etl/weir/record"
)

// operandTypes are the types each binary operator can take, for the checks
// at load: an operand whose type has none of them cannot succeed.
var operandTypes = map[string]Type{
	"+": TNumber | TString | TTime | TDuration | TArray, "-": TNumber | TTime | TDuration,
	"*": TNumber | TDuration, "/": TNumber, "%": TNumber, "**": TNumber,
	"<": TNumber | TString | TTime | TDuration, ">": TNumber | TString | TTime | TDuration,
	"<=": TNumber | TString | TTime | TDuration, ">=": TNumber | TString | TTime | TDuration,
	"&&": TBool, "||": TBool, "..": TInt,
	"contains": TString | TNull, "startsWith": TString | TNull, "endsWith": TString | TNull, "matches": TString | TNull,
}

func (c *compiler) binary(x *binaryExpr) (compiled, *Error) {
	l, err := c.compile(x.l)
	if err != nil {
		return l, err
	}
	if x.op == "??" {
		c.tries++ // a ?? b: the left side's failure is not a load error
	}
	r, err := c.compile(x.r)
	if x.op == "??" {
		c.tries--
	}
	if err != nil {
		return r, err
	}
	if want, ok := operandTypes[x.op]; ok {
		for _, side := range []struct {
			n compiled
			x expr
		}{{l, x.l}, {r, x.r}} {
			if side.n.typ&want == 0 {
				return l, c.errAt(side.x, "%s cannot take %s (it takes %s)", x.op, side.n.typ, want)
			}
		}
	}
	if err := c.possible(x, l.typ, r.typ); err != nil {
		return l, err
	}
	le, re := l.eval, r.eval
	pure := l.pure && r.pure
	both := func(op func(a, b record.Value) (record.Value, error), typ Type) compiled {
		return compiled{eval: func(f *frame) (record.Value, error) {
			a, err := le(f)
			if err != nil {
				return a, err
			}
			b, err := re(f)
			if err != nil {
				return b, err
			}
			return op(a, b)
		}, typ: typ, pure: pure}
	}
	// A constant right operand saves a call per evaluation: most
	// arithmetic and comparisons have one.
	if r.konst && x.op != "??" && x.op != "&&" && x.op != "||" && x.op != "matches" {
		b := r.val
		both = func(op func(a, b record.Value) (record.Value, error), typ Type) compiled {
			return compiled{eval: func(f *frame) (record.Value, error) {
				a, err := le(f)
				if err != nil {
					return a, err
				}
				return op(a, b)
			}, typ: typ, pure: pure}
		}
	}
	order := func(op string, want func(c int) bool) compiled {
		return both(func(a, b record.Value) (record.Value, error) {
			c, err := compare(op, a, b)
			if err != nil {
				return record.Value{}, err
			}
			return record.BoolValue(want(c)), nil
		}, TBool)
	}
	logic := func(op string, stopOn bool) compiled {
		return compiled{eval: func(f *frame) (record.Value, error) {
			a, err := le(f)
			if err != nil {
				return a, err
			}
			if a.Kind() != record.Bool {
				return record.Value{}, errorf("invalid operation: %s %s … (%s is not a bool)", show(a), op, typeName(a))
			}
			if a.Bool() == stopOn {
				return a, nil
			}
			b, err := re(f)
			if err != nil {
				return b, err
			}
			if b.Kind() != record.Bool {
				return record.Value{}, errorf("invalid operation: %s %s %s (%s is not a bool)", show(a), op, show(b), typeName(b))
			}
			return b, nil
		}, typ: TBool, pure: pure}
	}
	strOp := func(op string, fn func(a, b string) bool) compiled {
		return both(func(a, b record.Value) (record.Value, error) {
			if a.IsNull() || b.IsNull() {
				return record.BoolValue(false), nil
			}
			if a.Kind() != record.String || b.Kind() != record.String {
				return record.Value{}, mismatch(op, a, b)
			}
			return record.BoolValue(fn(a.Text(), b.Text())), nil
		}, TBool)
	}
	arith := func() Type {
		switch {
		case l.typ == TInt && r.typ == TInt:
			return TInt
		case l.typ&^TNumber == 0 && r.typ&^TNumber == 0:
			return TNumber
		case l.typ == TString && r.typ == TString:
			return TString
		}
		return TAny &^ TNull
	}
	switch x.op {
	case "==", "!=":
		ne := x.op == "!="
		op := x.op
		return both(func(a, b record.Value) (record.Value, error) {
			eq, err := equal(a, b)
			if err != nil {
				return record.Value{}, errorf("%s %s %s: %v", show(a), op, show(b), err)
			}
			return record.BoolValue(eq != ne), nil
		}, TBool), nil
	case "<":
		return order("<", func(c int) bool { return c < 0 }), nil
	case ">":
		return order(">", func(c int) bool { return c > 0 }), nil
	case "<=":
		return order("<=", func(c int) bool { return c <= 0 }), nil
	case ">=":
		return order(">=", func(c int) bool { return c >= 0 }), nil
	case "+":
		return both(opAdd, arith()), nil
	case "-":
		return both(opSub, arith()), nil
	case "*":
		return both(opMul, arith()), nil
	case "/":
		return both(opDiv, TFloat), nil
	case "%":
		t := TNumber
		if l.typ == TInt && r.typ == TInt {
			t = TInt
		}
		return both(opMod, t), nil
	case "**":
		return both(opPow, TFloat), nil
	case "&&":
		return logic("&&", false), nil
	case "||":
		return logic("||", true), nil
	case "??":
		if l.konst && !l.val.IsNull() {
			return l, nil
		}
		return compiled{eval: func(f *frame) (record.Value, error) {
			a, err := le(f)
			if err != nil && err != errChain {
				return a, err
			}
			if err == nil && !a.IsNull() {
				return a, nil
			}
			return re(f)
		}, typ: l.typ&^TNull | r.typ, pure: pure}, nil
	case "in":
		if r.typ&(TArray|TObject|TNull) == 0 {
			return l, c.errAt(x.r, "in needs an array or an object on its right, not %s", r.typ)
		}
		return both(opIn, TBool), nil
	case "contains":
		return strOp("contains", strings.Contains), nil
	case "startsWith":
		return strOp("startsWith", strings.HasPrefix), nil
	case "endsWith":
		return strOp("endsWith", strings.HasSuffix), nil
	case "matches":
		if !r.konst || r.val.Kind() != record.String {
			return l, c.errAt(x.r, "the pattern of matches must be a constant string, so that it is compiled once at load")
		}
		re, err := regexp.Compile(r.val.Text())
		if err != nil {
			return l, c.errAt(x.r, "bad regular expression: %v", regexpMessage(err))
		}
		return compiled{eval: func(f *frame) (record.Value, error) {
			a, err := le(f)
			if err != nil || a.IsNull() {
				return record.BoolValue(false), err
			}
			if a.Kind() != record.String {
				return record.Value{}, errorf("invalid operation: %s matches … (%s is not a string)", show(a), typeName(a))
			}
			return record.BoolValue(re.MatchString(a.Text())), nil
		}, typ: TBool, pure: pure}, nil
	case "..":
		return both(func(a, b record.Value) (record.Value, error) {
			x, err1 := a.Int()
			y, err2 := b.Int()
			if !isNumber(a) || !isNumber(b) || err1 != nil || err2 != nil {
				return record.Value{}, errorf("invalid range %s..%s: both ends must be integers", show(a), show(b))
			}
			if y >= x && uint64(y)-uint64(x) >= 1_000_000 {
				return record.Value{}, errorf("range %d..%d has over a million elements", x, y)
			}
			var out []record.Value
			for i := x; i <= y; i++ {
				out = append(out, record.IntValue(i))
			}
			return record.ArrayValue(out), nil
		}, TArray), nil
	}
	return l, c.errAt(x, "operator %s is not supported", x.op)
}

func (c *compiler) member(x *memberExpr) (compiled, *Error) {
	if m, ok := x.x.(*metaExpr); ok {
		return c.meta(m, x.name)
	}
	if _, ok := x.x.(*rootExpr); ok { // $.name is the field name
		return c.field(x.name), nil
	}
	base, err := c.compile(x.x)
	if err != nil {
		return base, err
	}
	if base.typ&(TObject|TNull) == 0 {
		return base, c.errAt(x, "cannot read .%s of %s: it is not an object", x.name, base.typ)
	}
	be, name, optional := base.eval, x.name, x.optional
	return compiled{eval: func(f *frame) (record.Value, error) {
		v, err := be(f)
		if err != nil {
			return v, err
		}
		return getMember(v, name, optional)
	}, typ: TAny, pure: base.pure}, nil
}

func (c *compiler) index(x *indexExpr) (compiled, *Error) {
	idx, err := c.compile(x.index)
	if err != nil {
		return idx, err
	}
	if idx.konst && idx.val.Kind() == record.String {
		name := strings.Clone(idx.val.Text())
		switch b := x.x.(type) {
		case *metaExpr:
			return c.meta(b, name)
		case *rootExpr:
			return c.field(name), nil
		}
	}
	base, err := c.compile(x.x)
	if err != nil {
		return base, err
	}
	be, ie, optional := base.eval, idx.eval, x.optional
	return compiled{eval: func(f *frame) (record.Value, error) {
		v, err := be(f)
		if err != nil {
			return v, err
		}
		p, err := ie(f)
		if err != nil {
			return p, err
		}
		if p.Kind() == record.String {
			return getMember(v, p.Text(), optional)
		}
		return index(v, p, optional)
	}, typ: TAny, pure: base.pure && idx.pure}, nil
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

func (c *compiler) slice(x *sliceExpr) (compiled, *Error) {
	base, err := c.compile(x.x)
	if err != nil {
		return base, err
	}
	var from, to node
	pure := base.pure
	for _, b := range []struct {
		x   expr
		dst *node
	}{{x.lo, &from}, {x.hi, &to}} {
		if b.x != nil {
			n, err := c.compile(b.x)
			if err != nil {
				return n, err
			}
			*b.dst, pure = n.eval, pure && n.pure
		}
	}
	be := base.eval
	return compiled{eval: func(f *frame) (record.Value, error) {
		v, err := be(f)
		if err != nil {
			return v, err
		}
		return sliceOf(f, v, from, to)
	}, typ: base.typ & (TArray | TString), pure: pure}, nil
}

// sliceOf is v[from:to]: of an array by elements, of a string by
// characters; negative bounds count from the end.
func sliceOf(f *frame, v record.Value, from, to node) (record.Value, error) {
	var length int
	var s string
	switch v.Kind() {
	case record.Array:
		length = v.Len()
	case record.String:
		s = v.Text()
		length = runeLen(s)
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
		return record.StringValue(runeSlice(s, lo, hi)), nil
	}
	out := make([]record.Value, 0, hi-lo)
	v.Elems(func(i int, e record.Value) bool {
		if i >= lo && i < hi {
			out = append(out, e)
		}
		return i < hi
	})
	return record.ArrayValue(out), nil
}

// runeSlice is s's characters lo to hi.
func runeSlice(s string, lo, hi int) string {
	start, n := len(s), 0
	for i := range s {
		if n == lo {
			start = i
		}
		if n == hi {
			return s[start:i]
		}
		n++
	}
	if lo >= n {
		return ""
	}
	return s[start:]
}

// Metadata as values.

func stringOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return record.BytesString(b)
}

// header is @headers.name: the last header of that key, or "" if none.
func header(r *record.Record, name string) record.Value {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == name {
			return record.StringValue(stringOf(r.Headers[i].Value))
		}
	}
	return record.StringValue("")
}

func metaValue(r *record.Record, name string) record.Value {
	for i := len(r.Meta) - 1; i >= 0; i-- {
		if r.Meta[i].Key == name {
			return record.StringValue(r.Meta[i].Value)
		}
	}
	return record.StringValue("")
}

func headersObject(r *record.Record) record.Value {
	m := make(map[string]record.Value, len(r.Headers))
	for _, h := range r.Headers {
		m[h.Key] = record.StringValue(stringOf(h.Value))
	}
	return record.ObjectValue(record.SortedObj(m))
}

func metaObject(r *record.Record) record.Value {
	m := make(map[string]record.Value, len(r.Meta))
	for _, kv := range r.Meta {
		m[kv.Key] = record.StringValue(kv.Value)
	}
	return record.ObjectValue(record.SortedObj(m))
}

func originObject(r *record.Record) record.Value {
	o := record.NewObj()
	o.Set("source", record.StringValue(r.Origin.Source))
	o.Set("partition", record.StringValue(r.Origin.Partition))
	o.Set("offset", record.IntValue(r.Origin.Offset))
	return record.ObjectValue(o)
}

// samples are a value of each type, to find at load an operator that fails
// on every pair of its operands' types (@key + 1).
var samples = map[Type]record.Value{
	TNull: {}, TBool: record.BoolValue(true), TInt: record.IntValue(1), TFloat: record.FloatValue(1.5),
	TString: record.StringValue("s"), TObject: record.ObjectValue(record.NewObj()), TArray: record.ArrayValue(nil),
	TTime: record.TimeValue(time.Unix(0, 0)), TDuration: record.DurationValue(1),
}

var arithmetic = map[string]func(a, b record.Value) (record.Value, error){
	"+": opAdd, "-": opSub, "*": opMul, "/": opDiv, "%": opMod, "**": opPow,
	"<": func(a, b record.Value) (record.Value, error) {
		_, err := compare("<", a, b)
		return record.Value{}, err
	},
}

// possible reports an error when x's operator fails for every pair of the
// kinds its operands may have.
func (c *compiler) possible(x *binaryExpr, l, r Type) *Error {
	op := x.op
	switch op {
	case ">", "<=", ">=":
		op = "<"
	}
	fn, ok := arithmetic[op]
	if !ok || l == TAny || r == TAny {
		return nil
	}
	var last error
	for lt, a := range samples {
		if l&lt == 0 {
			continue
		}
		for rt, b := range samples {
			if r&rt == 0 {
				continue
			}
			if _, err := fn(a, b); err == nil {
				return nil
			} else {
				last = err
			}
		}
	}
	if last == nil {
		return nil
	}
	return c.errAt(x, "%s: %s %s %s can never work (mismatched types %s and %s)", x.op, l, x.op, r, l, r)
}
