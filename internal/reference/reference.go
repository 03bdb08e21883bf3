// Package reference describes weir's configuration for people and editors,
// from one source: the configuration structs the loader decodes into. A
// connector's options come from its registered config type (their `yaml`,
// `doc`, `unit` and `enum` tags) and the defaults its NewConfig fills in; the
// file's own keys from package config's (config.DescribeSections). From that
// it writes `weir help TYPE` and `weir list` (Help, List), the JSON Schema of
// a pipeline file (Schema), and the reference part of docs/config.md
// (Markdown), which a test keeps equal to the file.
package reference

import (
	"slices"
	"strings"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
)

// The kinds of component types.
const (
	Source    = "source"
	Transform = "transform"
	Sink      = "sink"
)

// Type is a component type: a registered source or sink type, or a
// transform type.
type Type struct {
	Kind    string // Source, Transform or Sink
	Name    string // its `type:` in a pipeline file
	Doc     string // one line
	Options []config.Option
}

// Types returns every source type, transform type and sink type, each kind
// sorted by name.
func Types() []Type {
	var out []Type
	for _, n := range connector.SourceTypes() {
		t, _ := connector.LookupSource(n)
		out = append(out, Type{Kind: Source, Name: n, Doc: t.Doc, Options: config.Describe(t.ConfigType, t.NewConfig())})
	}
	tts := config.DescribeSections().Transforms
	slices.SortFunc(tts, func(a, b config.TransformType) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range tts {
		out = append(out, Type{Kind: Transform, Name: t.Name, Doc: t.Doc, Options: t.Options})
	}
	for _, n := range connector.SinkTypes() {
		t, _ := connector.LookupSink(n)
		out = append(out, Type{Kind: Sink, Name: n, Doc: t.Doc, Options: config.Describe(t.ConfigType, t.NewConfig())})
	}
	return out
}

// Lookup returns the types called name: a source and a sink type may share
// a name (file, kafka).
func Lookup(name string) []Type {
	var out []Type
	for _, t := range Types() {
		if t.Name == name {
			out = append(out, t)
		}
	}
	return out
}

// Section is a part of a pipeline file outside the connectors' options: the
// keys every source, transform or sink takes, or a top-level section.
type Section struct {
	Name    string // source, transform, sink, checkpoint, metrics
	Doc     string
	Options []config.Option
}

// Sections returns the file's own keys, in the order of a pipeline file.
func Sections() []Section {
	s := config.DescribeSections()
	return []Section{
		{"source", "The keys every source takes, beside its type's own options (sources.<name>).", s.Source},
		{"transform", "The keys every transform takes, beside its type's own (transforms.<name>).", s.Transform},
		{"sink", "The keys every sink takes, beside its type's own options (sinks.<name>). Exactly-once sinks, which store the source positions with their data and are never handed a record those cover (after a crash, a rewind, a rebalance): postgres always; file with exactly_once: true (a manifest under path commits each group's chunks with their positions: count only the visible chunks); kafka with exactly_once: true (transactions, for consumers with isolation.level=read_committed; a transactional_id of its own per process). Each needs acknowledgements on (the default) and stable sink and partition names.", s.Sink},
		{"checkpoint", "The checkpoint section: commits, shutdown and the in-flight limits of the sources.", s.Checkpoint},
		{"metrics", "The metrics section: the HTTP endpoints.", s.Metrics},
	}
}

// flat is an option with its dotted path below the component, as help and
// the reference list nested options: tls.ca_file, columns[].name.
type flat struct {
	path string
	opt  config.Option
}

// flatten lists opts and their nested options depth first.
func flatten(prefix string, opts []config.Option) []flat {
	var out []flat
	for _, o := range opts {
		p := prefix + o.Name
		out = append(out, flat{p, o})
		switch {
		case o.Kind == config.KindObject:
			out = append(out, flatten(p+".", o.Options)...)
		case o.Elem != nil && o.Elem.Kind == config.KindObject && o.Kind == config.KindList:
			out = append(out, flatten(p+"[].", o.Elem.Options)...)
		case o.Elem != nil && o.Elem.Kind == config.KindObject && o.Kind == config.KindMap:
			out = append(out, flatten(p+".<name>.", o.Elem.Options)...)
		}
	}
	return out
}

// typeText names the kind of value o takes: "duration", "list of strings",
// "size (bytes)", "map of name to string".
func typeText(o config.Option) string {
	switch o.Kind {
	case config.KindList:
		if o.Elem != nil {
			return "list of " + plural(o.Elem)
		}
		return "list"
	case config.KindMap:
		if o.Elem != nil {
			return "map of name to " + typeText(*o.Elem)
		}
		return "map"
	case config.KindSize:
		return "size"
	case config.KindInt, config.KindNumber:
		if o.Unit != "" {
			return string(o.Kind) + " (" + o.Unit + ")"
		}
	}
	return string(o.Kind)
}

func plural(o *config.Option) string {
	switch o.Kind {
	case config.KindObject:
		return "objects"
	case config.KindList, config.KindMap:
		return typeText(*o) + "s"
	}
	return string(o.Kind) + "s"
}
