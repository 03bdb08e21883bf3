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
	"bytes"
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
	// Lookup reads an environment variable for ${NAME}, and for the options
	// named *_env (see Offline); nil means os.LookupEnv.
	Lookup func(name string) (string, bool)
	// Offline skips the checks of what the file names in the world outside
	// it: the connectors' (connector.Checker: paths that must match a file,
	// directories that must be creatable, certificate files) and the
	// options named *_env, whose variable must be set (password_env).
	// `weir validate --offline` sets it, for a file checked away from where
	// it runs, and `weir test`, whose inputs and outputs are stand-ins.
	Offline bool
	// Warn, if set, receives each warning (a deprecated spelling that still
	// loads), in the order of the file, whether the file loads or not.
	Warn func(w *Error)
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
	return parseWith(name, data, lookup, o.Sets, !o.Offline, o.Warn)
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
	// check says whether built components that are connector.Checkers are
	// checked (Options.Offline unset).
	check bool
	// lines are the file's lines, for the excerpt under an expression's
	// problem.
	lines []string
	// warns are the warnings found (see Options.Warn).
	warns []*Error
	// unknownNames are the words in the values of unknown options (see
	// noteNames).
	unknownNames map[string]bool
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

// explain marks the problem just added as the cause of any other problem
// with the setting field (or a setting under it), so that result leaves
// those out.
func (l *loader) explain(field string) {
	if len(l.errs) > 0 {
		e := l.errs[len(l.errs)-1]
		e.explains = append(e.explains, field)
	}
}

// oneMessagePerFault leaves out every problem that another problem of the
// list explains: one mistake gets one message. A typo in an option name
// would otherwise also report the option it meant as missing, and an unset
// environment variable the empty value it left as invalid.
func oneMessagePerFault(errs []*Error) []*Error {
	errs = foldMissing(errs)
	var causes []string
	for _, e := range errs {
		causes = append(causes, e.explains...)
	}
	if len(causes) == 0 {
		return errs
	}
	out := errs[:0]
	for _, e := range errs {
		if len(e.explains) > 0 || !explained(e.Field, causes) {
			out = append(out, e)
		}
	}
	return out
}

// foldMissing joins an unknown option with no near spelling to the one
// required option its component lacks: `routes:` in place of `outputs:`
// is one mistake, reported once, as the unknown option with the missing
// one as its suggestion. Where a component has more than one of either,
// which was meant is not clear, and every problem stays.
func foldMissing(errs []*Error) []*Error {
	unknown := map[string][]*Error{} // by component field
	for _, e := range errs {
		if e.unknown != "" {
			unknown[e.Field] = append(unknown[e.Field], e)
		}
	}
	if len(unknown) == 0 {
		return errs
	}
	missing := map[string][]*Error{}
	for _, e := range errs {
		comp, opt, ok := cutLast(e.Field)
		if ok && len(unknown[comp]) == 1 && strings.HasPrefix(e.Msg, "missing") && !strings.ContainsAny(opt, ".[") {
			missing[comp] = append(missing[comp], e)
		}
	}
	drop := map[*Error]bool{}
	for comp, ms := range missing {
		if len(ms) != 1 {
			continue
		}
		u, m := unknown[comp][0], ms[0]
		_, opt, _ := cutLast(m.Field)
		u.Msg = strings.Replace(u.Msg, fmt.Sprintf("unknown option %q", u.unknown),
			fmt.Sprintf("unknown option %q (did you mean %q? %s)", u.unknown, opt, strings.TrimPrefix(strings.TrimPrefix(m.Msg, "missing"), ": ")), 1)
		drop[m] = true
	}
	if len(drop) == 0 {
		return errs
	}
	out := errs[:0]
	for _, e := range errs {
		if !drop[e] {
			out = append(out, e)
		}
	}
	return out
}

// cutLast splits a dotted field at its last dot.
func cutLast(field string) (before, after string, ok bool) {
	i := strings.LastIndexByte(field, '.')
	if i < 0 {
		return "", "", false
	}
	return field[:i], field[i+1:], true
}

// explained reports whether field is one of causes or a setting under one.
func explained(field string, causes []string) bool {
	for _, c := range causes {
		if field == c || (strings.HasPrefix(field, c) && (field[len(c)] == '.' || field[len(c)] == '[')) {
			return true
		}
	}
	return false
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
	l.errs = oneMessagePerFault(l.errs)
	sort.SliceStable(l.errs, func(i, j int) bool { return l.errs[i].Line < l.errs[j].Line })
	return &Errors{File: l.file, List: l.errs}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// LocateSyntaxError says where in data the YAML syntax error err (from
// parsing data with go.yaml.in/yaml/v3) is, and what it is, for every YAML
// file weir reads. The parser names the line where the enclosing block began (line 1 for
// a bad indent on line 5, since the top mapping began there), not where it
// found the fault, and no column. So the fault is found again: it is on the
// first line whose prefix of the file fails with the same error, since a
// prefix that ends before the fault still parses (or fails otherwise, at
// its end). The column is the line's first non-blank one, where indentation
// faults are; an error about the end of the stream (an unclosed quote or
// bracket) keeps the parser's line, where the unclosed thing began.
func LocateSyntaxError(data []byte, err error) (line, col int, msg string) {
	msg = err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if strings.Contains(msg, "end of stream") {
		return line, 0, msg
	}
	const maxLines = 5000 // beyond that, the parser's line; configs are far shorter
	end := 0
	for k := 1; k <= maxLines && end < len(data); k++ {
		next := bytes.IndexByte(data[end:], '\n')
		if next < 0 {
			next = len(data)
		} else {
			next += end + 1
		}
		var n yaml.Node
		if e := yaml.Unmarshal(data[:next], &n); e != nil && e.Error() == err.Error() {
			text := data[end:next]
			col = 1 + len(text) - len(bytes.TrimLeft(text, " \t"))
			switch {
			case strings.Contains(msg, "tab character"):
				col = 1 + bytes.IndexByte(text, '\t')
			}
			switch {
			case strings.Contains(msg, "did not find expected key"), strings.Contains(msg, "mapping values are not allowed"):
				msg += ": check the indentation of this line against the lines above it"
			case strings.Contains(msg, "tab character"):
				msg += ": indent with spaces"
			}
			return k, col, msg
		}
		end = next
	}
	return line, 0, msg
}

func parse(name string, data []byte, lookup func(string) (string, bool)) (*pipeline.Spec, error) {
	return parseWith(name, data, lookup, nil, true, nil)
}

// parseWith is ParseWith's work: check is !Options.Offline, warn Options.Warn.
func parseWith(name string, data []byte, lookup func(string) (string, bool), sets []Set, check bool, warn func(*Error)) (*pipeline.Spec, error) {
	l := &loader{file: name, lookup: lookup, check: check, original: make(map[*yaml.Node]string), setBy: make(map[*yaml.Node]string),
		lines: strings.Split(string(data), "\n")}
	if warn != nil {
		defer func() {
			sort.SliceStable(l.warns, func(i, j int) bool { return l.warns[i].Line < l.warns[j].Line })
			for _, w := range l.warns {
				warn(w)
			}
		}()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The file is parsed before substitution, so a syntax error cannot
		// contain a secret.
		line, col, msg := LocateSyntaxError(data, err)
		l.add(line, "", "not valid YAML: "+msg)
		l.errs[len(l.errs)-1].Column = col
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
