package transform

import (
	"github.com/weir-etl/weir/record"
)

// Filter keeps the records for which its condition is true and drops the
// others ("filter").
type Filter struct {
	cond  *Expr
	conds [1]*Expr // cond, as decide takes it
}

var (
	_ Predicate = (*Filter)(nil)
	_ InPlace   = (*Filter)(nil)
)

// NewFilter compiles condition, which must give a bool (see CompileCondition).
func NewFilter(condition string) (*Filter, error) {
	c, err := CompileCondition("filter condition", condition)
	if err != nil {
		return nil, err
	}
	return &Filter{cond: c, conds: [1]*Expr{c}}, nil
}

// Process appends in to out if the condition holds for it.
func (f *Filter) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	keep, err := f.Keep(in)
	if err != nil || !keep {
		return out, err
	}
	return appendPassed(out, in), nil
}

// Keep reports whether the condition holds for in (see Predicate).
func (f *Filter) Keep(in *record.Record) (bool, error) {
	e := getEnv()
	keep, err := f.keep(e, in)
	putEnv(e)
	return keep, err
}

// Apply is Keep with the caller's evaluation state (see InPlace): a filter
// never changes its input.
func (f *Filter) Apply(s *Scratch, in *record.Record) (bool, error) {
	if s.e == nil {
		s.e = getEnv()
	}
	return f.keep(s.e, in)
}

func (f *Filter) keep(e *env, in *record.Record) (bool, error) {
	var buf [1]int
	kept, err := e.decide(in, f.conds[:], f.cond.p.Fields(), buf[:0])
	return err == nil && len(kept) > 0, err
}

// appendPassed appends in itself as an output. The runtime takes the
// reference off a record before a transform sees it and attaches the
// outputs' own (see package transform), so in carries none.
func appendPassed(out []record.Record, in *record.Record) []record.Record {
	return append(out, *in)
}
