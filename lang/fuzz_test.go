package lang

import (
	"testing"

	"github.com/weir-etl/weir/record"
)

// The compiler and the evaluator never panic: any source is compiled or
// refused with an *Error at a place inside it, and a program that compiles
// gives a value or an error on any record. Seeded with every function's
// example and the shapes of the other tests; CI runs each target briefly
// (go test -fuzz FuzzCompile -fuzztime 5s ./lang).

func seeds(f *testing.F) {
	for _, fn := range Functions() {
		f.Add(fn.Example, `{}`)
	}
	for _, c := range funcCases {
		f.Add(c.src, c.value)
	}
	for _, s := range []string{`a ?? b | upper()`, `if a { 1 } else if b { 2 } else { 3 }`, `let x = 1; x + $.y`, `@headers["x"] + @origin.partition`,
		`filter(xs, {#.a > 1})`, `a ? b : c ? d : e`, `not a in [1, 2]`, `-2 ** 2 ** 3`, "`raw` + \"\\u{1F600}\"", `x[1:-1]`, `(((`} {
		f.Add(s, `{"a":1,"b":"x","xs":[{"a":2}],"y":null}`)
	}
}

func FuzzCompile(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, src, _ string) {
		p, err := Compile(src, Options{})
		if err != nil {
			le, ok := err.(*Error)
			if !ok || le.Pos < 0 || le.Pos > len(src) || le.Line < 1 || le.Column < 1 || le.Msg == "" {
				t.Fatalf("%q: a compile error without a place: %#v", src, err)
			}
			_ = le.Excerpt("  ")
			return
		}
		if p.String() != src {
			t.Fatalf("the program's source is %q, not %q", p.String(), src)
		}
	})
}

func FuzzEval(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, src, value string) {
		p, err := Compile(src, Options{})
		if err != nil {
			return
		}
		r := record.New([]byte(value))
		var o record.Obj
		if r.Index(&o) != nil {
			return
		}
		e := NewEnv()
		e.Bind(&r, &o)
		v, err := e.Eval(p)
		if err == nil {
			_ = v.AppendJSON(nil)
		}
		// The lookup path too, as a condition reads fields.
		vals, found := make([]record.Value, len(p.Fields())), make([]bool, len(p.Fields()))
		if r.Lookup(p.Fields(), vals, found) == nil {
			e.BindLookup(&r, p.Fields(), vals, found)
			if v, err := e.Eval(p); err == nil {
				_ = v.AppendJSON(nil)
			}
		}
	})
}
