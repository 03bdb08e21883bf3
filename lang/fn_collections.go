package lang

import (
	"slices"
	"strings"

	"github.com/weir-etl/weir/record"
)

// Collections: arrays and objects, and the predicates (functions that run
// an expression per element: # is the element, #index its index, #key its
// member name in an object, #acc reduce's accumulator).

// lambda compiles argument i of x as an expression run per element.
func (c *compiler) lambda(x *callExpr, i int) (node, *Error) {
	if i >= len(x.args) {
		return nil, nil
	}
	c.depth++
	n, err := c.compile(x.args[i])
	c.depth--
	if err != nil {
		return nil, err
	}
	return n.eval, nil
}

// each calls fn with every element of an array or member of an object
// (with its name), with the loop state set for a lambda.
func each(f *frame, v record.Value, fn func(i int, key string, e record.Value) (bool, error)) error {
	f.loops = append(f.loops, loop{})
	k := len(f.loops) - 1
	var err error
	i := 0
	visit := func(key string, e record.Value) bool {
		l := &f.loops[k]
		l.item, l.key, l.index = e, key, i
		i++
		var more bool
		more, err = fn(i-1, key, e)
		return more && err == nil
	}
	if v.Kind() == record.Object {
		v.Range(visit)
	} else {
		v.Elems(func(_ int, e record.Value) bool { return visit("", e) })
	}
	f.loops = f.loops[:k]
	return err
}

func truth(name string, body node, f *frame, e record.Value) (bool, error) {
	v := e
	if body != nil {
		var err error
		if v, err = body(f); err != nil {
			return false, err
		}
	}
	if v.Kind() != record.Bool {
		return false, fnError(name, "the predicate gave %s, not a bool", show(v))
	}
	return v.Bool(), nil
}

func collection(name string, v record.Value, objects bool) error {
	switch v.Kind() {
	case record.Array:
		return nil
	case record.Object:
		if objects {
			return nil
		}
	case record.Null:
		return nullArg(name)
	}
	want := "an array"
	if objects {
		want = "an array or an object"
	}
	return fnError(name, "%s is %s, not %s", show(v), typeName(v), want)
}

// predicateFn builds a function of a collection and a lambda.
func predicateFn(name string, objects bool, fn func(f *frame, v record.Value, body node, rest []record.Value) (record.Value, error)) func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
	return func(c *compiler, x *callExpr, args []compiled) (compiled, *Error) {
		body, err := c.lambda(x, 1)
		if err != nil {
			return compiled{}, err
		}
		coll := args[0].eval
		var restN []node
		for i := 2; i < len(args); i++ {
			restN = append(restN, args[i].eval)
		}
		pure := args[0].pure
		return compiled{eval: func(f *frame) (record.Value, error) {
			v, err := coll(f)
			if err != nil {
				return v, err
			}
			if err := collection(name, v, objects); err != nil {
				return record.Value{}, err
			}
			var rest []record.Value
			for _, r := range restN {
				rv, err := r(f)
				if err != nil {
					return rv, err
				}
				rest = append(rest, rv)
			}
			return fn(f, v, body, rest)
		}, typ: lookupFunc(name).Result, pure: pure}, nil
	}
}

