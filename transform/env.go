package transform

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weir-etl/weir/record"
)

// env is the state of one goroutine's evaluations: the frame, the fields a
// condition looked up, the object a map changes, and the boxed timestamp,
// reused from one record to the next. Envs are pooled: building them for
// each record would cost more than evaluating a small condition.
type env struct {
	f     frame
	vals  []record.Value
	found []bool
	obj   record.Obj
	slots []fieldSlot
	// scratch holds the bytes of the strings the evaluations of one record
	// build (see stringValue in fast.go).
	scratch []byte
	// slab is where a map writes the values of the records it changed:
	// each takes the piece after the one before, so that a new value costs
	// no allocation of its own (see written). slab[:used] belongs to those
	// records.
	slab []byte
	used int

	// Boxing a time allocates, so the boxed timestamp is kept for as long as
	// records carry the same one, which is common (a batch's records share
	// a read time).
	ts    time.Time
	tsVal record.Value
}

// maxScratch is the largest scratch buffer a pooled env keeps.
const maxScratch = 64 << 10

var envPool = sync.Pool{New: func() any { return new(env) }}

func getEnv() *env { return envPool.Get().(*env) }

func putEnv(e *env) {
	// Nothing of the record may outlive its evaluation in a pooled env.
	e.f = frame{lets: e.f.lets[:0], loops: e.f.loops[:0]}
	clear(e.vals)
	clear(e.slots)
	e.obj.Reset(nil)
	e.scratch = e.scratch[:0]
	if cap(e.scratch) > maxScratch {
		e.scratch = nil // one record's long strings are not kept for the next
	}
	envPool.Put(e)
}

func (e *env) timestamp(r *record.Record) record.Value {
	if e.tsVal.Kind() != record.Time || !e.ts.Equal(r.Time) || e.ts.Location() != r.Time.Location() {
		e.ts, e.tsVal = r.Time, record.TimeValue(r.Time)
	}
	return e.tsVal
}

// frameFor readies e's frame for r, reading fields from obj (nil: from a
// lookup).
func (e *env) frameFor(r *record.Record, obj *record.Obj) *frame {
	f := &e.f
	f.r, f.obj, f.e = r, obj, e
	f.names, f.vals, f.found, f.slots = nil, nil, nil, nil
	f.lets, f.loops = f.lets[:0], f.loops[:0]
	return f
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

// slotsFor returns n empty field slots.
func (e *env) slotsFor(n int) []fieldSlot {
	if cap(e.slots) < n {
		e.slots = make([]fieldSlot, n)
	}
	e.slots = e.slots[:n]
	clear(e.slots)
	return e.slots
}

// decide evaluates the conditions conds against r, appending the index of
// each that holds to dst, after reading once the union of the fields they
// read (without decoding the rest of the value, see record.Lookup). It stops
// at the first record error.
func (e *env) decide(r *record.Record, conds []*Expr, fields []string, n needs, dst []int) ([]int, error) {
	f := e.frameFor(r, nil)
	if len(fields) > 0 {
		if cap(e.vals) < len(fields) {
			e.vals = make([]record.Value, len(fields))
			e.found = make([]bool, len(fields))
		}
		vals, found := e.vals[:len(fields)], e.found[:len(fields)]
		if err := r.Lookup(fields, vals, found); err != nil {
			return dst, fmt.Errorf("transform: %w", err)
		}
		f.names, f.vals, f.found = fields, vals, found
	}
	for i, c := range conds {
		ok, err := c.condition(f)
		if err != nil {
			return dst, err
		}
		if ok {
			dst = append(dst, i)
		}
	}
	return dst, nil
}

// eval evaluates x in f, naming x in a record error.
func (x *Expr) eval(f *frame) (record.Value, error) {
	v, err := x.root(f)
	if err != nil {
		return v, x.recordError(err)
	}
	return v, nil
}

// recordError wraps an evaluation error with the expression it came from.
func (x *Expr) recordError(err error) error {
	var ee *evalError
	if errors.As(err, &ee) {
		return fmt.Errorf("transform: %s: expression %q: %s", x.what, x.src, ee.msg)
	}
	if err == errChain {
		return fmt.Errorf("transform: %s: expression %q: optional chain outside ?. ended", x.what, x.src)
	}
	return fmt.Errorf("transform: %s: expression %q: %w", x.what, x.src, err)
}

// condition evaluates a condition. A result that is not a bool is a record
// error: a condition that is neither true nor false cannot be decided.
func (x *Expr) condition(f *frame) (bool, error) {
	v, err := x.eval(f)
	if err != nil {
		return false, err
	}
	if v.Kind() != record.Bool {
		return false, fmt.Errorf("transform: %s: expression %q gave %s, not a bool", x.what, x.src, describe(v))
	}
	return v.Bool(), nil
}

func describe(v record.Value) string {
	if v.IsNull() {
		return "null"
	}
	return typeName(v) + " " + show(v)
}
