package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/suggest"
	"github.com/weir-etl/weir/pipeline"
)

// pipelineFile is one pass over a file: the Spec it describes, and where
// each part of the Spec is in the file.
type pipelineFile struct {
	*loader
	// spec holds every component the file declares, in file order within
	// each kind. A component that could not be built holds a stand-in.
	spec pipeline.Spec
	// comps and sections say where the file declares each component and
	// section, for reporting pipeline.Validate's problems at their lines.
	comps    map[component]place
	sections map[string]place
	// inFlight are the checkpoint section's max_in_flight_batches and
	// max_in_flight_bytes: the limits of every source without its own.
	inFlight struct {
		batches int
		bytes   int64
	}
}

// component is a component as pipeline.Problem names it.
type component struct{ kind, name string }

// place is where a component or section is in the file.
type place struct {
	key   *yaml.Node // its name; nil for a section the file lacks
	value *yaml.Node // its mapping
	field string     // its path in errors: "sinks.out", "checkpoint"
}

var topLevel = []string{"checkpoint", "metrics", "name", "sinks", "sources", "transforms"}

func (p *pipelineFile) read(root *yaml.Node) {
	p.eachPair(root, "", func(k, v *yaml.Node) {
		if !slices.Contains(topLevel, k.Value) {
			p.unknownSection(k)
			return
		}
		p.sections[k.Value] = place{key: k, value: resolve(v), field: k.Value}
	})
	p.readName(p.sections["name"].value)
	p.readCheckpoint(p.sections["checkpoint"].value)
	p.readMetrics(p.sections["metrics"].value)
	for _, s := range []string{"sources", "transforms", "sinks"} {
		n := p.sections[s].value
		if isNull(n) {
			continue // pipeline.Validate reports a pipeline without sources or sinks
		}
		if n.Kind != yaml.MappingNode {
			p.errorf(n, s, "must be a mapping of name: {type: ..., ...}; got %s", p.describe(n))
			continue
		}
		p.eachPair(n, s, func(k, v *yaml.Node) {
			v = resolve(v)
			field := s + "." + k.Value
			if v.Kind != yaml.MappingNode {
				p.errorf(v, field, "must be a mapping with a type and its options; got %s", p.describe(v))
				return
			}
			p.comps[component{strings.TrimSuffix(s, "s"), k.Value}] = place{key: k, value: v, field: field}
			switch s {
			case "sources":
				p.readSource(k, v, field)
			case "transforms":
				p.readTransform(k, v, field)
			case "sinks":
				p.readSink(k, v, field)
			}
		})
	}
}

func (p *pipelineFile) unknownSection(k *yaml.Node) {
	msg := fmt.Sprintf("unknown section %q", k.Value)
	if s := suggest.Closest(k.Value, topLevel); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	p.errorf(k, "", "%s; valid sections: %s", msg, strings.Join(topLevel, ", "))
}

// split separates the keys that config handles for every component of a
// section from the rest, which are the component type's own options.
func (p *pipelineFile) split(v *yaml.Node, field string, common []string) (map[string]*yaml.Node, *yaml.Node) {
	got := make(map[string]*yaml.Node)
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column}
	if p.common == nil {
		p.common = map[string][]string{}
	}
	p.common[field] = common
	p.eachPair(v, field, func(k, val *yaml.Node) {
		if slices.Contains(common, k.Value) {
			got[k.Value] = val
			return
		}
		rest.Content = append(rest.Content, k, val)
	})
	return got, rest
}

// typeOf returns the component's type, reporting it when it is missing.
func (p *pipelineFile) typeOf(k *yaml.Node, common map[string]*yaml.Node, field string, registered []string) (string, *yaml.Node, bool) {
	t, ok := common["type"]
	if !ok || isNull(t) {
		p.errorf(k, field+".type", "missing: set type to one of: %s", strings.Join(registered, ", "))
		return "", nil, false
	}
	t = resolve(t)
	if t.Kind != yaml.ScalarNode || t.Value == "" {
		p.errorf(t, field+".type", "must be one of: %s; got %s", strings.Join(registered, ", "), p.describe(t))
		return "", nil, false
	}
	return t.Value, t, true
}

func (p *pipelineFile) unknownType(t *yaml.Node, field, what string, registered []string) {
	if fix, ok := connector.LeftOut(what, t.Value); ok {
		p.errorf(t, field+".type", "%s type %q is left out of this build of weir: %s", what, t.Value, fix)
		return
	}
	msg := fmt.Sprintf("unknown %s type %q", what, t.Value)
	if s := suggest.Closest(t.Value, registered); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(registered) == 0 {
		msg += fmt.Sprintf("; no %s types are registered in this build", what)
	} else {
		msg += fmt.Sprintf("; registered %s types: %s", what, strings.Join(registered, ", "))
	}
	p.errorf(t, field+".type", "%s", msg)
}

