package transform

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"

	"github.com/weir-etl/weir/record"
)

// Builtin functions. Those that touch numbers, or whose result must be
// exact, are weir's own (int, float, string, abs, len, max, min, toJSON,
// fromJSON, keys, values and the predicates); the rest are expr's, called
// with the arguments converted to plain Go values exactly (a number that
// int64 and float64 cannot hold is a record error, and so is a string
// that is not UTF-8, which expr's string functions would alter).

func (c *compiler) builtin(n *ast.BuiltinNode) (node, error) {
	switch n.Name {
	case "all", "none", "any", "one", "filter", "map", "count", "sum", "find", "findIndex", "findLast", "findLastIndex", "groupBy", "reduce":
		return c.predicate(n)
	case "sortBy":
		return nil, fmt.Errorf("sortBy is not supported: use sort() on the values")
	}
	args, err := c.compileAll(n.Arguments)
	if err != nil {
		return nil, err
	}
	eval := func(f *frame) ([]record.Value, error) {
		var buf [4]record.Value
		vals := buf[:0]
		if len(args) > len(buf) {
			vals = make([]record.Value, 0, len(args))
		}
		for _, a := range args {
			v, err := a(f)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		return vals, nil
	}
	one := func(fn func(v record.Value) (record.Value, error)) (node, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("%s takes one argument", n.Name)
		}
		a := args[0]
		return func(f *frame) (record.Value, error) {
			v, err := a(f)
			if err != nil {
				return v, err
			}
			return fn(v)
		}, nil
	}
	switch n.Name {
	case "int":
		return one(toInt)
	case "float":
		return one(toFloatFn)
	case "string":
		return one(toStringFn)
	case "abs":
		return one(absFn)
	case "len":
		return one(lenFn)
	case "type":
		return one(func(v record.Value) (record.Value, error) { return record.StringValue(exprType(v)), nil })
	case "toJSON":
		return one(func(v record.Value) (record.Value, error) {
			return record.StringValue(string(v.AppendJSON(nil))), nil
		})
	case "fromJSON":
		return one(func(v record.Value) (record.Value, error) {
			if v.Kind() != record.String {
				return record.Value{}, errorf("fromJSON(%s): the argument must be a string", show(v))
			}
			p, err := record.ParseValue([]byte(v.Text()))
			if err != nil {
				return record.Value{}, errorf("fromJSON: %v", err)
			}
			return p, nil
		})
	case "keys", "values":
		keys := n.Name == "keys"
		return one(func(v record.Value) (record.Value, error) {
			if v.Kind() != record.Object {
				return record.Value{}, errorf("%s(%s): the argument must be an object", n.Name, show(v))
			}
			var out []record.Value
			v.Range(func(name string, e record.Value) bool {
				if keys {
					out = append(out, record.StringValue(name))
				} else {
					out = append(out, e)
				}
				return true
			})
			return record.ArrayValue(out), nil
		})
	case "now":
		return func(*frame) (record.Value, error) { return record.TimeValue(time.Now()), nil }, nil
	case "duration":
		return one(func(v record.Value) (record.Value, error) {
			if v.Kind() != record.String {
				return record.Value{}, errorf("duration(%s): the argument must be a string such as \"1h30m\"", show(v))
			}
			d, err := time.ParseDuration(v.Text())
			if err != nil {
				return record.Value{}, errorf("duration: %v", err)
			}
			return record.DurationValue(d), nil
		})
	case "max", "min":
		want := 1
		if n.Name == "min" {
			want = -1
		}
		return func(f *frame) (record.Value, error) {
			vals, err := eval(f)
			if err != nil {
				return record.Value{}, err
			}
			return extreme(n.Name, vals, want)
		}, nil
	}
	id, ok := builtin.Index[n.Name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s", n.Name)
	}
	fn := builtin.Builtins[id]
	name := n.Name
	return func(f *frame) (record.Value, error) {
		vals, err := eval(f)
		if err != nil {
			return record.Value{}, err
		}
		return callGo(name, fn, vals)
	}, nil
}

// callGo calls one of expr's builtins with vals converted to Go values.
func callGo(name string, fn *builtin.Function, vals []record.Value) (record.Value, error) {
	goArgs := make([]any, len(vals))
	for i, v := range vals {
		g, err := toGoArg(name, v)
		if err != nil {
			return record.Value{}, err
		}
		goArgs[i] = g
	}
	var out any
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		switch {
		case fn.Fast != nil && len(goArgs) == 1:
			out = fn.Fast(goArgs[0])
		case fn.Func != nil:
			out, err = fn.Func(goArgs...)
		case fn.Safe != nil:
			out, _, err = fn.Safe(goArgs...)
		default:
			err = fmt.Errorf("cannot be called here")
		}
	}()
	if err != nil {
		return record.Value{}, errorf("%s: %v", name, err)
	}
	v, err := record.FromGo(out)
	if err != nil {
		return record.Value{}, errorf("%s: %v", name, err)
	}
	return v, nil
}

