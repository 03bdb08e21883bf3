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

// Map changes a record's fields ("map").
type Map struct {
	set    []mapSet
	rename []mapRename
	delete []path
	needs  needs
}

type mapSet struct {
	field path
	x     *Expr
}

type mapRename struct{ from, to path }

// NewMap compiles cfg. Fields are dotted paths; the set expressions may give
// any type.
func NewMap(cfg MapConfig) (*Map, error) {
	m := &Map{needs: needFields}
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
		m.needs |= x.needs
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
// partly changed; the runtime rejects it.
func (m *Map) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	fields, err := in.Fields()
	if err != nil {
		return out, fmt.Errorf("transform: map: %w", err)
	}
	in.MarkChanged()
	if len(m.set) > 0 {
		e := getEnv()
		defer putEnv(e)
		for _, s := range m.set {
			v, err := e.value(s.x, in, fields)
			if err != nil {
				return out, err
			}
			// A container from the record itself (set copy: user) must not
			// be shared by two fields: changing one would change both.
			if err := s.field.set(fields, record.CopyValue(v)); err != nil {
				return out, err
			}
		}
	}
	for _, r := range m.rename {
		if v, ok := r.from.remove(fields); ok {
			if err := r.to.set(fields, v); err != nil {
				return out, err
			}
		}
	}
	for _, p := range m.delete {
		p.remove(fields)
	}
	return appendPassed(out, in), nil
}
