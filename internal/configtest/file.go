// Package configtest runs the unit tests of a pipeline configuration
// (`weir test`): a test file gives records for the pipeline's sources and
// what must come out of its transforms, route outputs and sinks, exactly or
// by conditions on fields. A test runs the pipeline in-process, with
// pipeline.Run and the configuration's real transforms, routes and failure
// policies; its sources and sinks are replaced by in-memory stand-ins, so
// that a test needs no broker, database or file and runs in milliseconds.
// docs/config.md (Testing a pipeline) describes the file.
package configtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/internal/suggest"
)

// File is a test file: the configuration it tests and its tests.
type File struct {
	Path   string // the test file
	Config string // the pipeline file, by default the test file's name without _test
	Env    map[string]string
	Tests  []Case
}

// Case is one test.
type Case struct {
	Name string
	Line int
	// Env adds to the file's environment for ${NAME} in the configuration;
	// a name given in neither is looked up in the process's.
	Env map[string]string
	// Sets edit the configuration (as weir run --set does).
	Sets []config.Set
	// Inputs are the records each source gives, by source name; a source
	// without any gives none.
	Inputs map[string][]Rec
	// Outputs are what must come out of components, by name: a transform,
	// a route output (<route>.<output>) or a sink.
	Outputs map[string]Expect
	// outputs in file order, for reports.
	order []string
	// Error, when set, is a part of the error the run must fail with.
	Error string
}

// Rec is a record of a test: its value and, when given, key, headers and
// time.
type Rec struct {
	Line  int
	Value []byte
	// Structured is set when the value was written as YAML (a mapping or
	// list): it is compared as JSON (same members, numbers of equal value,
	// any order of members), not byte for byte.
	Structured bool
	Key        *string
	Headers    [][2]string // nil: not compared
	Time       time.Time
}

// Expect is what must come out of a component.
type Expect struct {
	Line int
	// Records, when HasRecords, are the exact records, in order (without
	// order when several sources feed the component).
	Records    []Rec
	HasRecords bool
	// Count, when not nil, is how many records.
	Count *int
	// Each are conditions (weir's expressions) every record must meet.
	Each []string
}

// Name of a test file for a configuration, and back.
const testSuffix = "_test"

// TestFileOf returns the test file beside the configuration at path:
// pipeline.yaml's is pipeline_test.yaml.
func TestFileOf(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + testSuffix + ext
}

// IsTestFile reports whether path is named as a test file.
func IsTestFile(path string) bool {
	ext := filepath.Ext(path)
	return (ext == ".yaml" || ext == ".yml") && strings.HasSuffix(strings.TrimSuffix(path, ext), testSuffix)
}

// Error is a problem of a test file, at its line.
type Error struct {
	File   string
	Line   int
	Column int // of a syntax error; 0 for the others
	Msg    string
}

func (e *Error) Error() string {
	if e.Line > 0 && e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads the test file at path. config, if not empty, is the pipeline
// file it tests, overriding the file's own config key and the default.
func Load(path, configPath string) (*File, []error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []error{fmt.Errorf("configtest: %w", err)}
	}
	p := &parser{file: path}
	f := p.parse(data)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	switch {
	case configPath != "":
		f.Config = configPath
	case f.Config != "":
		if !filepath.IsAbs(f.Config) {
			f.Config = filepath.Join(filepath.Dir(path), f.Config)
		}
	default:
		ext := filepath.Ext(path)
		f.Config = strings.TrimSuffix(strings.TrimSuffix(path, ext), testSuffix) + ext
	}
	return f, nil
}

// parser reads a test file's YAML tree, collecting every problem.
type parser struct {
	file string
	errs []error
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// mapping calls f for each key of mapping n, reporting keys not in valid.
func (p *parser) mapping(n *yaml.Node, what string, valid []string, f func(k string, kn, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", what)
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if valid != nil && !slices.Contains(valid, k.Value) {
			msg := fmt.Sprintf("%s: unknown key %q", what, k.Value)
			if s := suggest.Closest(k.Value, valid); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			p.errorf(k, "%s; valid keys: %s", msg, strings.Join(valid, ", "))
			continue
		}
		if seen[k.Value] {
			p.errorf(k, "%s: %q is given twice", what, k.Value)
			continue
		}
		seen[k.Value] = true
		f(k.Value, k, v)
	}
}

func (p *parser) parse(data []byte) *File {
	f := &File{Path: p.file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, col, msg := config.LocateSyntaxError(data, err)
		p.errs = append(p.errs, &Error{File: p.file, Line: line, Column: col, Msg: "not valid YAML: " + msg})
		return f
	}
	if len(doc.Content) == 0 {
		p.errorf(nil, "the file is empty: write tests: [...] (see docs/config.md, Testing a pipeline)")
		return f
	}
	root := doc.Content[0]
	p.mapping(root, "the test file", []string{"config", "env", "tests"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "config":
			f.Config = p.scalar(v, "config")
		case "env":
			f.Env = p.env(v)
		case "tests":
			if v.Kind != yaml.SequenceNode {
				p.errorf(v, "tests must be a list of tests")
				return
			}
			for _, t := range v.Content {
				f.Tests = append(f.Tests, p.test(t))
			}
		}
	})
	if len(f.Tests) == 0 && len(p.errs) == 0 {
		p.errorf(root, "no tests: write tests: [{name: ..., inputs: ..., outputs: ...}]")
	}
	names := map[string]int{}
	for _, t := range f.Tests {
		if prev, dup := names[t.Name]; dup && t.Name != "" {
			p.errs = append(p.errs, &Error{File: p.file, Line: t.Line, Msg: fmt.Sprintf("test %q is named twice (first on line %d)", t.Name, prev)})
		}
		names[t.Name] = t.Line
	}
	return f
}

