package transform

import (
	"fmt"

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
}

type mapSet struct {
	field path
	x     *Expr
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
		x, err := Compile(fmt.Sprintf("map set %q", a.Field), a.Expr)
		if err != nil {
			return nil, err
		}
		m.set = append(m.set, mapSet{p, x})
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
	for _, s := range m.set {
		v, err := s.x.eval(f)
		if err != nil {
			return out, err
		}
		// A value the expression built, or an object of the record that it
		// changed, must not be shared by two fields: changing one would
		// change both.
		if err := s.field.set(o, own(v)); err != nil {
			return out, err
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
		in.Replace(o.AppendJSON(make([]byte, 0, len(in.Bytes())+32)), true)
	}
	return appendPassed(out, in), nil
}
