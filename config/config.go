// Package config loads a pipeline file (YAML) into a *pipeline.Spec.
//
// The loader reads the whole file in one pass and reports every problem it
// finds rather than stopping at the first, so a user fixes a file in one go;
// when there is any, Load returns them all as *Errors, each at its line.
//
// The rules are split by who can know them. The loader checks what only the
// file can tell: its YAML, sections and keys, component types, the options of
// each connector (decoded strictly into the connector's configuration struct,
// then its Validate method, whose field errors are reported at their own
// options' lines), the expressions of transforms, and settings written as 0.
// Every component whose own options are valid is built (Build acquires
// nothing), and a stand-in takes the place of one that is not. Then the
// rules of a pipeline, its graph, names, dead letters and settings, are
// pipeline.Validate's: the loader calls it on the Spec it read and reports
// each problem at the line of the setting it names. `weir validate` therefore
// refuses exactly what `weir run` would, with the same words. The defaults are
// pipeline's too (pipeline.FillDefaults), filled into the Spec so that what
// `weir validate` accepts is what runs.
//
// ${NAME} and ${NAME:-default} in any value are replaced from the environment
// before decoding. Such values are treated as secrets: errors show the
// ${NAME} reference, never the value. docs/config.md describes the schema.
//
// Errors that config's functions return begin with "config: ". The problems
// inside an *Errors are in the form editors recognise, "file:line: field:
// message", under a summary line that carries the prefix.
package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/pipeline"
)

// Load reads and loads the pipeline file at path. When the file is invalid
// the error is a *Errors holding every problem found.
func Load(path string) (*pipeline.Spec, error) { return LoadWith(path, Options{}) }

// Parse loads a pipeline from data; name is the file name used in errors.
// Environment variables are read with os.LookupEnv.
func Parse(name string, data []byte) (*pipeline.Spec, error) {
	return ParseWith(name, data, Options{})
}

// Options change how a pipeline file is loaded. The zero value loads the
// file as it is, from the process environment.
type Options struct {
	// Sets edit the file before it is decoded, in order (see Set).
	Sets []Set
	// Lookup reads an environment variable for ${NAME}; nil means
	// os.LookupEnv.
	Lookup func(name string) (string, bool)
}

// LoadWith is Load with options.
func LoadWith(path string, o Options) (*pipeline.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseWith(path, data, o)
}

// ParseWith is Parse with options.
func ParseWith(name string, data []byte, o Options) (*pipeline.Spec, error) {
	lookup := o.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return parseSets(name, data, lookup, o.Sets)
}

// Validate loads the pipeline file at path and returns every problem found,
// or nil if there is none. It is what `weir validate` prints.
func Validate(path string) []error {
	_, err := Load(path)
	if err == nil {
		return nil
	}
	var es *Errors
	if errors.As(err, &es) {
		return es.Unwrap()
	}
	return []error{err}
}

// loader holds the state of one Parse.
type loader struct {
	file   string
	lookup func(string) (string, bool)
	errs   []*Error
	// bad are the fields whose values did not decode (see badValue).
	bad []string

	// original maps a scalar whose value was substituted to the text the
	// file wrote, which is what errors show.
	original map[*yaml.Node]string
	// setBy maps a node a command-line Set made to the flag, which errors
	// about it name instead of a line.
	setBy map[*yaml.Node]string
	// secrets are the substituted values, redacted from every message.
	secrets []secret
	// common are the keys every component of its kind takes (type,
	// inputs, batch, ...), by the component's field: an unknown option
	// there is compared with them too.
	common map[string][]string
}

func (l *loader) errorf(n *yaml.Node, field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	line := 0
	if n != nil {
		line = n.Line
		if orig, ok := l.original[n]; ok {
			msg = strings.ReplaceAll(msg, strconv.Quote(n.Value), strconv.Quote(orig))
		}
		if flag, ok := l.setBy[n]; ok {
			l.errs = append(l.errs, &Error{File: l.file, Flag: flag, Field: field, Msg: l.redact(msg)})
			return
		}
	}
	l.add(line, field, msg)
}

func (l *loader) errorAt(line int, field, format string, args ...any) {
	l.add(line, field, fmt.Sprintf(format, args...))
}

func (l *loader) add(line int, field, msg string) {
	l.errs = append(l.errs, &Error{File: l.file, Line: line, Field: field, Msg: l.redact(msg)})
}

// redact replaces every substituted value in msg by its ${NAME} reference.
// Messages from connectors and libraries may quote a value in any way, so this
// is the last line of defence; values shorter than four characters are only
// replaced where they appear quoted whole, since replacing "80" everywhere
// would garble line numbers and is no secret worth keeping.
func (l *loader) redact(msg string) string {
	for _, s := range l.secrets {
		msg = strings.ReplaceAll(msg, strconv.Quote(s.value), strconv.Quote(s.ref))
		if len(s.value) >= 4 && !literal(s.value) {
			msg = strings.ReplaceAll(msg, s.value, s.ref)
		}
	}
	return msg
}

// literal reports whether v is a word YAML gives a meaning (true, false,
// null) or a number: messages use such words themselves ("is not true or
// false"), and a value that is one is no secret to keep, so it is replaced
// only where it is quoted whole.
func literal(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "null":
		return true
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

func (l *loader) result() error {
	if len(l.errs) == 0 {
		return nil
	}
	sort.SliceStable(l.errs, func(i, j int) bool { return l.errs[i].Line < l.errs[j].Line })
	return &Errors{File: l.file, List: l.errs}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func parse(name string, data []byte, lookup func(string) (string, bool)) (*pipeline.Spec, error) {
	return parseSets(name, data, lookup, nil)
}

func parseSets(name string, data []byte, lookup func(string) (string, bool), sets []Set) (*pipeline.Spec, error) {
	l := &loader{file: name, lookup: lookup, original: make(map[*yaml.Node]string), setBy: make(map[*yaml.Node]string)}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The file is parsed before substitution, so a syntax error cannot
		// contain a secret.
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		l.errorAt(line, "", "not valid YAML: %s", msg)
		return nil, l.result()
	}
	if len(doc.Content) == 0 && len(sets) > 0 {
		// Sets alone may make a whole pipeline.
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	if len(doc.Content) == 0 {
		l.errorAt(0, "", "the file is empty: a pipeline needs sources and sinks (see docs/config.md)")
		return nil, l.result()
	}
	root := resolve(doc.Content[0])
	if root.Kind == yaml.MappingNode {
		l.applySets(root, sets)
	}
	if root.Kind != yaml.MappingNode {
		l.errorf(root, "", "the file must be a mapping with sources, transforms, sinks, checkpoint and metrics; got %s", l.describe(root))
		return nil, l.result()
	}
	l.substituteTree(root, "")

	p := &pipelineFile{loader: l, comps: make(map[component]place), sections: make(map[string]place)}
	p.read(root)
	for _, pr := range pipeline.Validate(&p.spec) {
		p.report(pr)
	}
	if err := l.result(); err != nil {
		return nil, err
	}
	spec := p.spec
	pipeline.FillDefaults(&spec)
	return &spec, nil
}
