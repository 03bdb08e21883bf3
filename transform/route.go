package transform

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weir-etl/weir/record"
)

// RouteOutput is one named output of a route and its condition.
type RouteOutput struct {
	Name      string
	Condition string
}

// Route sends each record to every output whose condition it matches
// ("route"). A record that matches none is dropped.
type Route struct {
	names  []string
	conds  []*Expr
	fields []string // the union of the conditions' fields, sorted
}

// NewRoute compiles the conditions of outputs, in order. Output names must be
// unique and may not contain a dot, since downstream components name an
// output as "<route>.<output>".
func NewRoute(outputs []RouteOutput) (*Route, error) {
	if len(outputs) == 0 {
		return nil, fmt.Errorf("transform: route has no outputs")
	}
	r := &Route{}
	seen := make(map[string]bool, len(outputs))
	for _, o := range outputs {
		if err := CheckOutputName(o.Name); err != nil {
			return nil, err
		}
		if seen[o.Name] {
			return nil, fmt.Errorf("transform: route output %q is defined twice", o.Name)
		}
		seen[o.Name] = true
		c, err := CompileCondition(fmt.Sprintf("route output %q", o.Name), o.Condition)
		if err != nil {
			return nil, err
		}
		r.names = append(r.names, o.Name)
		r.conds = append(r.conds, c)
		for _, f := range c.p.Fields() {
			if i, found := slices.BinarySearch(r.fields, f); !found {
				r.fields = slices.Insert(r.fields, i, f)
			}
		}
	}
	return r, nil
}

// CheckOutputName reports whether name can name a route output.
func CheckOutputName(name string) error {
	if name == "" {
		return fmt.Errorf("transform: route output name is empty")
	}
	if strings.Contains(name, ".") {
		return fmt.Errorf("transform: route output name %q contains a dot; downstream inputs name it as <route>.<output>, so use a name without dots", name)
	}
	return nil
}

// Outputs returns the output names in configuration order.
func (r *Route) Outputs() []string { return r.names }

// Route appends to dst the index of every output whose condition in matches.
// The fields that any condition reads are looked up once, for all of them.
func (r *Route) Route(in *record.Record, dst []int) ([]int, error) {
	n := len(dst)
	e := getEnv()
	dst, err := e.decide(in, r.conds, r.fields, dst)
	putEnv(e)
	if err != nil {
		// Route all or nothing: a record that cannot be decided for one
		// output is rejected, not half delivered.
		return dst[:n], err
	}
	return dst, nil
}
