package reference

import (
	"encoding/json"
	"strings"

	"github.com/weir-etl/weir/config"
)

// SchemaID is the schema's $id; editors use it only as a name.
const SchemaID = "https://weir-etl.github.io/schema/pipeline.json"

// Schema returns the JSON Schema (draft-07, which editors support best) of
// a pipeline file: sections, every registered source and sink type with its
// options, the transform types, with docs as descriptions and defaults. A
// component's options are chosen by its type (if/then), and unknown keys are
// errors, as they are to the loader. A value the loader would take from the
// environment (${NAME}) is accepted wherever a number, bool, duration or
// size is.
func Schema() ([]byte, error) {
	defs := map[string]any{}
	secs := map[string]Section{}
	for _, s := range Sections() {
		secs[s.Name] = s
	}
	var sources, transforms, sinks []Type
	for _, t := range Types() {
		switch t.Kind {
		case Source:
			sources = append(sources, t)
		case Transform:
			transforms = append(transforms, t)
		case Sink:
			sinks = append(sinks, t)
		}
	}
	component := func(kind string, types []Type) map[string]any {
		var names []string
		var branches []any
		for _, t := range types {
			names = append(names, t.Name)
			props := properties(secs[kind].Options)
			for k, v := range properties(t.Options) {
				props[k] = v
			}
			props["type"] = map[string]any{"const": t.Name, "description": t.Doc}
			def := kind + "." + t.Name
			defs[def] = map[string]any{"type": "object", "description": t.Doc, "properties": props, "additionalProperties": false}
			branches = append(branches, map[string]any{
				"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": t.Name}}, "required": []string{"type"}},
				"then": map[string]any{"$ref": "#/definitions/" + def},
			})
		}
		typeDoc := secs[kind].Options[0].Doc // every component's first key is type
		return map[string]any{
			"type":       "object",
			"required":   []string{"type"},
			"properties": map[string]any{"type": map[string]any{"enum": names, "description": typeDoc}},
			"allOf":      branches,
		}
	}
	defs["source"] = component(Source, sources)
	defs["transform"] = component(Transform, transforms)
	defs["sink"] = component(Sink, sinks)
	named := func(ref, doc string) map[string]any {
		return map[string]any{
			"type": "object", "description": doc,
			"propertyNames":        map[string]any{"pattern": "^[A-Za-z0-9_-]+$"},
			"additionalProperties": map[string]any{"$ref": "#/definitions/" + ref},
		}
	}
	root := map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"$id":         SchemaID,
		"title":       "weir pipeline",
		"description": "A weir pipeline file (docs/config.md).",
		"type":        "object",
		"required":    []string{"sources", "sinks"},
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$",
				"description": "The pipeline's name among several in one process (weir run -d DIR); the file's name without its extension when left out."},
			"sources":    named("source", "Where records come from, by name."),
			"transforms": named("transform", "What is done to them, by name."),
			"sinks":      named("sink", "Where they go, by name."),
			"checkpoint": object(secs["checkpoint"].Doc, secs["checkpoint"].Options),
			"metrics":    object(secs["metrics"].Doc, secs["metrics"].Options),
		},
		"additionalProperties": false,
		"definitions":          defs,
	}
	return json.MarshalIndent(root, "", "  ")
}

// object is the schema of an object with options opts.
func object(doc string, opts []config.Option) map[string]any {
	s := map[string]any{"type": "object", "properties": properties(opts), "additionalProperties": false}
	if doc != "" {
		s["description"] = doc
	}
	return s
}

func properties(opts []config.Option) map[string]any {
	props := map[string]any{}
	for _, o := range opts {
		props[o.Name] = schemaOf(o)
	}
	return props
}

// envRef matches a value the loader substitutes from the environment.
var envRef = map[string]any{"type": "string", "pattern": `\$\{`}

// durationPattern and sizePattern are what config.ParseDuration and
// config.ParseSize take.
const (
	durationPattern = `^ *(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*) *$`
	sizePattern     = `^ *[0-9]+(\.[0-9]+)? *(([kKmMgGtT][iI]?)?[bB])? *$`
)

// schemaOf is the schema of one option's value.
func schemaOf(o config.Option) map[string]any {
	var s map[string]any
	switch o.Kind {
	case config.KindString:
		s = map[string]any{"type": "string"}
		if len(o.Enum) > 0 {
			s["enum"] = o.Enum
		}
	case config.KindBool:
		s = map[string]any{"anyOf": []any{map[string]any{"type": "boolean"}, envRef}}
	case config.KindInt:
		s = map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, envRef}}
	case config.KindNumber:
		s = map[string]any{"anyOf": []any{map[string]any{"type": "number"}, envRef}}
	case config.KindDuration:
		s = map[string]any{"anyOf": []any{map[string]any{"type": "string", "pattern": durationPattern}, map[string]any{"const": 0}, envRef}}
	case config.KindSize:
		s = map[string]any{"anyOf": []any{map[string]any{"type": "integer", "minimum": 0}, map[string]any{"type": "string", "pattern": sizePattern}, envRef}}
	case config.KindList:
		s = map[string]any{"type": "array"}
		if o.Elem != nil {
			s["items"] = schemaOf(*o.Elem)
		}
	case config.KindMap:
		s = map[string]any{"type": "object"}
		if o.Elem != nil {
			s["additionalProperties"] = schemaOf(*o.Elem)
		}
	case config.KindObject:
		s = object("", o.Options)
	case config.KindExpression, config.KindCondition:
		// Editors offer the functions as completions (the YAML language
		// server reads defaultSnippets).
		s = map[string]any{"type": "string", "defaultSnippets": snippets()}
	default:
		s = map[string]any{}
	}
	if d := describe(o); d != "" {
		s["description"] = d
	}
	if o.DefaultValue != nil {
		s["default"] = o.DefaultValue
	}
	return s
}

// describe is an option's description in the schema: its doc, and its unit
// where the type does not say it.
func describe(o config.Option) string {
	d := o.Doc
	switch o.Kind {
	case config.KindDuration:
		d = strings.TrimSpace(d + " A duration: 5s, 100ms, 1h30m.")
	case config.KindSize:
		d = strings.TrimSpace(d + " A size in bytes: 1024, 64KiB, 8MiB, 8MB.")
	case config.KindExpression, config.KindCondition:
		d = strings.TrimSpace(d + " An expression (docs/expressions.md); quote one that starts with @.")
	}
	return d
}
