package transform

import (
	"fmt"
	"slices"

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
	slots  fieldSlots // the fields the set expressions read
}

type mapSet struct {
	field path
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
		p, err := parsePath(a.Field)
		if err != nil {
			return nil, err
		}
		x, err := compileWith(fmt.Sprintf("map set %q", a.Field), a.Expr, wantAny, &compiler{slots: &m.slots})
		if err != nil {
			return nil, err
		}
		m.set = append(m.set, mapSet{field: p, x: x})
	}
	for i := range m.set {
		m.set[i].forget = slices.Index(m.slots.names, m.set[i].field[0])
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

// Process applies the map to in and appends it to out. A record whose value is
// not a JSON object, or whose expression fails, is an error and in is left
// as it was; the runtime rejects it.
func (m *Map) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	e := getEnv()
	defer putEnv(e)
	o := &e.obj
	if err := in.Index(o); err != nil {
		return out, fmt.Errorf("transform: map: %w", err)
	}
	f := e.frameFor(in, o)
	f.slots = e.slotsFor(len(m.slots.names))
	for i := range m.set {
		s := &m.set[i]
		v, err := s.x.root(f) // eval, written out: a call less per field
		if err != nil {
			return out, s.x.recordError(err)
		}
		// A value the expression built, or an object of the record that it
		// changed, must not be shared by two fields: changing one would
		// change both.
		if err := s.field.set(o, own(v)); err != nil {
			return out, err
		}
		if s.forget >= 0 {
			f.slots[s.forget].state = slotEmpty
		}
	}
	for _, r := range m.rename {
		if err := rename(o, r.from, r.to); err != nil {
			return out, err
		}
	}
	for _, p := range m.delete {
		p.remove(o)
	}
	if o.Changed() {
		in.Replace(e.written(o, len(in.Bytes())+32), true)
	}
	return appendPassed(out, in), nil
}