func toGoArg(name string, v record.Value) (any, error) {
	if v.Kind() == record.String && !utf8.ValidString(v.Text()) {
		return nil, errorf("%s(%s): the string holds bytes that are not UTF-8, which %s would replace", name, show(v), name)
	}
	g, err := v.ToGo()
	if err != nil {
		return nil, errorf("%s: %v", name, err)
	}
	return g, nil
}

// toInt is int(): integers as they are, floats truncated toward zero (if
// the result is within int64), numeric strings parsed.
func toInt(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.Int, record.Float, record.Number:
		// A number whose value is an integer is that integer, read from
		// its digits (1.152921504606847e18 is not the float64 nearest it,
		// 2^60); only a fraction is truncated.
		if i, err := v.Int(); err == nil {
			return record.IntValue(i), nil
		}
		form, i, x := v.Form()
		switch form {
		case record.IntForm:
			return record.IntValue(i), nil
		case record.FloatForm:
			t := math.Trunc(x)
			if t >= -0x1p63 && t < 0x1p63 {
				return record.IntValue(int64(t)), nil
			}
			return record.Value{}, errorf("int(%s): %s is out of the int64 range", show(v), show(v))
		}
		return record.Value{}, errorf("int(%s): %s is out of the int64 range", show(v), show(v))
	case record.String:
		s := strings.TrimSpace(v.Text())
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return record.Value{}, errorf("int(%s): the number is out of the int64 range", show(v))
			}
			return record.Value{}, errorf("int(%s): the string is not an integer", show(v))
		}
		return record.IntValue(i), nil
	case record.Bool:
		return record.Value{}, errorf("int(%s): a bool is not a number", show(v))
	case record.Duration:
		return record.IntValue(int64(v.Duration())), nil
	case record.Null:
		return record.Value{}, errorf("int(null): the value is null (a missing field?): default it, as in int(x ?? 0)")
	}
	return record.Value{}, errorf("int(%s): an %s cannot be converted to int", show(v), v.Kind())
}

// toFloatFn is float(): exact, or an error.
func toFloatFn(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.Int, record.Float, record.Number:
		f, err := v.Float()
		if err != nil {
			return record.Value{}, errorf("float(%s): %v", show(v), err)
		}
		return record.FloatValue(f), nil
	case record.String:
		s := strings.TrimSpace(v.Text())
		if record.Valid([]byte(s)) != nil || s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
			return record.Value{}, errorf("float(%s): the string is not a number", show(v))
		}
		return toFloatFn(record.NumberLiteral(s))
	case record.Null:
		return record.Value{}, errorf("float(null): the value is null (a missing field?): default it, as in float(x ?? 0)")
	}
	return record.Value{}, errorf("float(%s): %s cannot be converted to float", show(v), typeName(v))
}

// toStringFn is string(): numbers as their literal, objects and arrays as
// JSON, times and durations as Go prints them.
func toStringFn(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.String:
		return v, nil
	case record.Int, record.Float, record.Number:
		return record.StringValue(v.Literal()), nil
	case record.Bool:
		return record.StringValue(strconv.FormatBool(v.Bool())), nil
	case record.Time:
		return record.StringValue(v.Time().String()), nil
	case record.Duration:
		return record.StringValue(v.Duration().String()), nil
	case record.Object, record.Array:
		return record.StringValue(string(v.AppendJSON(nil))), nil
	case record.Null:
		return record.Value{}, errorf(`string(null): the value is null (a missing field?): default it, as in string(x ?? "")`)
	}
	return record.Value{}, errorf("string(%s): cannot convert", show(v))
}

func absFn(v record.Value) (record.Value, error) {
	if !isNumber(v) {
		return record.Value{}, errorf("abs(%s): %s is not a number", show(v), typeName(v))
	}
	c, err := record.CompareNumbers(v, record.IntValue(0))
	if err != nil {
		return record.Value{}, errorf("abs(%s): %v", show(v), err)
	}
	if c >= 0 {
		return v, nil
	}
	return opNeg(v)
}

func lenFn(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.String:
		return record.IntValue(int64(runeLen(v.Text()))), nil
	case record.Array, record.Object:
		return record.IntValue(int64(v.Len())), nil
	case record.Null:
		return record.Value{}, errorf("len(null): the value is null (a missing field?)")
	}
	return record.Value{}, errorf("len(%s): %s has no length", show(v), typeName(v))
}