func init() {
	coll := Param{Name: "xs", Type: TArray | TNull}
	anyColl := Param{Name: "xs", Type: TArray | TObject | TNull}
	pred := Param{Name: "predicate", Type: TAny, Lambda: true}
	optPred := Param{Name: "predicate", Type: TAny, Lambda: true, Optional: true}
	quant := func(name, doc, ex, out string, stop bool, result func(n, total int) bool) *Func {
		return &Func{Name: name, Category: "collections", Params: []Param{coll, optPred}, Result: TBool, Doc: doc, Example: ex, Output: out,
			build: predicateFn(name, false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				n, total := 0, 0
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					ok, err := truth(name, body, f, e)
					total++
					if ok {
						n++
					}
					return !(ok == stop && (name == "any" || name == "all" || name == "none")), err
				})
				return record.BoolValue(result(n, total)), err
			})}
	}
	register(
		&Func{Name: "len", Category: "collections", Params: []Param{{Name: "x", Type: TString | TArray | TObject | TNull}}, Result: TInt,
			Doc: "The characters of a string, elements of an array or members of an object.", Example: `len("héllo") + len([1, 2])`, Output: `7`, fn1: lenFn},
		&Func{Name: "keys", Category: "collections", Params: []Param{{Name: "o", Type: TObject | TNull}}, Result: TArray,
			Doc: "An object's member names, in order.", Example: `keys({b: 1, a: 2})`, Output: `["b", "a"]`, fn1: func(v record.Value) (record.Value, error) { return members("keys", v, true) }},
		&Func{Name: "values", Category: "collections", Params: []Param{{Name: "o", Type: TObject | TNull}}, Result: TArray,
			Doc: "An object's member values, in order.", Example: `values({b: 1, a: 2})`, Output: `[1, 2]`, fn1: func(v record.Value) (record.Value, error) { return members("values", v, false) }},
		quant("all", "Whether the predicate holds for every element (or every element is true).", `all([1, 2], # > 0)`, `true`, false, func(n, t int) bool { return n == t }),
		quant("any", "Whether the predicate holds for some element.", `any(["a", "b"], # == "b")`, `true`, true, func(n, _ int) bool { return n > 0 }),
		quant("none", "Whether the predicate holds for no element.", `none([1, 2], # > 5)`, `true`, true, func(n, _ int) bool { return n == 0 }),
		quant("one", "Whether the predicate holds for exactly one element.", `one([1, 2, 3], # > 2)`, `true`, false, func(n, _ int) bool { return n == 1 }),
		&Func{Name: "count", Category: "collections", Params: []Param{coll, optPred}, Result: TInt,
			Doc: "How many elements the predicate holds for.", Example: `count([1, 5, 7], # > 2)`, Output: `2`,
			build: predicateFn("count", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				n := 0
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					ok, err := truth("count", body, f, e)
					if ok {
						n++
					}
					return true, err
				})
				return record.IntValue(int64(n)), err
			})},
		&Func{Name: "filter", Category: "collections", Params: []Param{anyColl, pred}, Result: TArray | TObject,
			Doc: "The elements of an array, or the members of an object (#key is the name), for which the predicate holds.", Example: `filter([1, 5, 7], # > 2)`, Output: `[5, 7]`,
			build: predicateFn("filter", true, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				if v.Kind() == record.Object {
					o := record.NewObj()
					err := each(f, v, func(_ int, key string, e record.Value) (bool, error) {
						ok, err := truth("filter", body, f, e)
						if ok {
							o.Set(key, own(e))
						}
						return true, err
					})
					return record.ObjectValue(o), err
				}
				var out []record.Value
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					ok, err := truth("filter", body, f, e)
					if ok {
						out = append(out, e)
					}
					return true, err
				})
				return record.ArrayValue(out), err
			})},
		&Func{Name: "map", Category: "collections", Params: []Param{coll, pred}, Result: TArray,
			Doc: "The expression's value for each element.", Example: `map([1, 2], # * 10)`, Output: `[10, 20]`,
			build: predicateFn("map", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				out := make([]record.Value, 0, v.Len())
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					r, err := body(f)
					out = append(out, own(r))
					return true, err
				})
				return record.ArrayValue(out), err
			})},
		&Func{Name: "map_values", Category: "collections", Params: []Param{{Name: "o", Type: TObject | TNull}, pred}, Result: TObject,
			Doc: "The object with each member's value replaced by the expression's (# the value, #key the name).", Example: `map_values({a: 1, b: 2}, # + 1)`, Output: `{"a": 2, "b": 3}`,
			build: predicateFn("map_values", true, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				if v.Kind() != record.Object {
					return record.Value{}, fnError("map_values", "%s is %s, not an object", show(v), typeName(v))
				}
				o := record.NewObj()
				err := each(f, v, func(_ int, key string, e record.Value) (bool, error) {
					r, err := body(f)
					o.Set(key, own(r))
					return true, err
				})
				return record.ObjectValue(o), err
			})},
		&Func{Name: "find", Category: "collections", Params: []Param{coll, pred}, Result: TAny,
			Doc: "The first element the predicate holds for, or null.", Example: `find([1, 5, 7], # > 2)`, Output: `5`,
			build: predicateFn("find", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				var found record.Value
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					ok, err := truth("find", body, f, e)
					if ok {
						found = e
					}
					return !ok, err
				})
				return found, err
			})},
		&Func{Name: "find_index", Category: "collections", Params: []Param{coll, pred}, Result: TInt, Aliases: []string{"findIndex"},
			Doc: "The index of the first element the predicate holds for, or -1.", Example: `find_index([1, 5, 7], # > 2)`, Output: `1`,
			build: predicateFn("find_index", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				at := -1
				err := each(f, v, func(i int, _ string, e record.Value) (bool, error) {
					ok, err := truth("find_index", body, f, e)
					if ok {
						at = i
					}
					return !ok, err
				})
				return record.IntValue(int64(at)), err
			})},
		&Func{Name: "sum", Category: "collections", Params: []Param{coll, optPred}, Result: TNumber,
			Doc: "The sum of the elements, or of the expression's values, checked as + is (an overflow is a record error).", Example: `sum([{"n": 2}, {"n": 3}], #.n)`, Output: `5`,
			build: predicateFn("sum", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				total := record.IntValue(0)
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					x := e
					if body != nil {
						var err error
						if x, err = body(f); err != nil {
							return false, err
						}
					}
					var err error
					total, err = opAdd(total, x)
					return err == nil, err
				})
				return total, err
			})},
		&Func{Name: "reduce", Category: "collections", Params: []Param{coll, pred, {Name: "initial", Type: TAny, Optional: true}}, Result: TAny,
			Doc: "Folds the elements: #acc is the value so far (initial, or the first element), # the element.", Example: `reduce([1, 2, 3], #acc * 10 + #, 0)`, Output: `123`,
			build: predicateFn("reduce", false, func(f *frame, v record.Value, body node, rest []record.Value) (record.Value, error) {
				elems, _ := array("reduce", v)
				var acc record.Value
				start := 0
				if len(rest) > 0 {
					acc = rest[0]
				} else {
					if len(elems) == 0 {
						return record.Value{}, fnError("reduce", "of an empty array without an initial value")
					}
					acc, start = elems[0], 1
				}
				f.loops = append(f.loops, loop{})
				k := len(f.loops) - 1
				defer func() { f.loops = f.loops[:k] }()
				for i := start; i < len(elems); i++ {
					f.loops[k] = loop{item: elems[i], index: i, acc: acc}
					var err error
					if acc, err = body(f); err != nil {
						return acc, err
					}
				}
				return acc, nil
			})},
		&Func{Name: "group_by", Category: "collections", Params: []Param{coll, pred}, Result: TObject, Aliases: []string{"groupBy"},
			Doc: "An object of arrays: the elements by the string of the expression's value, in order of first appearance.", Example: `group_by([1, 2, 3], # % 2 == 0 ? "even" : "odd")`, Output: `{"odd": [1, 3], "even": [2]}`,
			build: predicateFn("group_by", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				groups := map[string][]record.Value{}
				var order []string
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					k, err := body(f)
					if err != nil {
						return false, err
					}
					ks, err := toStringFn(k)
					if err != nil {
						return false, fnError("group_by", "the key %s", strings.TrimPrefix(err.Error(), "string: "))
					}
					key := strings.Clone(ks.Text())
					if _, ok := groups[key]; !ok {
						order = append(order, key)
					}
					groups[key] = append(groups[key], e)
					return true, nil
				})
				o := record.NewObj()
				for _, k := range order {
					o.Set(k, record.ArrayValue(groups[k]))
				}
				return record.ObjectValue(o), err
			})},
		&Func{Name: "sort_by", Category: "collections", Params: []Param{coll, pred}, Result: TArray, Aliases: []string{"sortBy"},
			Doc: "The elements ordered by the expression's value (stable; numbers, strings or times).", Example: `sort_by([{"n": 2}, {"n": 1}], #.n)`, Output: `[{"n": 1}, {"n": 2}]`,
			build: predicateFn("sort_by", false, func(f *frame, v record.Value, body node, _ []record.Value) (record.Value, error) {
				type kv struct{ k, v record.Value }
				var items []kv
				err := each(f, v, func(_ int, _ string, e record.Value) (bool, error) {
					k, err := body(f)
					items = append(items, kv{k, e})
					return err == nil, err
				})
				if err != nil {
					return record.Value{}, err
				}
				err = sortValues(len(items), func(i int) record.Value { return items[i].k }, func(cmp func(a, b int) int) {
					slices.SortStableFunc(items, func(a, b kv) int { c, _ := compare("sort_by", a.k, b.k); return c })
				})
				out := make([]record.Value, len(items))
				for i, it := range items {
					out[i] = it.v
				}
				return record.ArrayValue(out), err
			})},
		&Func{Name: "sort", Category: "collections", Params: []Param{coll}, Result: TArray,
			Doc: "The elements in order (numbers exactly, strings by bytes, times); mixed kinds are a record error.", Example: `sort([3, 1.5, 2])`, Output: `[1.5, 2, 3]`,
			fn1: func(v record.Value) (record.Value, error) {
				elems, err := array("sort", v)
				if err != nil {
					return record.Value{}, err
				}
				err = sortValues(len(elems), func(i int) record.Value { return elems[i] }, func(func(a, b int) int) {
					slices.SortStableFunc(elems, func(a, b record.Value) int { c, _ := compare("sort", a, b); return c })
				})
				return record.ArrayValue(elems), err
			}},
		&Func{Name: "unique", Category: "collections", Params: []Param{coll}, Result: TArray, Aliases: []string{"uniq"},
			Doc: "The elements without repeats (== equality), first ones kept, in order.", Example: `unique([1, 2, 1.0, "1"])`, Output: `[1, 2, "1"]`,
			fn1: func(v record.Value) (record.Value, error) {
				elems, err := array("unique", v)
				if err != nil {
					return record.Value{}, err
				}
				var out []record.Value
				for _, e := range elems {
					dup := false
					for _, o := range out {
						if eq, _ := equal(e, o); eq {
							dup = true
							break
						}
					}
					if !dup {
						out = append(out, e)
					}
				}
				return record.ArrayValue(out), nil
			}},
		&Func{Name: "flatten", Category: "collections", Params: []Param{coll, {Name: "depth", Type: TNumber, Optional: true}}, Result: TArray,
			Doc: "Nested arrays' elements in their place, depth levels deep (all by default).", Example: `flatten([1, [2, [3]]])`, Output: `[1, 2, 3]`,
			fn2: func(a, b record.Value) (record.Value, error) {
				if _, err := array("flatten", a); err != nil {
					return record.Value{}, err
				}
				d, err := optInt("flatten", "depth", b, record.MaxDepth)
				if err != nil {
					return record.Value{}, err
				}
				var out []record.Value
				var flat func(v record.Value, depth int64)
				flat = func(v record.Value, depth int64) {
					v.Elems(func(_ int, e record.Value) bool {
						if e.Kind() == record.Array && depth > 0 {
							flat(e, depth-1)
						} else {
							out = append(out, e)
						}
						return true
					})
				}
				flat(a, d)
				return record.ArrayValue(out), nil
			}},
		&Func{Name: "first", Category: "collections", Params: []Param{coll}, Result: TAny, Doc: "The first element, or null.", Example: `first([4, 5])`, Output: `4`,
			fn1: func(v record.Value) (record.Value, error) {
				if err := collection("first", v, false); err != nil {
					return record.Value{}, err
				}
				e, _ := v.Index(0)
				return e, nil
			}},
		&Func{Name: "last", Category: "collections", Params: []Param{coll}, Result: TAny, Doc: "The last element, or null.", Example: `last([4, 5])`, Output: `5`,
			fn1: func(v record.Value) (record.Value, error) {
				if err := collection("last", v, false); err != nil {
					return record.Value{}, err
				}
				e, _ := v.Index(v.Len() - 1)
				return e, nil
			}},
		&Func{Name: "merge", Category: "collections", Params: []Param{{Name: "objects", Type: TObject | TNull, Variadic: true}}, Result: TObject,
			Doc: "The objects' members in one object; a later object's member replaces an earlier one of the same name (shallow).", Example: `merge({a: 1, b: 2}, {b: 3})`, Output: `{"a": 1, "b": 3}`,
			fnN: func(args []record.Value) (record.Value, error) {
				o := record.NewObj()
				for _, a := range args {
					if _, err := object("merge", a); err != nil {
						return record.Value{}, err
					}
					a.Range(func(name string, e record.Value) bool { o.Set(name, own(e)); return true })
				}
				return record.ObjectValue(o), nil
			}},
		&Func{Name: "without", Category: "collections", Params: []Param{{Name: "o", Type: TObject | TNull}, {Name: "names", Type: TString | TArray, Variadic: true}}, Result: TObject,
			Doc: "The object without the members named (names or arrays of names).", Example: `without({a: 1, b: 2, c: 3}, "a", ["c"])`, Output: `{"b": 2}`,
			fnN: func(args []record.Value) (record.Value, error) { return pick("without", args, false) }},
		&Func{Name: "pick", Category: "collections", Params: []Param{{Name: "o", Type: TObject | TNull}, {Name: "names", Type: TString | TArray, Variadic: true}}, Result: TObject,
			Doc: "The object with only the members named, in the object's order.", Example: `pick({a: 1, b: 2, c: 3}, "c", "a")`, Output: `{"a": 1, "c": 3}`,
			fnN: func(args []record.Value) (record.Value, error) { return pick("pick", args, true) }},
		&Func{Name: "compact", Category: "collections", Params: []Param{{Name: "x", Type: TArray | TObject | TNull}}, Result: TArray | TObject,
			Doc:     "An object without its null members, or an array without its null elements, at every depth. compact($) in a map's set of $ drops every null field of the record.",
			Example: `compact({a: 1, b: null, c: {d: null}})`, Output: `{"a": 1, "c": {}}`,
			fn1: func(v record.Value) (record.Value, error) {
				if err := collection("compact", v, true); err != nil {
					return record.Value{}, err
				}
				return compact(v, 0), nil
			}},
	)
}

