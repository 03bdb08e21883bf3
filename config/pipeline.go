package config

import (
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
)

// pipelineFile is the first pass over a file: what was read, and the work
// left for the second pass.
type pipelineFile struct {
	*loader
	names  map[string]nameUse // every component name, across sections
	nodes  []*node            // for the graph checks
	builds []func(*pipeline.Spec)

	checkpoint checkpointOptions
	metrics    string
	sinkDecls  []*sinkDecl
}

type nameUse struct {
	section string
	line    int
}

var topLevel = []string{"checkpoint", "metrics", "sinks", "sources", "transforms"}

// componentName is what a name may look like: no dots, since "route.output"
// names a route's output, and nothing that needs quoting in YAML.
var componentName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

func (p *pipelineFile) read(root *yaml.Node) {
	sections := make(map[string]*yaml.Node)
	p.eachPair(root, "", func(k, v *yaml.Node) {
		if !contains(topLevel, k.Value) {
			p.unknownSection(k)
			return
		}
		sections[k.Value] = v
	})
	p.checkpoint = checkpointOptions{
		CommitInterval:     Duration(defaultCommitInterval),
		ShutdownTimeout:    Duration(defaultShutdownTimeout),
		DrainTimeout:       Duration(defaultDrainTimeout),
		StallWarning:       Duration(defaultStallWarning),
		MaxInFlightBatches: defaultMaxInFlightBatches,
		MaxInFlightBytes:   defaultMaxInFlightBytes,
	}
	if n, ok := sections["checkpoint"]; ok {
		p.readCheckpoint(n)
	}
	p.metrics = defaultMetricsAddress
	if n, ok := sections["metrics"]; ok {
		p.readMetrics(n)
	}
	for _, s := range []string{"sources", "transforms", "sinks"} {
		n, ok := sections[s]
		if !ok || isNull(n) {
			if s != "transforms" {
				p.errorAt(0, s, "missing: a pipeline needs at least one %s (see docs/config.md)", singular(s))
			}
			continue
		}
		n = resolve(n)
		if n.Kind != yaml.MappingNode {
			p.errorf(n, s, "must be a mapping of name: {type: ..., ...}; got %s", p.describe(n))
			continue
		}
		p.eachPair(n, s, func(k, v *yaml.Node) {
			if !p.claimName(s, k) {
				return
			}
			v = resolve(v)
			field := s + "." + k.Value
			if v.Kind != yaml.MappingNode {
				p.errorf(v, field, "must be a mapping with a type and its options; got %s", p.describe(v))
				return
			}
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
	p.checkDeadLetters()
	targets := make(map[string]bool)
	for _, d := range p.sinkDecls {
		if d.spec.DeadLetter != "" {
			targets[d.spec.DeadLetter] = true
		}
	}
	p.checkGraph(p.nodes, targets)
}

func (p *pipelineFile) unknownSection(k *yaml.Node) {
	msg := fmt.Sprintf("unknown section %q", k.Value)
	if s := closest(k.Value, topLevel); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	p.errorf(k, "", "%s; valid sections: %s", msg, strings.Join(topLevel, ", "))
}

// claimName records a component name, reporting one that is malformed or
// already used in any section: inputs name components without their section.
func (p *pipelineFile) claimName(section string, k *yaml.Node) bool {
	field := section + "." + k.Value
	if !componentName.MatchString(k.Value) {
		p.errorf(k, field, "%q is not a valid component name: use letters, digits, _ and -, without dots (route outputs are named <route>.<output>)", k.Value)
		return false
	}
	if prev, dup := p.names[k.Value]; dup {
		p.errorf(k, field, "the name %q is already used by %s on line %d; every source, transform and sink needs its own name", k.Value, singular(prev.section), prev.line)
		return false
	}
	p.names[k.Value] = nameUse{section, k.Line}
	return true
}

// split separates the keys that config handles for every component of a
// section from the rest, which are the component type's own options.
func (p *pipelineFile) split(v *yaml.Node, field string, common []string) (map[string]*yaml.Node, *yaml.Node) {
	got := make(map[string]*yaml.Node)
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column}
	p.eachPair(v, field, func(k, val *yaml.Node) {
		if contains(common, k.Value) {
			got[k.Value] = val
			got[k.Value+"@key"] = k
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
	msg := fmt.Sprintf("unknown %s type %q", what, t.Value)
	if s := closest(t.Value, registered); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(registered) == 0 {
		msg += fmt.Sprintf("; no %s types are registered in this build", what)
	} else {
		msg += fmt.Sprintf("; registered %s types: %s", what, strings.Join(registered, ", "))
	}
	p.errorf(t, field+".type", "%s", msg)
}

// decodeOptions decodes a connector's own options into the struct NewConfig
// returns and validates it. It reports whether everything was valid.
func (p *pipelineFile) decodeOptions(cfg any, rest, at *yaml.Node, field string) bool {
	before := len(p.errs)
	rv := reflect.ValueOf(cfg)
	switch {
	case cfg == nil:
		for i := 0; i+1 < len(rest.Content); i += 2 {
			p.unknownOption(rest.Content[i], field, nil)
		}
	case rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct:
		// A registry entry that breaks the NewConfig contract is a bug in
		// the connector, not in the file; say so plainly.
		p.errorf(at, field, "the connector's NewConfig returned %T, not a pointer to a struct; this is a bug in the connector", cfg)
	default:
		p.decodeStruct(rest, rv.Elem(), field)
	}
	if len(p.errs) > before {
		return false
	}
	if cfg != nil {
		p.validateConfig(cfg, rest, at, field)
	}
	return len(p.errs) == before
}

func (p *pipelineFile) inputs(k *yaml.Node, common map[string]*yaml.Node, field string) []input {
	n, ok := common["inputs"]
	if !ok || isNull(n) {
		return nil // reported by the graph check, which knows about dead letters
	}
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, field+".inputs", "must be a list of names, like [%s]; got %s", orExample(n), p.describe(n))
		return nil
	}
	var out []input
	for _, c := range n.Content {
		c = resolve(c)
		if c.Kind != yaml.ScalarNode || c.Value == "" {
			p.errorf(c, field+".inputs", "each input must be the name of a source, transform or route output; got %s", p.describe(c))
			continue
		}
		out = append(out, input{name: c.Value, line: c.Line})
	}
	if len(out) == 0 && len(n.Content) == 0 {
		p.errorf(n, field+".inputs", "is empty: list the sources, transforms or route outputs this reads")
	}
	return out
}

func orExample(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value
	}
	return "source_name"
}

// decodeField decodes one common key into v, reporting problems.
func (p *pipelineFile) decodeField(common map[string]*yaml.Node, key string, v any, field string) bool {
	n, ok := common[key]
	if !ok {
		return false
	}
	before := len(p.errs)
	p.decode(n, reflect.ValueOf(v).Elem(), join(field, key))
	return len(p.errs) == before && !isNull(resolve(n))
}

func (p *pipelineFile) positive(common map[string]*yaml.Node, key, field string, v int64) {
	if v <= 0 {
		p.errorf(common[key], join(field, key), "must be more than 0")
	}
}

var sourceCommon = []string{"type", "max_in_flight_batches", "max_in_flight_bytes"}

func (p *pipelineFile) readSource(k, v *yaml.Node, field string) {
	common, rest := p.split(v, field, sourceCommon)
	nd := &node{name: k.Value, section: "sources", line: k.Line}
	p.nodes = append(p.nodes, nd)
	registered := connector.SourceTypes()
	typ, tn, ok := p.typeOf(k, common, field, registered)
	if !ok {
		return
	}
	nd.kind = typ
	st, ok := connector.LookupSource(typ)
	if !ok {
		p.unknownType(tn, field, "source", registered)
		return
	}
	spec := pipeline.SourceSpec{Name: k.Value}
	var batches int
	if p.decodeField(common, "max_in_flight_batches", &batches, field) {
		p.positive(common, "max_in_flight_batches", field, int64(batches))
		spec.MaxInFlightBatches = batches
	}
	var bytes Size
	if p.decodeField(common, "max_in_flight_bytes", &bytes, field) {
		p.positive(common, "max_in_flight_bytes", field, int64(bytes))
		spec.MaxInFlightBytes = int64(bytes)
	}
	var cfg any
	if st.NewConfig != nil {
		cfg = st.NewConfig()
	}
	if !p.decodeOptions(cfg, rest, k, field) {
		return
	}
	p.builds = append(p.builds, func(s *pipeline.Spec) {
		// A source without its own limits takes the checkpoint section's.
		if spec.MaxInFlightBatches == 0 {
			spec.MaxInFlightBatches = p.checkpoint.MaxInFlightBatches
		}
		if spec.MaxInFlightBytes == 0 {
			spec.MaxInFlightBytes = int64(p.checkpoint.MaxInFlightBytes)
		}
		src, err := st.Build(k.Value, cfg)
		if err != nil {
			p.errorf(k, field, "%s", err)
			return
		}
		spec.Source = src
		s.Sources = append(s.Sources, spec)
	})
}

type sinkDecl struct {
	key        *yaml.Node
	field      string
	spec       pipeline.SinkSpec
	deadLetter *yaml.Node // the dead_letter value, if set
	onFailure  *yaml.Node
}

var sinkCommon = []string{"type", "inputs", "acknowledgements", "batch", "retry", "on_failure", "dead_letter"}

type batchOptions struct {
	MaxRecords int      `yaml:"max_records"`
	MaxBytes   Size     `yaml:"max_bytes"`
	MaxAge     Duration `yaml:"max_age"`
	// Linger flushes a partial group once the sink's input has been idle this
	// long; zero (the default) waits for max_age. See docs/runtime.md.
	Linger Duration `yaml:"linger"`
	// Overlap is how many sealed groups may wait to become durable while the
	// next is written, for sinks that seal (file, kafka).
	Overlap int `yaml:"overlap"`
}

type retryOptions struct {
	MaxAttempts    int      `yaml:"max_attempts"`
	InitialBackoff Duration `yaml:"initial_backoff"`
	MaxBackoff     Duration `yaml:"max_backoff"`
	MaxElapsed     Duration `yaml:"max_elapsed"`
}

var failurePolicies = map[string]pipeline.FailurePolicy{
	"rewind":      pipeline.Rewind,
	"dead_letter": pipeline.DeadLetter,
	"halt":        pipeline.Halt,
}

func (p *pipelineFile) readSink(k, v *yaml.Node, field string) {
	common, rest := p.split(v, field, sinkCommon)
	nd := &node{name: k.Value, section: "sinks", line: k.Line}
	nd.inputs = p.inputs(k, common, field)
	p.nodes = append(p.nodes, nd)
	d := &sinkDecl{key: k, field: field, spec: pipeline.SinkSpec{Name: k.Value}}
	for _, in := range nd.inputs {
		d.spec.Inputs = append(d.spec.Inputs, in.name)
	}
	p.sinkDecls = append(p.sinkDecls, d)

	acks := true
	p.decodeField(common, "acknowledgements", &acks, field)
	d.spec.NoAcknowledgements = !acks

	b := batchOptions{MaxRecords: defaultBatchMaxRecords, MaxBytes: defaultBatchMaxBytes, MaxAge: Duration(defaultBatchMaxAge), Overlap: pipeline.DefaultBatchOverlap}
	if p.decodeField(common, "batch", &b, field) {
		bn := resolve(common["batch"])
		p.positiveOpt(bn, "max_records", field+".batch", int64(b.MaxRecords))
		p.positiveOpt(bn, "max_bytes", field+".batch", int64(b.MaxBytes))
		p.positiveOpt(bn, "max_age", field+".batch", int64(b.MaxAge))
		p.positiveOpt(bn, "overlap", field+".batch", int64(b.Overlap))
		if b.Linger > 0 && b.Linger >= b.MaxAge {
			p.errorf(optionOr(bn, "linger"), join(field+".batch", "linger"), "must be less than max_age to have any effect; lower it or leave it out")
		}
	}
	d.spec.Batch = pipeline.BatchSettings{MaxRecords: b.MaxRecords, MaxBytes: int64(b.MaxBytes), MaxAge: b.MaxAge.D(), Linger: b.Linger.D(), Overlap: b.Overlap}

	r := retryOptions{
		MaxAttempts:    defaultRetryMaxAttempts,
		InitialBackoff: Duration(defaultRetryInitialBackoff),
		MaxBackoff:     Duration(defaultRetryMaxBackoff),
		MaxElapsed:     Duration(defaultRetryMaxElapsed),
	}
	if p.decodeField(common, "retry", &r, field) {
		rn := resolve(common["retry"])
		p.positiveOpt(rn, "max_attempts", field+".retry", int64(r.MaxAttempts))
		p.positiveOpt(rn, "initial_backoff", field+".retry", int64(r.InitialBackoff))
		if r.MaxBackoff < r.InitialBackoff {
			p.errorf(optionOr(rn, "max_backoff"), field+".retry.max_backoff", "is less than initial_backoff (%s); make it at least as long", r.InitialBackoff.D())
		}
	}
	d.spec.Retry = pipeline.RetrySettings{
		MaxAttempts:    r.MaxAttempts,
		InitialBackoff: r.InitialBackoff.D(),
		MaxBackoff:     r.MaxBackoff.D(),
		MaxElapsed:     r.MaxElapsed.D(),
	}

	if n, ok := common["on_failure"]; ok {
		n = resolve(n)
		d.onFailure = n
		pol, ok := failurePolicies[n.Value]
		if n.Kind != yaml.ScalarNode || !ok {
			p.errorf(n, field+".on_failure", "must be rewind, dead_letter or halt; got %s", p.describe(n))
		}
		d.spec.OnFailure = pol
	}
	if n, ok := common["dead_letter"]; ok && !isNull(n) {
		n = resolve(n)
		if n.Kind != yaml.ScalarNode {
			p.errorf(n, field+".dead_letter", "must be the name of a sink; got %s", p.describe(n))
		} else {
			d.deadLetter = n
			d.spec.DeadLetter = n.Value
		}
	}

	registered := connector.SinkTypes()
	typ, tn, ok := p.typeOf(k, common, field, registered)
	if !ok {
		return
	}
	nd.kind = typ
	st, ok := connector.LookupSink(typ)
	if !ok {
		p.unknownType(tn, field, "sink", registered)
		return
	}
	var cfg any
	if st.NewConfig != nil {
		cfg = st.NewConfig()
	}
	if !p.decodeOptions(cfg, rest, k, field) {
		return
	}
	p.builds = append(p.builds, func(s *pipeline.Spec) {
		sink, err := st.Build(k.Value, cfg)
		if err != nil {
			p.errorf(k, field, "%s", err)
			return
		}
		d.spec.Sink = sink
		s.Sinks = append(s.Sinks, d.spec)
	})
}

// positiveOpt reports option key of mapping n when v is not positive and the
// file set it (the defaults are all positive).
func (p *pipelineFile) positiveOpt(n *yaml.Node, key, field string, v int64) {
	if v <= 0 {
		p.errorf(optionOr(n, key), join(field, key), "must be more than 0")
	}
}

// optionOr returns the key node of option key in mapping n, or n.
func optionOr(n *yaml.Node, key string) *yaml.Node {
	if k := findOption(n, key); k != nil {
		return k
	}
	return n
}

// checkDeadLetters checks on_failure and dead_letter together, once every
// sink is known.
func (p *pipelineFile) checkDeadLetters() {
	sinks := make(map[string]*sinkDecl)
	var names []string
	for _, d := range p.sinkDecls {
		sinks[d.spec.Name] = d
		names = append(names, d.spec.Name)
	}
	for _, d := range p.sinkDecls {
		field := d.field + ".dead_letter"
		switch {
		case d.spec.OnFailure == pipeline.DeadLetter && d.deadLetter == nil:
			if d.onFailure != nil {
				p.errorf(d.onFailure, field, "missing: on_failure is dead_letter, so name the sink that receives failed records in dead_letter")
			}
		case d.spec.OnFailure != pipeline.DeadLetter && d.deadLetter != nil:
			p.errorf(d.deadLetter, field, "is set but on_failure is not dead_letter: add on_failure: dead_letter, or remove dead_letter")
		case d.deadLetter == nil:
		case d.spec.DeadLetter == d.spec.Name:
			p.errorf(d.deadLetter, field, "names the sink itself; records that failed here would fail here again: name another sink")
		case sinks[d.spec.DeadLetter] == nil:
			msg := fmt.Sprintf("%q names no sink", d.spec.DeadLetter)
			if s := closest(d.spec.DeadLetter, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += "; sinks: " + strings.Join(names, ", ")
			}
			p.errorf(d.deadLetter, field, "%s", msg)
		default:
			// A chain of dead letters that comes back to this sink would pass
			// failed records around for ever.
			seen := map[string]bool{d.spec.Name: true}
			path := []string{d.spec.Name}
			for cur := sinks[d.spec.DeadLetter]; cur != nil; cur = sinks[cur.spec.DeadLetter] {
				path = append(path, cur.spec.Name)
				if cur.spec.Name == d.spec.Name {
					p.errorf(d.deadLetter, field, "dead letters go round in a circle: %s; end the chain at a sink without dead_letter", strings.Join(path, " -> "))
					break
				}
				if seen[cur.spec.Name] || cur.spec.OnFailure != pipeline.DeadLetter {
					break
				}
				seen[cur.spec.Name] = true
			}
		}
	}
}

type checkpointOptions struct {
	CommitInterval     Duration `yaml:"commit_interval"`
	ShutdownTimeout    Duration `yaml:"shutdown_timeout"`
	DrainTimeout       Duration `yaml:"drain_timeout"`
	StallWarning       Duration `yaml:"stall_warning"`
	MaxInFlightBatches int      `yaml:"max_in_flight_batches"`
	MaxInFlightBytes   Size     `yaml:"max_in_flight_bytes"`
}

func (p *pipelineFile) readCheckpoint(n *yaml.Node) {
	n = resolve(n)
	before := len(p.errs)
	p.decode(n, reflect.ValueOf(&p.checkpoint).Elem(), "checkpoint")
	if len(p.errs) > before || isNull(n) {
		return
	}
	c := p.checkpoint
	for _, o := range []struct {
		key string
		v   int64
	}{
		{"commit_interval", int64(c.CommitInterval)},
		{"shutdown_timeout", int64(c.ShutdownTimeout)},
		{"drain_timeout", int64(c.DrainTimeout)},
		{"stall_warning", int64(c.StallWarning)},
		{"max_in_flight_batches", int64(c.MaxInFlightBatches)},
		{"max_in_flight_bytes", int64(c.MaxInFlightBytes)},
	} {
		p.positiveOpt(n, o.key, "checkpoint", o.v)
	}
}

func (p *pipelineFile) readMetrics(n *yaml.Node) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	var m struct {
		Address string `yaml:"address"`
	}
	m.Address = defaultMetricsAddress
	before := len(p.errs)
	p.decode(n, reflect.ValueOf(&m).Elem(), "metrics")
	if len(p.errs) > before {
		return
	}
	if m.Address != "off" {
		if _, port, err := net.SplitHostPort(m.Address); err != nil || port == "" {
			p.errorf(optionOr(n, "address"), "metrics.address", "%s is not host:port: write it like 127.0.0.1:9464 or :9464, or off to disable metrics", p.show(resolve(valueOf(n, "address"))))
			return
		}
	}
	p.metrics = m.Address
}

// valueOf returns the value of option key in mapping n, or n.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}

// build is the second pass: create every component, in file order.
func (p *pipelineFile) build() *pipeline.Spec {
	s := &pipeline.Spec{
		Checkpoint: pipeline.CheckpointSettings{
			CommitInterval:  p.checkpoint.CommitInterval.D(),
			ShutdownTimeout: p.checkpoint.ShutdownTimeout.D(),
			DrainTimeout:    p.checkpoint.DrainTimeout.D(),
			StallWarning:    p.checkpoint.StallWarning.D(),
		},
		Metrics: pipeline.MetricsSettings{Address: p.metrics},
	}
	for _, b := range p.builds {
		b(s)
	}
	return s
}