// exprType is type(): the names expr gives.
func exprType(v record.Value) string {
	switch v.Kind() {
	case record.Null:
		return "nil"
	case record.Bool:
		return "bool"
	case record.Int:
		return "int"
	case record.Float:
		return "float"
	case record.Number:
		if f, _, _ := v.Form(); f == record.IntForm || f == record.BigForm && !strings.ContainsAny(v.Literal(), ".eE") {
			return "int"
		}
		return "float"
	case record.String:
		return "string"
	case record.Array:
		return "array"
	case record.Object:
		return "map"
	case record.Time:
		return "time.Time"
	case record.Duration:
		return "time.Duration"
	}
	return "unknown"
}

// extreme is max (want 1) or min (want -1) of vals, or of the one array
// given.
func extreme(name string, vals []record.Value, want int) (record.Value, error) {
	if len(vals) == 1 && vals[0].Kind() == record.Array {
		var elems []record.Value
		vals[0].Elems(func(_ int, e record.Value) bool { elems = append(elems, e); return true })
		vals = elems
	}
	if len(vals) == 0 {
		return record.Value{}, errorf("%s of nothing", name)
	}
	best := vals[0]
	for _, v := range vals[1:] {
		c, err := compare(name, v, best)
		if err != nil {
			return record.Value{}, err
		}
		if c == want {
			best = v
		}
	}
	return best, nil
}

// call is a method call (timestamp.Year()); functions of the user's own do
// not exist, and compile rejects them.
func (c *compiler) call(n *ast.CallNode) (node, error) {
	if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == modFunc && len(n.Arguments) == 2 {
		return c.binary(&ast.BinaryNode{Operator: "%", Left: n.Arguments[0], Right: n.Arguments[1]})
	}
	m, ok := n.Callee.(*ast.MemberNode)
	if !ok {
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			return nil, fmt.Errorf("unknown function %s", id.Value)
		}
		return nil, fmt.Errorf("this call is not supported")
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return nil, fmt.Errorf("a method must be named")
	}
	base, err := c.compile(m.Node)
	if err != nil {
		return nil, err
	}
	args, err := c.compileAll(n.Arguments)
	if err != nil {
		return nil, err
	}
	method := prop.Value
	return func(f *frame) (record.Value, error) {
		v, err := base(f)
		if err != nil {
			return v, err
		}
		var recv reflect.Value
		switch v.Kind() {
		case record.Time:
			recv = reflect.ValueOf(v.Time())
		case record.Duration:
			recv = reflect.ValueOf(v.Duration())
		default:
			return record.Value{}, errorf("%s has no method %s", show(v), method)
		}
		fn := recv.MethodByName(method)
		if !fn.IsValid() {
			return record.Value{}, errorf("%s has no method %s", v.Kind(), method)
		}
		t := fn.Type()
		if t.NumIn() != len(args) || t.IsVariadic() {
			return record.Value{}, errorf("%s takes %d arguments", method, t.NumIn())
		}
		in := make([]reflect.Value, len(args))
		for i, a := range args {
			av, err := a(f)
			if err != nil {
				return av, err
			}
			g, err := toGoArg(method, av)
			if err != nil {
				return record.Value{}, err
			}
			rv := reflect.ValueOf(g)
			if !rv.IsValid() || !rv.Type().ConvertibleTo(t.In(i)) {
				return record.Value{}, errorf("%s: argument %d is %s, not %s", method, i+1, show(av), t.In(i))
			}
			in[i] = rv.Convert(t.In(i))
		}
		out := fn.Call(in)
		if len(out) == 0 {
			return record.Value{}, nil
		}
		if len(out) == 2 {
			if e, ok := out[1].Interface().(error); ok && e != nil {
				return record.Value{}, errorf("%s: %v", method, e)
			}
		}
		r, err := record.FromGo(out[0].Interface())
		if err != nil {
			return record.Value{}, errorf("%s: %v", method, err)
		}
		return r, nil
	}, nil
}