func compact(v record.Value, depth int) record.Value {
	if depth > record.MaxDepth {
		return v
	}
	switch v.Kind() {
	case record.Object:
		o := record.NewObj()
		v.Range(func(name string, e record.Value) bool {
			if !e.IsNull() {
				o.Set(name, compact(e, depth+1))
			}
			return true
		})
		return record.ObjectValue(o)
	case record.Array:
		var out []record.Value
		v.Elems(func(_ int, e record.Value) bool {
			if !e.IsNull() {
				out = append(out, compact(e, depth+1))
			}
			return true
		})
		return record.ArrayValue(out)
	}
	return v
}

func pick(name string, args []record.Value, keep bool) (record.Value, error) {
	if _, err := object(name, args[0]); err != nil {
		return record.Value{}, err
	}
	var names []string
	for _, a := range args[1:] {
		switch a.Kind() {
		case record.String:
			names = append(names, a.Text())
		case record.Array:
			var err error
			a.Elems(func(_ int, e record.Value) bool {
				if e.Kind() != record.String {
					err = fnError(name, "a member name must be a string, not %s", show(e))
					return false
				}
				names = append(names, e.Text())
				return true
			})
			if err != nil {
				return record.Value{}, err
			}
		default:
			return record.Value{}, fnError(name, "a member name must be a string, not %s", show(a))
		}
	}
	o := record.NewObj()
	args[0].Range(func(n string, e record.Value) bool {
		if slices.Contains(names, n) == keep {
			o.Set(n, own(e))
		}
		return true
	})
	return record.ObjectValue(o), nil
}

func members(name string, v record.Value, keys bool) (record.Value, error) {
	if _, err := object(name, v); err != nil {
		return record.Value{}, err
	}
	var out []record.Value
	v.Range(func(n string, e record.Value) bool {
		if keys {
			out = append(out, sv(n))
		} else {
			out = append(out, e)
		}
		return true
	})
	return record.ArrayValue(out), nil
}

func lenFn(v record.Value) (record.Value, error) {
	switch v.Kind() {
	case record.String:
		return record.IntValue(int64(runeLen(v.Text()))), nil
	case record.Array, record.Object:
		return record.IntValue(int64(v.Len())), nil
	case record.Null:
		return record.Value{}, fnError("len", "the value is null (a missing field?)")
	}
	return record.Value{}, fnError("len", "%s has no length", show(v))
}

// sortValues checks that the n keys are of one ordered kind, then sorts.
func sortValues(n int, key func(i int) record.Value, sort func(cmp func(a, b int) int)) error {
	for i := 1; i < n; i++ {
		if _, err := compare("sort", key(0), key(i)); err != nil {
			return err
		}
	}
	sort(nil)
	return nil
}
