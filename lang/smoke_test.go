package lang

import (
	"testing"

	"github.com/weir-etl/weir/record"
)

func evalOn(t *testing.T, src, value string) (record.Value, error) {
	t.Helper()
	p, err := Compile(src, Options{})
	if err != nil {
		return record.Value{}, err
	}
	r := record.New([]byte(value))
	o, err := record.ParseObj(r.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	e := NewEnv()
	e.Bind(&r, o)
	return e.Eval(p)
}

// TestExamples evaluates every function's example and compares it with its
// Output: the reference's examples cannot rot.
func TestExamples(t *testing.T) {
	for _, f := range Functions() {
		if f.Example == "" {
			t.Errorf("%s has no example", f.Name)
			continue
		}
		got, err := evalOn(t, f.Example, `{}`)
		if f.Output == "dropped" {
			if err != ErrDrop {
				t.Errorf("%s: %s gave %v, want a drop", f.Name, f.Example, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %s: %v", f.Name, f.Example, err)
			continue
		}
		want, err := evalOn(t, f.Output, `{}`)
		if err != nil {
			t.Errorf("%s: output %s: %v", f.Name, f.Output, err)
			continue
		}
		if !same(got, want) {
			t.Errorf("%s: %s = %s, want %s", f.Name, f.Example, got.AppendJSON(nil), want.AppendJSON(nil))
		}
	}
}

// same is == with numbers compared by their literal too.
func same(a, b record.Value) bool {
	if eq, _ := equal(a, b); !eq {
		return false
	}
	switch {
	case isNumber(a):
		return a.Literal() == b.Literal()
	case a.Kind() == record.Array:
		ok := true
		a.Elems(func(i int, e record.Value) bool { f, _ := b.Index(i); ok = same(e, f); return ok })
		return ok
	case a.Kind() == record.Object:
		ok := true
		a.Range(func(n string, e record.Value) bool { f, _ := b.Get(n); ok = same(e, f); return ok })
		return ok
	}
	return true
}
