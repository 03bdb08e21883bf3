package transform

import (
	"fmt"

	"github.com/weir-etl/weir/lang"
	"github.com/weir-etl/weir/record"
)

// Assignment sets Field (a dotted path) to the value of Expr.
type Assignment struct {
	Field string
	Expr  string
}

// Rename moves the field at From to To (both dotted paths).
type Rename struct {
	From, To string
}

// MapConfig configures a map transform. Its steps run in a fixed order: every
// Set in order, then every Rename in order, then every Delete. Each Set sees
// the fields as the earlier ones left them, so `a: 1` then `b: a + 1` sets b
// to 2; renames and deletes run last so that set expressions can still read a
// field that is about to be renamed or removed.
type MapConfig struct {
	Set    []Assignment
	Rename []Rename
	Delete []string
}

// Map changes a record's fields ("map"). Only the fields it is told to
// change are written anew; every other member of the value is copied byte
// for byte, in its place (see record.Obj).
type Map struct {
	set    []mapSet
	rename []mapRename
	delete []path
	fields lang.Fields // the fields the set expressions read
}

type mapSet struct {
	field path // nil: $, the whole value
	x     *Expr
	// forget is the slot of the top-level field that setting field changes
	// (see fieldSlots), or -1 when no expression reads it.
	forget int
}

type mapRename struct{ from, to path }

// NewMap compiles cfg. Fields are dotted paths; the set expressions may give
// any type.
func NewMap(cfg MapConfig) (*Map, error) {
	m := &Map{}
	for _, a := range cfg.Set {
		var p path
		if a.Field != "$" {
			var err error
			if p, err = parsePath(a.Field); err != nil {
				return nil, err
			}
		}
		want := lang.Type(0)
		if p == nil {
			want = lang.TObject
		}
		x, err := compileWith(fmt.Sprintf("map set %q", a.Field), a.Expr, lang.Options{Fields: &m.fields, Want: want})
		if err != nil {
			return nil, err
		}
		m.set = append(m.set, mapSet{field: p, x: x})
	}
	for i := range m.set {
		m.set[i].forget = -1
		if f := m.set[i].field; f != nil {
			m.set[i].forget = m.fields.Slot(f[0])
		}
	}
	targets := make(map[string]string)
	for _, r := range cfg.Rename {
		from, err := parsePath(r.From)
		if err != nil {
			return nil, err
		}
		to, err := parsePath(r.To)
		if err != nil {
			return nil, err
		}
		if prev, dup := targets[r.To]; dup {
			return nil, fmt.Errorf("transform: map renames both %q and %q to %q; the second would overwrite the first", prev, r.From, r.To)
		}
		targets[r.To] = r.From
		m.rename = append(m.rename, mapRename{from, to})
	}
	for _, d := range cfg.Delete {
		p, err := parsePath(d)
		if err != nil {
			return nil, err
		}
		m.delete = append(m.delete, p)
	}
	if len(m.set)+len(m.rename)+len(m.delete) == 0 {
		return nil, fmt.Errorf("transform: map has nothing to do: give it set, rename or delete")
	}
	return m, nil
}

var _ InPlace = (*Map)(nil)

// Process applies the map to in and appends it to out. A record whose value is
// not a JSON object, or whose expression fails, is an error and in is left
// as it was; the runtime rejects it.
func (m *Map) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	e := getEnv()
	defer putEnv(e)
	keep, err := m.apply(e, in)
	if err != nil || !keep {
		return out, err
	}
	return appendPassed(out, in), nil
}

// Apply changes in where it lies, as Process changes the output it appends
// (see InPlace), with the caller's evaluation state.
func (m *Map) Apply(s *Scratch, in *record.Record) (bool, error) {
	if s.e == nil {
		s.e = getEnv()
	}
	return m.apply(s.e, in)
}

// apply changes in, or reports false for a record the map drops. in is
// changed only once every field was computed: on an error it is as it was.
func (m *Map) apply(e *env, in *record.Record) (bool, error) {
	o := &e.obj
	if err := in.Index(o); err != nil {
		return false, fmt.Errorf("transform: map: %w", err)
	}
	le := e.lang
	le.Bind(in, o)
	le.Slots(&m.fields)
	replaced := false
	for i := range m.set {
		s := &m.set[i]
		v, err := le.Eval(s.x.p)
		if err != nil {
			if err == lang.ErrDrop {
				return false, nil // dropped, as a filter drops
			}
			return false, s.x.recordError(err)
		}
		if s.field == nil {
			if err := replaceRoot(o, v); err != nil {
				return false, fmt.Errorf("transform: map set $: %w", err)
			}
			replaced = true
			le.Slots(&m.fields) // every field may have changed
			continue
		}
		// A value the expression built, or an object of the record that it
		// changed, must not be shared by two fields: changing one would
		// change both.
		if err := s.field.set(o, lang.Own(v)); err != nil {
			return false, err
		}
		le.Forget(s.forget)
	}
	for _, r := range m.rename {
		if err := rename(o, r.from, r.to); err != nil {
			return false, err
		}
	}
	for _, p := range m.delete {
		p.remove(o)
	}
	if o.Changed() || replaced {
		in.Replace(e.written(o, len(in.Bytes())+32), true)
	}
	return true, nil
}

// replaceRoot makes o the object v: set: {$: ...} replaces the whole value.
func replaceRoot(o *record.Obj, v record.Value) error {
	if v.Kind() != record.Object {
		return fmt.Errorf("the value is %s, not an object: the record's value must stay an object", kindOf(v))
	}
	return o.Reset(v.AppendJSON(nil))
}
