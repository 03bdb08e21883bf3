package lang

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weir-etl/weir/internal/cacheline"
	"github.com/weir-etl/weir/record"
)

// node evaluates one syntax node.
type node func(f *frame) (record.Value, error)

// frame is the state of one evaluation: the record, where its fields come
// from, and the let variables, loops and argument stack of the expression.
type frame struct {
	r *record.Record
	// Fields come from obj (a map, whose earlier steps changed it) or, for
	// a condition, from names/vals (looked up in the record's bytes).
	obj   *record.Obj
	names []string
	vals  []record.Value
	found []bool
	// slots hold the fields the programs of one Fields read, each looked
	// up once per record; empty when the programs share none.
	slots []fieldSlot
	lets  []record.Value
	loops []loop
	args  []record.Value // the arguments of calls of more than three
	env   *Env
}

// loop is the state of a predicate's iteration (#, #index, #key, #acc).
type loop struct {
	item  record.Value
	key   string
	index int
	acc   record.Value
}

// fieldSlot is a field as read in this record, once state is not slotEmpty.
type fieldSlot struct {
	v     record.Value
	i     int64 // v's integer form, with slotInt
	state uint8
}

const (
	slotEmpty  = iota // not read yet
	slotRead          // v is the field
	slotInt           // v is the field, and i its integer form
	slotNotInt        // v is the field, and it has no integer form
)

// Fields numbers the top-level fields that several programs read (the set
// expressions of one map), so that each is looked up once per record and an
// integer parsed once, however many of them read it. A nil *Fields numbers
// nothing.
type Fields struct{ names []string }

// Slot returns the slot of name, or -1.
func (s *Fields) Slot(name string) int {
	if s == nil {
		return -1
	}
	return slices.Index(s.names, name)
}

// Len returns how many fields are numbered.
func (s *Fields) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

func (s *Fields) of(name string) int {
	if s == nil {
		return -1
	}
	if i := slices.Index(s.names, name); i >= 0 {
		return i
	}
	s.names = append(s.names, name)
	return len(s.names) - 1
}

// fieldIn returns the field name, whose slot is k (-1 for none).
func (f *frame) fieldIn(k int, name string) record.Value {
	if uint(k) < uint(len(f.slots)) {
		s := &f.slots[k]
		if s.state == slotEmpty {
			s.v, s.state = f.field(name), slotRead
		}
		return s.v
	}
	return f.field(name)
}

// intFieldIn returns the integer form of the field name, whose slot is k
// (-1 for none), as record.Value.IntForm gives it.
func (f *frame) intFieldIn(k int, name string) (int64, bool) {
	if uint(k) < uint(len(f.slots)) {
		s := &f.slots[k]
		switch s.state {
		case slotEmpty:
			s.v = f.field(name)
			fallthrough
		case slotRead:
			var ok bool
			if s.i, ok = s.v.IntForm(); ok {
				s.state = slotInt
			} else {
				s.state = slotNotInt
			}
		}
		return s.i, s.state == slotInt
	}
	if f.obj == nil {
		// Read in place: a Value returned in registers and spilled to be
		// passed on is copied with loads wider than the stores that spilled
		// it, which stalls (store forwarding) on every record.
		return record.IntFormIn(f.lookedUp(name))
	}
	return f.field(name).IntForm()
}

// field returns the field name: null if the record has none.
func (f *frame) field(name string) record.Value {
	if f.obj != nil {
		v, _ := f.obj.Get(name)
		return v
	}
	return *f.lookedUp(name)
}

// null is what lookedUp points at for a field the record does not have. It
// is only ever read.
var null record.Value

// lookedUp returns where the value of the field name, looked up by
// BindLookup's caller, lies: null if the record has none.
func (f *frame) lookedUp(name string) *record.Value {
	for k, n := range f.names {
		if n == name {
			return &f.vals[k]
		}
	}
	return &null
}

// root is $: the record's value as an object.
func (f *frame) root() record.Value {
	if f.obj != nil {
		return record.ObjectValue(f.obj)
	}
	if f.r == nil {
		return record.Value{}
	}
	v, err := record.ParseValue(f.r.Bytes())
	if err != nil {
		return record.Value{}
	}
	return v
}

// errChain ends an optional chain (user?.name) at a null: the whole chain
// is null.
var errChain = errors.New("optional chain ended")

// ErrDrop is what evaluating drop() returns: the record is to be dropped
// (a map drops it as a filter would).
var ErrDrop = errors.New("lang: drop()")

// EvalError is a record error: the expression could not give a value for
// this record. Func names the function or operator that refused, when one
// did.
type EvalError struct {
	Func string
	Msg  string
}

func (e *EvalError) Error() string { return e.Msg }

func errorf(format string, a ...any) error { return &EvalError{Msg: fmt.Sprintf(format, a...)} }

// fnError is a record error of function name.
func fnError(name, format string, a ...any) error {
	return &EvalError{Func: name, Msg: name + ": " + fmt.Sprintf(format, a...)}
}