func (p *parser) scalar(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, "%s must be a string", what)
		return ""
	}
	return n.Value
}

func (p *parser) env(n *yaml.Node) map[string]string {
	out := map[string]string{}
	p.mapping(n, "env", nil, func(k string, _, v *yaml.Node) { out[k] = p.scalar(v, "env."+k) })
	return out
}

func (p *parser) test(n *yaml.Node) Case {
	c := Case{Line: n.Line, Inputs: map[string][]Rec{}, Outputs: map[string]Expect{}}
	p.mapping(n, "a test", []string{"name", "env", "set", "inputs", "outputs", "error"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "name":
			c.Name = p.scalar(v, "name")
		case "env":
			c.Env = p.env(v)
		case "set":
			p.mapping(v, "set", nil, func(path string, kn, val *yaml.Node) {
				var b bytes.Buffer
				enc := yaml.NewEncoder(&b)
				if err := enc.Encode(val); err != nil {
					p.errorf(val, "set.%s: %v", path, err)
					return
				}
				c.Sets = append(c.Sets, config.Set{Flag: fmt.Sprintf("%s:%d: set %s", p.file, kn.Line, path), Path: path, Value: b.String()})
			})
		case "inputs":
			p.mapping(v, "inputs", nil, func(src string, kn, list *yaml.Node) {
				if list.Kind != yaml.SequenceNode {
					p.errorf(list, "inputs.%s must be a list of records", src)
					return
				}
				recs := []Rec{}
				for _, item := range list.Content {
					if r, ok := p.record(item, "inputs."+src); ok {
						recs = append(recs, r)
					}
				}
				c.Inputs[src] = recs
			})
		case "outputs":
			p.mapping(v, "outputs", nil, func(comp string, kn, e *yaml.Node) {
				c.Outputs[comp] = p.expect(e, "outputs."+comp)
				c.order = append(c.order, comp)
			})
		case "error":
			c.Error = p.scalar(v, "error")
		}
	})
	if c.Name == "" {
		p.errorf(n, "a test needs a name")
	}
	if len(c.Outputs) == 0 && c.Error == "" {
		p.errorf(n, "test %q checks nothing: give outputs (or the error the run must fail with)", c.Name)
	}
	return c
}

// record reads a record: a string (the value's bytes), or a mapping with
// value and, optionally, key, headers and time.
func (p *parser) record(n *yaml.Node, what string) (Rec, bool) {
	r := Rec{Line: n.Line}
	switch n.Kind {
	case yaml.ScalarNode:
		r.Value = []byte(n.Value)
		return r, true
	case yaml.MappingNode:
	default:
		p.errorf(n, "%s: a record is a string (its value, byte for byte) or a mapping with value (and key, headers, time)", what)
		return r, false
	}
	before := len(p.errs)
	hasValue := false
	p.mapping(n, what+" record", []string{"value", "key", "headers", "time"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "value":
			hasValue = true
			if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
				r.Value = []byte(v.Value)
				return
			}
			b, err := jsonOf(nil, v)
			if err != nil {
				p.errorf(v, "%s.value: %v", what, err)
			}
			r.Value, r.Structured = b, true
		case "key":
			s := p.scalar(v, what+".key")
			r.Key = &s
		case "headers":
			r.Headers = [][2]string{}
			p.mapping(v, what+".headers", nil, func(hk string, _, hv *yaml.Node) {
				r.Headers = append(r.Headers, [2]string{hk, p.scalar(hv, what+".headers."+hk)})
			})
		case "time":
			t, err := time.Parse(time.RFC3339Nano, p.scalar(v, what+".time"))
			if err != nil {
				p.errorf(v, "%s.time: %q is not an RFC 3339 time, like 2026-02-01T19:27:17Z", what, v.Value)
			}
			r.Time = t
		}
	})
	if !hasValue {
		p.errorf(n, "%s: the record has no value (a mapping is {value: ..., key: ...}; write a JSON value as a string, or under value)", what)
	}
	return r, len(p.errs) == before
}

// expect reads what must come out of a component: a list of records
// (exact), or a mapping of records, count and each.
func (p *parser) expect(n *yaml.Node, what string) Expect {
	e := Expect{Line: n.Line}
	records := func(list *yaml.Node) {
		e.HasRecords = true
		e.Records = []Rec{}
		for _, item := range list.Content {
			if r, ok := p.record(item, what); ok {
				e.Records = append(e.Records, r)
			}
		}
	}
	switch n.Kind {
	case yaml.SequenceNode:
		records(n)
		return e
	case yaml.MappingNode:
	default:
		p.errorf(n, "%s: give the records (a list), or a mapping of records, count and each", what)
		return e
	}
	p.mapping(n, what, []string{"records", "count", "each"}, func(k string, kn, v *yaml.Node) {
		switch k {
		case "records":
			if v.Kind != yaml.SequenceNode {
				p.errorf(v, "%s.records must be a list of records", what)
				return
			}
			records(v)
		case "count":
			c, err := strconv.Atoi(p.scalar(v, what+".count"))
			if err != nil || c < 0 {
				p.errorf(v, "%s.count must be a number of records, 0 or more", what)
			}
			e.Count = &c
		case "each":
			if v.Kind == yaml.ScalarNode {
				e.Each = []string{v.Value}
				return
			}
			if v.Kind != yaml.SequenceNode {
				p.errorf(v, "%s.each must be a list of conditions", what)
				return
			}
			for _, c := range v.Content {
				e.Each = append(e.Each, p.scalar(c, what+".each"))
			}
		}
	})
	return e
}

// Parse reads a test file from data; name is used in errors. The tested
// configuration is not looked for.
func Parse(name string, data []byte) (*File, []error) {
	p := &parser{file: name}
	f := p.parse(data)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return f, nil
}
