package transform

import "strings"

// The built-in transform types, registered as any other transform is: a
// configuration struct whose tags describe it and a build function.

// FilterOptions are a filter's options.
type FilterOptions struct {
	Condition Condition `yaml:"condition" doc:"Keep the record when this expression is true; anything else, null included, is a record error. Required."`
}

// MapOptions are a map's options; it needs at least one.
type MapOptions struct {
	Set    Pairs[Expression] `yaml:"set" doc:"field: expression, in order; each sees the fields the ones before it set. Dotted fields reach into objects; $ is the whole value (set: {$: 'compact($)'}). An expression that calls drop() drops the record."`
	Rename Pairs[string]     `yaml:"rename" doc:"old: new field names, applied after every set. Renaming a missing field does nothing."`
	Delete []string          `yaml:"delete" doc:"Fields to remove, after the renames. Deleting a missing field does nothing."`
}

// FlatMapOptions are a flat_map's options.
type FlatMapOptions struct {
	Explode Expression `yaml:"explode" doc:"An array expression: each element becomes a record (an object element its fields; any other element stored under as). Null or missing drops the record. Required."`
	As      string     `yaml:"as" doc:"The field a non-object element is stored under, in a copy of the parent's fields. Default: explode when it is a field path, value otherwise."`
}

// RouteOptions are a route's options.
type RouteOptions struct {
	Outputs Pairs[Condition] `yaml:"outputs" doc:"output name: condition, in order; a record goes to every output whose condition holds, and downstream an output is named <route>.<output>. Required."`
}

func init() {
	Register(Def[FilterOptions]{Name: "filter", Doc: "keeps the records for which a condition is true",
		Build: func(_ string, c *FilterOptions) (Transform, error) {
			if c.Condition == "" {
				return nil, fieldMissing("condition", `a condition, like condition: "amount > 100"`)
			}
			return NewFilter(string(c.Condition))
		}})
	Register(Def[MapOptions]{Name: "map", Doc: "sets, renames and deletes fields, changing nothing else of the record",
		Build: func(_ string, c *MapOptions) (Transform, error) {
			if len(c.Set)+len(c.Rename)+len(c.Delete) == 0 {
				return nil, &FieldError{Msg: "missing: a map needs set, rename or delete"}
			}
			var cfg MapConfig
			for _, p := range c.Set {
				cfg.Set = append(cfg.Set, Assignment{Field: p.Key, Expr: string(p.Value)})
			}
			for _, p := range c.Rename {
				cfg.Rename = append(cfg.Rename, Rename{From: p.Key, To: p.Value})
			}
			cfg.Delete = c.Delete
			return NewMap(cfg)
		}})
	Register(Def[FlatMapOptions]{Name: "flat_map", Doc: "turns each element of an array into a record", Expands: true,
		Build: func(_ string, c *FlatMapOptions) (Transform, error) {
			if c.Explode == "" {
				return nil, fieldMissing("explode", "an array expression, like explode: items")
			}
			return NewFlatMap(FlatMapConfig{Explode: string(c.Explode), As: c.As})
		}})
	Register(Def[RouteOptions]{Name: "route", Doc: "sends each record to the outputs whose conditions it meets",
		BuildRouter: func(_ string, c *RouteOptions) (Router, error) {
			if len(c.Outputs) == 0 {
				return nil, &FieldError{Field: "outputs", Msg: "missing: a route needs outputs, a mapping of output name: condition"}
			}
			var outs []RouteOutput
			for _, p := range c.Outputs {
				if err := CheckOutputName(p.Key); err != nil {
					return nil, &FieldError{Field: "outputs." + p.Key, Msg: strings.TrimPrefix(err.Error(), "transform: ")}
				}
				outs = append(outs, RouteOutput{Name: p.Key, Condition: string(p.Value)})
			}
			return NewRoute(outs)
		},
		Outputs: func(c *RouteOptions) []string {
			var names []string
			for _, p := range c.Outputs {
				names = append(names, p.Key)
			}
			return names
		}})
}

// FieldError is a problem with one option of a transform: Field is its
// name (as in connector.FieldError), so that the loader reports it there.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return "transform: " + e.Msg
	}
	return "transform: " + e.Field + ": " + e.Msg
}

func fieldMissing(field, want string) error {
	return &FieldError{Field: field, Msg: "missing: the transform needs " + want} // the loader names the transform
}