// Env is the state of one goroutine's evaluations, reused from one record
// to the next: the frame, the buffer the strings an evaluation builds are
// appended to, and the boxed timestamp. An Env is not safe for concurrent
// use; the values an evaluation gives live until the next Reset.
type Env struct {
	_ cacheline.Pad // written for every record, beside other workers' Envs
	f frame
	// scratch holds the bytes of the strings the evaluations of one record
	// build (see stringValue in fast.go).
	scratch []byte
	// Boxing a time allocates, so the boxed timestamp is kept for as long
	// as records carry the same one, which is common (a batch's records
	// share a read time).
	ts    time.Time
	tsVal record.Value
	// now is the clock of now(); nil means time.Now.
	now func() time.Time
	_   cacheline.Pad
}

// maxScratch is the largest scratch buffer an Env keeps between records.
const maxScratch = 64 << 10

// NewEnv returns an Env.
func NewEnv() *Env { e := &Env{}; e.f.env = e; return e }

// SetClock sets the clock now() reads (for tests and weir expr --now).
func (e *Env) SetClock(now func() time.Time) { e.now = now }

// Bind readies e to evaluate programs over r, reading fields from obj (a
// map's object, with its changes). It forgets the values of the record
// before.
func (e *Env) Bind(r *record.Record, obj *record.Obj) {
	e.reset()
	e.f.r, e.f.obj = r, obj
}

// BindLookup readies e to evaluate conditions over r whose fields names
// were looked up (record.Lookup) into vals and found.
func (e *Env) BindLookup(r *record.Record, names []string, vals []record.Value, found []bool) {
	e.reset()
	e.f.r, e.f.names, e.f.vals, e.f.found = r, names, vals, found
}

// Slots gives the fields numbered by fs a slot each for this record.
func (e *Env) Slots(fs *Fields) {
	n := fs.Len()
	if cap(e.f.slots) < n {
		e.f.slots = cacheline.Make[fieldSlot](n)
	}
	e.f.slots = e.f.slots[:n]
	clear(e.f.slots)
}

// Forget forgets the value read in slot k (Fields.Slot), after the field
// was set: a later program reads the new value.
func (e *Env) Forget(k int) {
	if uint(k) < uint(len(e.f.slots)) {
		e.f.slots[k].state = slotEmpty
	}
}

func (e *Env) reset() {
	f := &e.f
	f.r, f.obj, f.names, f.vals, f.found = nil, nil, nil, nil, nil
	clear(f.lets)
	f.lets, f.loops, f.args = f.lets[:0], f.loops[:0], f.args[:0]
	clear(f.slots)
	f.slots = f.slots[:0]
	e.scratch = e.scratch[:0]
	if cap(e.scratch) > maxScratch {
		e.scratch = nil // one record's long strings are not kept for the next
	}
}

// Release drops every reference to the last record, for an Env kept in a
// pool.
func (e *Env) Release() {
	e.reset()
	e.f.env = e
}

func (e *Env) timestamp(r *record.Record) record.Value {
	if r == nil {
		return record.Value{}
	}
	if e.tsVal.Kind() != record.Time || !e.ts.Equal(r.Time) || e.ts.Location() != r.Time.Location() {
		e.ts, e.tsVal = r.Time, record.TimeValue(r.Time)
	}
	return e.tsVal
}

func (e *Env) clock() time.Time {
	if e.now != nil {
		return e.now()
	}
	return time.Now()
}

// Eval evaluates p over the record bound last. A record error is an
// *EvalError wrapped with the expression; drop() gives ErrDrop.
func (e *Env) Eval(p *Program) (record.Value, error) {
	e.f.env = e
	v, err := p.root(&e.f)
	if err != nil {
		return v, p.recordError(err)
	}
	return v, nil
}

// Condition evaluates a condition: a result that is not a bool is a record
// error, since a condition that is neither true nor false cannot be decided.
func (e *Env) Condition(p *Program) (bool, error) {
	if p.cond != nil {
		e.f.env = e
		if b, ok := p.cond(&e.f); ok {
			return b, nil
		}
	}
	v, err := e.Eval(p)
	if err != nil {
		return false, err
	}
	if v.Kind() != record.Bool {
		return false, &RecordError{Expr: p.src, Err: &EvalError{Msg: fmt.Sprintf("gave %s, not a bool", describe(v))}}
	}
	return v.Bool(), nil
}

// RecordError is an evaluation that failed on a record: the expression and
// why.
type RecordError struct {
	Expr string
	Err  error // an *EvalError
}

func (e *RecordError) Error() string { return fmt.Sprintf("expression %q: %v", e.Expr, e.Err) }

func (e *RecordError) Unwrap() error { return e.Err }

func (p *Program) recordError(err error) error {
	if err == ErrDrop {
		return err
	}
	if err == errChain {
		err = errorf("optional chain outside ?. ended")
	}
	return &RecordError{Expr: p.src, Err: err}
}

func describe(v record.Value) string {
	if v.IsNull() {
		return "null"
	}
	return typeName(v) + " " + show(v)
}
