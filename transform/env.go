package transform

import (
	"fmt"
	"sync"

	"github.com/weir-etl/weir/internal/cacheline"
	"github.com/weir-etl/weir/lang"
	"github.com/weir-etl/weir/record"
)

// env is the state of one goroutine's evaluations: the language's Env, the
// fields a condition looked up, the object a map changes, and the slab the
// map's output is cut from, reused from one record to the next. Envs are
// pooled: building them for each record would cost more than evaluating a
// small condition.
type env struct {
	_     cacheline.Pad // written for every record, beside other workers' envs
	lang  *lang.Env
	vals  []record.Value
	found []bool
	obj   record.Obj
	// slab is where a map writes the values of the records it changed:
	// each takes the piece after the one before, so that a new value costs
	// no allocation of its own (see written). slab[:used] belongs to those
	// records.
	slab []byte
	used int
	_    cacheline.Pad
}

var envPool = sync.Pool{New: func() any { return &env{lang: lang.NewEnv()} }}

func getEnv() *env { return envPool.Get().(*env) }

func putEnv(e *env) {
	// Nothing of the record may outlive its evaluation in a pooled env.
	e.lang.Release()
	clear(e.vals)
	e.obj.Reset(nil)
	envPool.Put(e)
}

// slabSize is the size of the arrays the values a map writes are cut from:
// large enough that allocating one is rare (a few hundred small records
// share it), small enough that a record kept long after the others keeps
// little memory alive with it.
const slabSize = 16 << 10

// written returns o written out, in bytes the record may keep: a piece of
// e's slab, with no room after it (so that nothing appended to it can
// reach the next piece), or an array of its own when the slab has no room.
// size is what o is expected to take.
func (e *env) written(o *record.Obj, size int) []byte {
	if len(e.slab)-e.used < size {
		if size > slabSize/4 { // a large value: an array of its own
			out := o.AppendJSON(make([]byte, 0, size))
			return out[:len(out):len(out)]
		}
		e.slab, e.used = make([]byte, slabSize), 0
	}
	free := e.slab[e.used:e.used:len(e.slab)]
	out := o.AppendJSON(free)
	if cap(out) == cap(free) { // written in the slab, not outgrown
		e.used += len(out)
	}
	return out[:len(out):len(out)]
}

// decide evaluates the conditions conds against r, appending the index of
// each that holds to dst, after reading once the union of the fields they
// read (without decoding the rest of the value, see record.Lookup). It stops
// at the first record error.
func (e *env) decide(r *record.Record, conds []*Expr, fields []string, dst []int) ([]int, error) {
	if len(fields) > 0 {
		if cap(e.vals) < len(fields) {
			e.vals = cacheline.Make[record.Value](len(fields))
			e.found = cacheline.Make[bool](len(fields))
		}
		vals, found := e.vals[:len(fields)], e.found[:len(fields)]
		if err := r.Lookup(fields, vals, found); err != nil {
			return dst, fmt.Errorf("transform: %w", err)
		}
		e.lang.BindLookup(r, fields, vals, found)
	} else {
		e.lang.BindLookup(r, nil, nil, nil)
	}
	for i, c := range conds {
		ok, err := e.lang.Condition(c.p)
		if err != nil {
			return dst, c.recordError(err)
		}
		if ok {
			dst = append(dst, i)
		}
	}
	return dst, nil
}

// eval evaluates x over the record bound to e.
func (e *env) eval(x *Expr) (record.Value, error) {
	v, err := e.lang.Eval(x.p)
	if err != nil {
		return v, x.recordError(err)
	}
	return v, nil
}
