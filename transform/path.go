package transform

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weir-etl/weir/record"
)

// A path names a field, nested fields separated by dots: "user.address.city".
// Field names that contain a dot cannot be named by a path.
type path []string

func parsePath(s string) (path, error) {
	if s == "" {
		return nil, fmt.Errorf("transform: empty field name")
	}
	p := strings.Split(s, ".")
	for _, seg := range p {
		if seg == "" {
			return nil, fmt.Errorf("transform: field %q has an empty segment: separate nested fields with single dots, as in user.address.city", s)
		}
	}
	return p, nil
}

func (p path) String() string { return strings.Join(p, ".") }

// parent returns the object holding p's last segment, creating the objects
// on the way if create is set (otherwise nil when one is missing). An object
// read from the record becomes a changed object of its parent's, so that
// the change is written out. A field on the way that holds something other
// than an object is a record error: overwriting it would silently destroy
// data.
func (p path) parent(o *record.Obj, create bool) (*record.Obj, error) {
	for i, seg := range p[:len(p)-1] {
		cur, ok := o.Get(seg)
		switch {
		case !ok || cur.IsNull():
			if !create {
				return nil, nil
			}
			n := record.NewObj()
			o.Set(seg, record.ObjectValue(n))
			o = n
		case cur.Kind() == record.Object:
			if b := cur.Built(); b != nil {
				o = b // already this record's own
				continue
			}
			n := cur.Obj()
			o.Set(seg, record.ObjectValue(n))
			o = n
		default:
			if !create {
				return nil, nil
			}
			return nil, fmt.Errorf("transform: cannot set %s: %s is %s, not an object", p, p[:i+1], kindOf(cur))
		}
	}
	return o, nil
}

// set stores v at p in o, creating the objects on the way.
func (p path) set(o *record.Obj, v record.Value) error {
	if len(p) == 1 { // a top-level field, most sets: no walk
		o.Set(p[0], v)
		return nil
	}
	par, err := p.parent(o, true)
	if err != nil {
		return err
	}
	par.Set(p[len(p)-1], v)
	return nil
}

// get returns the value at p in o.
func (p path) get(o *record.Obj) (record.Value, bool) {
	v := record.ObjectValue(o)
	for _, seg := range p {
		if v.Kind() != record.Object {
			return record.Value{}, false
		}
		var ok bool
		if v, ok = v.Get(seg); !ok {
			return v, false
		}
	}
	return v, true
}

// remove deletes the field at p from o and returns its value. A missing
// field, or a path through something that is not an object, removes nothing.
func (p path) remove(o *record.Obj) (record.Value, bool) {
	if _, ok := p.get(o); !ok {
		return record.Value{}, false
	}
	par, _ := p.parent(o, false)
	if par == nil {
		return record.Value{}, false
	}
	return par.Delete(p[len(p)-1])
}

// rename moves the field at from to to. Within one object the field keeps
// its place under its new name; across objects it is removed from one and
// set in the other.
func rename(o *record.Obj, from, to path) error {
	if _, ok := from.get(o); !ok {
		return nil
	}
	if len(from) == len(to) && slices.Equal(from[:len(from)-1], to[:len(to)-1]) {
		par, _ := from.parent(o, false)
		par.Rename(from[len(from)-1], to[len(to)-1])
		return nil
	}
	v, _ := from.remove(o)
	return to.set(o, v)
}

func kindOf(v record.Value) string {
	switch v.Kind() {
	case record.Null:
		return "null"
	case record.String:
		return "a string"
	case record.Bool:
		return "a bool"
	case record.Int, record.Float, record.Number:
		return "a number"
	case record.Array:
		return "an array"
	case record.Object:
		return "an object"
	}
	return "a " + v.Kind().String()
}
