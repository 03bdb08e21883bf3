package lang

import (
	"testing"

	"github.com/weir-etl/weir/record"
)

// BenchmarkFunctions runs every library function on its example, compiled
// without folding (an example is a constant, which would otherwise be
// computed once at load): the cost of one call with its arguments, per
// function.
//
//	go test -run XXX -bench Functions -benchmem ./lang
func BenchmarkFunctions(b *testing.B) {
	for _, f := range Functions() {
		b.Run(f.Name, func(b *testing.B) {
			ast, perr := parse(f.Example)
			if perr != nil {
				b.Fatal(perr)
			}
			c := &compiler{src: f.Example, noFold: true}
			n, err := c.compile(ast)
			if err != nil {
				b.Fatal(err)
			}
			r := record.New([]byte(`{}`))
			var o record.Obj
			if err := r.Index(&o); err != nil {
				b.Fatal(err)
			}
			e := NewEnv()
			b.ReportAllocs()
			for b.Loop() {
				e.Bind(&r, &o)
				if _, err := n.eval(&e.f); err != nil && err != ErrDrop {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTimeReformat is the timestamp field of the five-field map:
// format_time(parse_time(ts), "%Y-%m-%d") on a field, through the unboxed
// time path; 0 allocations.
func BenchmarkTimeReformat(b *testing.B) {
	for _, src := range []string{`format_time(parse_time(ts), "%Y-%m-%d")`, `format_time(parse_time(ts, "%Y-%m-%dT%H:%M:%SZ"), "%d/%m/%Y %H:%M")`} {
		b.Run(src, func(b *testing.B) {
			p, err := Compile(src, Options{})
			if err != nil {
				b.Fatal(err)
			}
			r := record.New([]byte(`{"ts":"2026-02-01T19:27:17Z"}`))
			var o record.Obj
			if err := r.Index(&o); err != nil {
				b.Fatal(err)
			}
			e := NewEnv()
			b.ReportAllocs()
			for b.Loop() {
				e.Bind(&r, &o)
				if _, err := e.Eval(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTimeReformatAllocatesNothing holds the benchmark's claim.
func TestTimeReformatAllocatesNothing(t *testing.T) {
	p, err := Compile(`format_time(parse_time(ts, "%Y-%m-%dT%H:%M:%S%z"), "%Y-%m-%d")`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := record.New([]byte(`{"ts":"2026-02-01T19:27:17+01:00"}`))
	var o record.Obj
	if err := r.Index(&o); err != nil {
		t.Fatal(err)
	}
	e := NewEnv()
	run := func() {
		e.Bind(&r, &o)
		v, err := e.Eval(p)
		if err != nil || v.Text() != "2026-02-01" {
			t.Fatalf("%v %v", v.Text(), err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("a time reformatted through strftime layouts allocates %v times", n)
	}
}
