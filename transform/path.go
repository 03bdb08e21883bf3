package transform

import (
	"fmt"
	"strings"
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

// set stores v at p in m, creating the objects on the way. A field on the way
// that holds something other than an object is a record error: overwriting it
// would silently destroy data.
func (p path) set(m map[string]any, v any) error {
	for i, seg := range p[:len(p)-1] {
		next, ok := m[seg]
		if !ok || next == nil {
			nm := make(map[string]any, 1)
			m[seg] = nm
			m = nm
			continue
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("transform: cannot set %s: %s is %s, not an object", p, p[:i+1], kindOf(next))
		}
		m = nm
	}
	m[p[len(p)-1]] = v
	return nil
}

// remove deletes the field at p from m and returns its value. A missing field,
// or a path through something that is not an object, removes nothing.
func (p path) remove(m map[string]any) (any, bool) {
	for _, seg := range p[:len(p)-1] {
		nm, ok := m[seg].(map[string]any)
		if !ok {
			return nil, false
		}
		m = nm
	}
	last := p[len(p)-1]
	v, ok := m[last]
	if ok {
		delete(m, last)
	}
	return v, ok
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case float64, float32, int, int64, int32:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