// inputs reads a component's inputs. An item that is not a name is reported
// here and kept as "", so that the indexes of the others are still those of
// the file for the problems pipeline.Validate finds with them.
func (p *pipelineFile) inputs(common map[string]*yaml.Node, field string) []string {
	n, ok := common["inputs"]
	if !ok || isNull(n) {
		return nil // pipeline.Validate knows who needs inputs
	}
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, field+".inputs", "must be a list of names, like [%s]; got %s", orExample(n), p.describe(n))
		return nil
	}
	out := make([]string, len(n.Content))
	for i, c := range n.Content {
		c = resolve(c)
		if c.Kind != yaml.ScalarNode || c.Value == "" {
			p.errorf(c, fmt.Sprintf("%s.inputs[%d]", field, i), "each input must be the name of a source, transform or route output; got %s", p.describe(c))
			continue
		}
		out[i] = c.Value
	}
	return out
}

func orExample(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value
	}
	return "source_name"
}

// decodeField decodes one common key into v, reporting problems. It reports
// whether the file set the key to a value that decoded.
func (p *pipelineFile) decodeField(common map[string]*yaml.Node, key string, v any, field string) bool {
	n, ok := common[key]
	if !ok {
		return false
	}
	before := len(p.errs)
	p.decode(n, reflect.ValueOf(v).Elem(), join(field, key))
	return len(p.errs) == before && !isNull(resolve(n))
}

// setToZero reports option key of mapping n when the file sets it to zero.
// Zero stands for the default in a Spec, but a file that writes 0 probably
// means something else ("no retries", "no limit"): leaving the option out is
// how a file asks for the default. Negative values are pipeline.Validate's.
func (p *pipelineFile) setToZero(n *yaml.Node, key, field string, v int64) {
	if v == 0 && locate(n, key) != nil {
		p.errorf(locate(n, key), join(field, key), "must be more than 0; leave it out for the default")
	}
}

func (p *pipelineFile) readSource(k, v *yaml.Node, field string) {
	common, rest := p.split(v, field, sourceCommon)
	// A source without its own limits takes the checkpoint section's.
	spec := pipeline.SourceSpec{Name: k.Value, Source: standInSource{},
		MaxInFlightBatches: p.inFlight.batches, MaxInFlightBytes: p.inFlight.bytes}
	var batches int
	if p.decodeField(common, "max_in_flight_batches", &batches, field) {
		p.setToZero(v, "max_in_flight_batches", field, int64(batches))
		spec.MaxInFlightBatches = batches
	}
	var bytes Size
	if p.decodeField(common, "max_in_flight_bytes", &bytes, field) {
		p.setToZero(v, "max_in_flight_bytes", field, int64(bytes))
		spec.MaxInFlightBytes = int64(bytes)
	}
	p.spec.Sources = append(p.spec.Sources, spec)
	idx := len(p.spec.Sources) - 1

	registered := connector.SourceTypes()
	typ, tn, ok := p.typeOf(k, common, field, registered)
	if !ok {
		return
	}
	st, ok := connector.LookupSource(typ)
	if !ok {
		p.unknownType(tn, field, "source", registered)
		return
	}
	p.spec.Sources[idx].Type = typ
	cfg := st.NewConfig()
	if !p.decodeOptions(cfg, rest, k, field) {
		return
	}
	src, err := st.Build(k.Value, cfg)
	if err != nil {
		p.errorf(k, field, "%s", err)
		return
	}
	p.checkComponent(src, rest, k, field)
	p.spec.Sources[idx].Source = src
	p.spec.Sources[idx].Settings = cfg
}

// readName reads the pipeline's name (weir run -d DIR names a pipeline
// after its file unless it says otherwise).
func (p *pipelineFile) readName(n *yaml.Node) {
	if n == nil {
		return
	}
	ok := n.Kind == yaml.ScalarNode && n.Value != "" && len(n.Value) <= 64
	for _, r := range n.Value {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			ok = false
		}
	}
	if !ok {
		p.errorf(n, "name", "must be 1 to 64 letters, digits, '_' and '-' (it names the pipeline in weir run -d, the API and the metrics); got %s", p.describe(n))
		return
	}
	p.spec.Name = n.Value
}
