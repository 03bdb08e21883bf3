package reference

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/config"
)

// validator checks a value against the JSON Schema keywords Schema writes
// (a naive reference of draft-07 for that subset): type, properties,
// additionalProperties, required, propertyNames, enum, const, pattern,
// minimum, items, anyOf, allOf, if/then and $ref into definitions. It
// fails on any other keyword, so that the schema cannot grow one the test
// does not check.
type validator struct {
	root map[string]any
}

var known = map[string]bool{"$schema": true, "$id": true, "title": true, "description": true, "default": true, "definitions": true,
	"type": true, "properties": true, "additionalProperties": true, "required": true, "propertyNames": true, "enum": true,
	"const": true, "pattern": true, "minimum": true, "items": true, "anyOf": true, "allOf": true, "if": true, "then": true, "$ref": true,
	"defaultSnippets": true} // an editor's completions: no constraint

func (v *validator) check(s map[string]any, x any, at string) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }
	for k := range s {
		if !known[k] {
			bad("the schema uses %q, which this check does not know", k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		def := v.root["definitions"].(map[string]any)[strings.TrimPrefix(ref, "#/definitions/")]
		if def == nil {
			bad("$ref %s names nothing", ref)
			return errs
		}
		errs = append(errs, v.check(def.(map[string]any), x, at)...)
	}
	if t, ok := s["type"].(string); ok && !hasType(x, t) {
		bad("%v is not of type %s", x, t)
		return errs
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(x) {
		bad("%v is not %v", x, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, o := range e {
			found = found || fmt.Sprint(o) == fmt.Sprint(x)
		}
		if !found {
			bad("%v is not one of %v", x, e)
		}
	}
	if p, ok := s["pattern"].(string); ok {
		if str, isStr := x.(string); isStr && !regexp.MustCompile(p).MatchString(str) {
			bad("%q does not match %s", str, p)
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if f, isNum := x.(float64); isNum && f < m {
			bad("%v is below %v", f, m)
		}
	}
	if obj, ok := x.(map[string]any); ok {
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				bad("%s is required", r)
			}
		}
		for k, val := range obj {
			if pn, ok := s["propertyNames"].(map[string]any); ok {
				errs = append(errs, v.check(pn, k, at+"."+k)...)
			}
			if ps, ok := props[k]; ok {
				errs = append(errs, v.check(ps.(map[string]any), val, at+"."+k)...)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					bad("%s is not allowed", k)
				}
			case map[string]any:
				errs = append(errs, v.check(ap, val, at+"."+k)...)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		for i, it := range asList(x) {
			errs = append(errs, v.check(items, it, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	if alts := asList(s["anyOf"]); len(alts) > 0 {
		ok := false
		for _, sub := range alts {
			ok = ok || len(v.check(sub.(map[string]any), x, at)) == 0
		}
		if !ok {
			bad("%v matches none of anyOf", x)
		}
	}
	for _, sub := range asList(s["allOf"]) {
		sm := sub.(map[string]any)
		if cond, ok := sm["if"].(map[string]any); ok {
			if len(v.check(cond, x, at)) == 0 {
				errs = append(errs, v.check(sm["then"].(map[string]any), x, at)...)
			}
			continue
		}
		errs = append(errs, v.check(sm, x, at)...)
	}
	return errs
}

func asList(x any) []any { l, _ := x.([]any); return l }

func hasType(x any, t string) bool {
	switch t {
	case "object":
		_, ok := x.(map[string]any)
		return ok
	case "array":
		_, ok := x.([]any)
		return ok
	case "string":
		_, ok := x.(string)
		return ok
	case "boolean":
		_, ok := x.(bool)
		return ok
	case "number":
		_, ok := x.(float64)
		return ok
	case "integer":
		f, ok := x.(float64)
		return ok && f == math.Trunc(f)
	}
	return false
}

// fromYAML reads a pipeline file as the JSON values a schema validator sees.
func fromYAML(t *testing.T, text string) any {
	t.Helper()
	var x any
	if err := yaml.Unmarshal([]byte(text), &x); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The schema accepts the pipelines weir accepts (the examples, and a file
// that uses every kind of value, ${NAME} included) and refuses, at the
// right place, what the loader refuses: an unknown key or type, a duration
// without a unit, a size that is not one, a value of the wrong type.
func TestSchemaAgreesWithTheLoader(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	v := &validator{root: root}
	examples, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	var good []string
	for _, e := range examples {
		if strings.HasSuffix(e, "_test.yaml") {
			continue
		}
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		good = append(good, string(data))
	}
	if len(good) < 2 {
		t.Fatalf("only %d examples", len(good))
	}
	const base = `
sources:
  in: { type: file, paths: [a], data_dir: s, max_line_bytes: 200MiB, poll_interval: 1s, max_in_flight_bytes: 1024 }
  k:
    type: kafka
    brokers: ["${B}"]
    group: g
    topics: [t]
    tls:
      enabled: ${TLS}
    fetch_max_bytes: 1MB
transforms:
  f: { type: filter, inputs: [in], condition: 'x > 1' }
  r: { type: route, inputs: [f, k], outputs: { a: 'true' } }
sinks:
  out: { type: file, inputs: [r.a], path: o, batch: { max_age: 2s, max_bytes: 8MiB }, on_failure: dead_letter, dead_letter: dl, template_time: field, template_time_field: ts }
  dl:
    type: postgres
    url: "postgres://x@h/db"
    table: t
    columns: [{ name: id, type: bigint }]
    max_conns: ${N}
checkpoint: { commit_interval: 2s, max_in_flight_bytes: 1.5GiB }
metrics: { address: "off" }
`
	// The loader takes it too.
	env := map[string]string{"B": "127.0.0.1:9092", "TLS": "true", "N": "4", "PGPASSWORD": "x"}
	if _, err := config.ParseWith("base.yaml", []byte(base), config.Options{Offline: true, Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}); err != nil {
		t.Fatalf("the loader refuses the base pipeline: %v", err)
	}
	good = append(good, base)
	for i, g := range good {
		if errs := v.check(root, fromYAML(t, g), "file"); len(errs) > 0 {
			t.Errorf("pipeline %d is refused:\n%s", i, strings.Join(errs, "\n"))
		}
	}
	for change, want := range map[string]string{
		"paths: [a]":                            "file.sources.in: colour is not allowed",
		"poll_interval: 1s":                     `file.sources.in.poll_interval: 5 matches none of anyOf`,
		"max_line_bytes: 200MiB":                `file.sources.in.max_line_bytes: lots matches none of anyOf`,
		"type: filter":                          `file.transforms.f.type: filtre is not one of`,
		"on_failure: dead_letter":               `file.sinks.out.on_failure: retry is not one of`,
		"max_conns: ${N}":                       `file.sinks.dl.max_conns: many matches none of anyOf`,
		"columns: [{ name: id, type: bigint }]": `file.sinks.dl.columns[0]: colour is not allowed`,
		"metrics: { address: \"off\" }":         `file.metrics: port is not allowed`,
	} {
		bad := strings.Replace(base, change, map[string]string{
			"paths: [a]":                            "paths: [a], colour: red",
			"poll_interval: 1s":                     "poll_interval: 5",
			"max_line_bytes: 200MiB":                "max_line_bytes: lots",
			"type: filter":                          "type: filtre",
			"on_failure: dead_letter":               "on_failure: retry",
			"max_conns: ${N}":                       "max_conns: many",
			"columns: [{ name: id, type: bigint }]": "columns: [{ name: id, type: bigint, colour: red }]",
			"metrics: { address: \"off\" }":         "metrics: { address: \"off\", port: 1 }",
		}[change], 1)
		errs := strings.Join(v.check(root, fromYAML(t, bad), "file"), "\n")
		if !strings.Contains(errs, want) {
			t.Errorf("with %q the schema says:\n%s\nwant %q", change, errs, want)
		}
	}
}