// predicate compiles the builtins that take a predicate (all(tags, # !=
// "")): the body runs once per element, with # the element.
func (c *compiler) predicate(n *ast.BuiltinNode) (node, error) {
	if len(n.Arguments) == 0 {
		return nil, fmt.Errorf("%s needs an array", n.Name)
	}
	arr, err := c.compile(n.Arguments[0])
	if err != nil {
		return nil, err
	}
	var body, init node
	c.depth++
	if len(n.Arguments) > 1 {
		p, ok := n.Arguments[1].(*ast.PredicateNode)
		if !ok {
			c.depth--
			return nil, fmt.Errorf("%s needs a predicate", n.Name)
		}
		if body, err = c.compile(p.Node); err != nil {
			c.depth--
			return nil, err
		}
	}
	c.depth--
	if len(n.Arguments) > 2 {
		if init, err = c.compile(n.Arguments[2]); err != nil {
			return nil, err
		}
	}
	name := n.Name
	return func(f *frame) (record.Value, error) {
		a, err := arr(f)
		if err != nil {
			return a, err
		}
		if a.IsNull() {
			return record.Value{}, errorf("%s(null): the value is null (a missing field?)", name)
		}
		if a.Kind() != record.Array {
			return record.Value{}, errorf("%s(%s): the first argument must be an array", name, show(a))
		}
		f.loops = append(f.loops, loop{})
		defer func() { f.loops = f.loops[:len(f.loops)-1] }()
		truth := func(i int, e record.Value) (bool, error) {
			l := &f.loops[len(f.loops)-1]
			l.item, l.index = e, i
			if body == nil {
				if e.Kind() != record.Bool {
					return false, errorf("%s: element %s is not a bool", name, show(e))
				}
				return e.Bool(), nil
			}
			v, err := body(f)
			if err != nil {
				return false, err
			}
			if v.Kind() != record.Bool {
				return false, errorf("%s: the predicate gave %s, not a bool", name, show(v))
			}
			return v.Bool(), nil
		}
		var elems []record.Value
		a.Elems(func(_ int, e record.Value) bool { elems = append(elems, e); return true })
		switch name {
		case "all", "none", "any", "one", "count":
			n := 0
			for i, e := range elems {
				ok, err := truth(i, e)
				if err != nil {
					return record.Value{}, err
				}
				if ok {
					n++
				}
				switch {
				case name == "all" && !ok, name == "none" && ok:
					return record.BoolValue(false), nil
				case name == "any" && ok:
					return record.BoolValue(true), nil
				}
			}
			switch name {
			case "all", "none":
				return record.BoolValue(true), nil
			case "any":
				return record.BoolValue(false), nil
			case "one":
				return record.BoolValue(n == 1), nil
			}
			return record.IntValue(int64(n)), nil
		case "filter":
			var out []record.Value
			for i, e := range elems {
				ok, err := truth(i, e)
				if err != nil {
					return record.Value{}, err
				}
				if ok {
					out = append(out, e)
				}
			}
			return record.ArrayValue(out), nil
		case "find", "findIndex":
			for i, e := range elems {
				ok, err := truth(i, e)
				if err != nil {
					return record.Value{}, err
				}
				if ok {
					if name == "findIndex" {
						return record.IntValue(int64(i)), nil
					}
					return e, nil
				}
			}
			if name == "findIndex" {
				return record.IntValue(-1), nil
			}
			return record.Value{}, nil
		case "findLast", "findLastIndex":
			for i := len(elems) - 1; i >= 0; i-- {
				ok, err := truth(i, elems[i])
				if err != nil {
					return record.Value{}, err
				}
				if ok {
					if name == "findLastIndex" {
						return record.IntValue(int64(i)), nil
					}
					return elems[i], nil
				}
			}
			if name == "findLastIndex" {
				return record.IntValue(-1), nil
			}
			return record.Value{}, nil
		}
		// map, sum, groupBy, reduce: the body gives values.
		value := func(i int, e record.Value) (record.Value, error) {
			l := &f.loops[len(f.loops)-1]
			l.item, l.index = e, i
			if body == nil {
				return e, nil
			}
			return body(f)
		}
		switch name {
		case "map":
			out := make([]record.Value, len(elems))
			for i, e := range elems {
				v, err := value(i, e)
				if err != nil {
					return v, err
				}
				out[i] = own(v)
			}
			return record.ArrayValue(out), nil
		case "sum":
			total := record.IntValue(0)
			for i, e := range elems {
				v, err := value(i, e)
				if err != nil {
					return v, err
				}
				if total, err = opAdd(total, v); err != nil {
					return total, err
				}
			}
			return total, nil
		case "groupBy":
			groups := map[string][]record.Value{}
			var order []string
			for i, e := range elems {
				k, err := value(i, e)
				if err != nil {
					return k, err
				}
				ks, err := toStringFn(k)
				if err != nil {
					return ks, err
				}
				key := ks.Text()
				if _, ok := groups[key]; !ok {
					order = append(order, key)
				}
				groups[key] = append(groups[key], e)
			}
			o := record.NewObj()
			for _, k := range order {
				o.Set(k, record.ArrayValue(groups[k]))
			}
			return record.ObjectValue(o), nil
		case "reduce":
			start := 0
			var acc record.Value
			if init != nil {
				if acc, err = init(f); err != nil {
					return acc, err
				}
			} else {
				if len(elems) == 0 {
					return record.Value{}, errorf("reduce of an empty array without an initial value")
				}
				acc, start = elems[0], 1
			}
			for i := start; i < len(elems); i++ {
				f.loops[len(f.loops)-1].acc = acc
				if acc, err = value(i, elems[i]); err != nil {
					return acc, err
				}
			}
			return acc, nil
		}
		return record.Value{}, errorf("%s is not supported", name)
	}, nil
}

// Metadata as values.

func stringOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return record.BytesString(b)
}

// header is headers.name: the last header of that key, or "" if none.
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
