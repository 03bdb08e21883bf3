package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Set is an edit of a pipeline file from the command line (`weir run --set
// path=value`): the value at Path is replaced by Value, read as YAML, before
// the file is decoded. The value is therefore typed as it would be in the
// file (5s is a duration, [a, b] a list, "5" a string), ${NAME} in it is
// substituted like any value, and a problem with it is reported as the
// flag's, not at a line of the file.
type Set struct {
	// Flag is how problems name the edit: "--set sinks.out.batch.max_age=5".
	Flag string
	// Path is the setting, dotted, with [i] for a list item:
	// sinks.out.batch.max_age, sources.in.paths[0].
	Path string
	// Value is YAML.
	Value string
}

// ParseSet reads a --set argument, "path=value"; flag names the flag in
// errors and in the problems of the value.
func ParseSet(flag, arg string) (Set, error) {
	path, value, ok := strings.Cut(arg, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Set{}, fmt.Errorf("config: %s %q: write path=value, like %s sinks.out.batch.max_age=5s", flag, arg, flag)
	}
	if _, err := splitPath(path); err != nil {
		return Set{}, fmt.Errorf("config: %s %q: %v", flag, arg, err)
	}
	return Set{Flag: flag + " " + arg, Path: path, Value: value}, nil
}

// pathPart is one step of a Set's path: a mapping key, or a list index.
type pathPart struct {
	key   string
	index int // -1 for a key
}

// splitPath splits "sinks.out.paths[2]" into its steps.
func splitPath(path string) ([]pathPart, error) {
	var out []pathPart
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" {
			return nil, fmt.Errorf("%q has an empty name", path)
		}
		out = append(out, pathPart{key: name, index: -1})
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil || i < 0 {
				return nil, fmt.Errorf("%q: a list index is a whole number from 0, written [0] or [1]", path)
			}
			out = append(out, pathPart{index: i})
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("%q: write a dot after a list index, like paths[0].name", path)
			}
		}
	}
	return out, nil
}

// applySets edits the document root by sets, in order, and remembers every
// node a set made, so that problems with them name the set.
func (l *loader) applySets(root *yaml.Node, sets []Set) {
	for _, s := range sets {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(s.Value), &doc); err != nil {
			l.flagError(s, s.Path, "the value is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
			continue
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		if len(doc.Content) > 0 {
			val = doc.Content[0]
		}
		parts, err := splitPath(s.Path)
		if err != nil {
			l.flagError(s, s.Path, "%v", err)
			continue
		}
		if where, err := setAt(root, parts, val, func(n *yaml.Node) { l.markSet(n, s) }); err != nil {
			l.flagError(s, where, "%v", err)
		}
	}
}

// markSet remembers n and everything below it as made by s.
func (l *loader) markSet(n *yaml.Node, s Set) {
	if n == nil {
		return
	}
	l.setBy[n] = s.Flag
	for _, c := range n.Content {
		l.markSet(c, s)
	}
}

// flagError reports a problem of set s itself.
func (l *loader) flagError(s Set, field, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: l.file, Flag: s.Flag, Field: field, Msg: l.redact(fmt.Sprintf(format, args...))})
}

// setAt puts val at parts below n, making the mappings that are missing,
// and calls made for each node it adds. It returns the path where it could
// not go on, and why.
func setAt(n *yaml.Node, parts []pathPart, val *yaml.Node, made func(*yaml.Node)) (string, error) {
	field := ""
	for i, p := range parts {
		last := i == len(parts)-1
		n = resolve(n)
		if p.index < 0 {
			field = join(field, p.key)
			if isNull(n) && n != nil {
				// An empty section (sinks: with nothing) becomes a mapping.
				*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
			}
			if n == nil || n.Kind != yaml.MappingNode {
				return parent(field), fmt.Errorf("%s is %s, not a mapping: there is no %s in it", orRoot(parent(field)), kindOf(n), p.key)
			}
			_, v := keyOf(n, p.key)
			if v == nil {
				k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p.key}
				v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				made(k)
				made(v)
				n.Content = append(n.Content, k, v)
			}
			if last {
				*v = *val
				made(v)
				return "", nil
			}
			n = v
			continue
		}
		field = fmt.Sprintf("%s[%d]", field, p.index)
		if n == nil || n.Kind != yaml.SequenceNode {
			return parent(field), fmt.Errorf("%s is %s, not a list", orRoot(strings.TrimSuffix(field, fmt.Sprintf("[%d]", p.index))), kindOf(n))
		}
		switch {
		case p.index < len(n.Content):
		case p.index == len(n.Content):
			// One past the end appends: --set 'sources.in.paths[2]=x' on a
			// list of two.
			v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			made(v)
			n.Content = append(n.Content, v)
		default:
			return field, fmt.Errorf("the list has %d items: use an index up to %d", len(n.Content), len(n.Content))
		}
		if last {
			*n.Content[p.index] = *val
			made(n.Content[p.index])
			return "", nil
		}
		n = n.Content[p.index]
	}
	return field, nil
}

func parent(field string) string {
	if i := strings.LastIndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return ""
}

func orRoot(field string) string {
	if field == "" {
		return "the file"
	}
	return field
}

func kindOf(n *yaml.Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	}
	return "a scalar"
}
