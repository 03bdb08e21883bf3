package pipeline

import (
	"slices"
	"strings"

	"github.com/weir-etl/weir/transform"
)

// target is one place a record goes next: a transform or a sink.
type target struct {
	sink bool
	idx  int
}

// graph is a Spec compiled for the workers: every component's downstream
// targets resolved to indexes, defaults filled in.
type graph struct {
	spec       Spec
	sourceOut  [][]target // by source
	transforms []compiledTransform
	sinks      []SinkSpec
	deadLetter []int // by sink: index of its dead letter sink, or -1
}
type compiledTransform struct {
	name   string
	t      transform.Transform
	r      transform.Router
	outs   [][]target // one per output (a Transform has one)
	reject rejectPlan // what becomes of a record this transform fails on
}

// rejectPlan is where a record goes when its transform fails on it, decided
// once from the sinks the record could have reached (see planRejects).
type rejectPlan struct {
	// deadLetters lists the distinct dead letter sinks of the downstream
	// sinks; set only when every downstream sink that acknowledges uses
	// on_failure dead_letter.
	deadLetters []int
	// drop is set when no downstream sink acknowledges: nothing holds the
	// watermark for the record, so it is dropped and logged.
	drop bool
	// Otherwise the record resolves as Rejected and the pipeline halts.
}

// compile checks s and resolves its edges. Every problem is an error wrapping
// ErrSpec that names the component and field.
func compile(s *Spec) (*graph, error) {
	if s == nil {
		return nil, specErr("spec is nil")
	}
	g := &graph{spec: *s}
	sp := &g.spec
	sp.Sources = append([]SourceSpec(nil), s.Sources...)
	sp.Sinks = append([]SinkSpec(nil), s.Sinks...)
	if len(sp.Sources) == 0 {
		return nil, specErr("no sources: add at least one source")
	}
	if len(sp.Sinks) == 0 {
		return nil, specErr("no sinks: add at least one sink")
	}
	kinds := map[string]string{}
	claim := func(kind, name string) error {
		if name == "" {
			return specErr("a %s has no name: give every component a unique name", kind)
		}
		if strings.Contains(name, ".") {
			return specErr("%s %q: names must not contain '.', which separates a route from its output", kind, name)
		}
		if k, dup := kinds[name]; dup {
			return specErr("%s %q: the name is already used by a %s; names must be unique", kind, name, k)
		}
		kinds[name] = kind
		return nil
	}
	srcIdx := map[string]int{}
	for i := range sp.Sources {
		ss := &sp.Sources[i]
		if err := claim("source", ss.Name); err != nil {
			return nil, err
		}
		if ss.Source == nil {
			return nil, specErr("source %q: Source is nil", ss.Name)
		}
		if ss.MaxInFlightBatches < 0 || ss.MaxInFlightBytes < 0 {
			return nil, specErr("source %q: in-flight limits must not be negative (0 means the default)", ss.Name)
		}
		if ss.MaxInFlightBatches == 0 {
			ss.MaxInFlightBatches = DefaultMaxInFlightBatches
		}
		if ss.MaxInFlightBytes == 0 {
			ss.MaxInFlightBytes = DefaultMaxInFlightBytes
		}
		srcIdx[ss.Name] = i
	}
	trIdx := map[string]int{}
	g.transforms = make([]compiledTransform, len(s.Transforms))
	for i, ts := range s.Transforms {
		if err := claim("transform", ts.Name); err != nil {
			return nil, err
		}
		if (ts.Transform == nil) == (ts.Router == nil) {
			return nil, specErr("transform %q: set exactly one of Transform and Router", ts.Name)
		}
		ct := compiledTransform{name: ts.Name, t: ts.Transform, r: ts.Router}
		if ts.Router != nil {
			ct.outs = make([][]target, len(ts.Router.Outputs()))
		} else {
			ct.outs = make([][]target, 1)
		}
		g.transforms[i] = ct
		trIdx[ts.Name] = i
	}
	sinkIdx := map[string]int{}
	for i := range sp.Sinks {
		sk := &sp.Sinks[i]
		if err := claim("sink", sk.Name); err != nil {
			return nil, err
		}
		if sk.Sink == nil {
			return nil, specErr("sink %q: Sink is nil", sk.Name)
		}
		if err := sinkDefaults(sk); err != nil {
			return nil, err
		}
		sinkIdx[sk.Name] = i
	}
	g.sinks = sp.Sinks

	// edge adds t downstream of the component called in.
	edge := func(who, in string, t target) error {
		base, out, routed := strings.Cut(in, ".")
		if i, ok := srcIdx[base]; ok && !routed {
			g.sourceOut[i] = append(g.sourceOut[i], t)
			return nil
		}
		i, ok := trIdx[base]
		if !ok {
			return specErr("%s: input %q names no source or transform", who, in)
		}
		ct := &g.transforms[i]
		if ct.r == nil {
			if routed {
				return specErr("%s: input %q: transform %q has no named outputs; use %q", who, in, base, base)
			}
			ct.outs[0] = append(ct.outs[0], t)
			return nil
		}
		names := ct.r.Outputs()
		if !routed {
			return specErr("%s: input %q is a route; name one of its outputs: %s.%s", who, in, base, strings.Join(names, ", "+base+"."))
		}
		for k, n := range names {
			if n == out {
				ct.outs[k] = append(ct.outs[k], t)
				return nil
			}
		}
		return specErr("%s: input %q: route %q has no output %q (it has %s)", who, in, base, out, strings.Join(names, ", "))
	}
	g.sourceOut = make([][]target, len(sp.Sources))
	for i, ts := range s.Transforms {
		if len(ts.Inputs) == 0 {
			return nil, specErr("transform %q: no inputs: list the sources or transforms it reads", ts.Name)
		}
		for _, in := range ts.Inputs {
			if err := edge("transform "+quote(ts.Name), in, target{idx: i}); err != nil {
				return nil, err
			}
		}
	}
	g.deadLetter = make([]int, len(sp.Sinks))
	isDL := make([]bool, len(sp.Sinks))
	for i, sk := range sp.Sinks {
		g.deadLetter[i] = -1
		if sk.OnFailure == DeadLetter {
			d, ok := sinkIdx[sk.DeadLetter]
			switch {
			case sk.DeadLetter == "":
				return nil, specErr("sink %q: on_failure is dead_letter but dead_letter names no sink", sk.Name)
			case !ok:
				return nil, specErr("sink %q: dead_letter %q names no sink", sk.Name, sk.DeadLetter)
			case d == i:
				return nil, specErr("sink %q: dead_letter must name another sink", sk.Name)
			case sp.Sinks[d].OnFailure == DeadLetter:
				return nil, specErr("sink %q: dead_letter sink %q must not itself use on_failure dead_letter (use rewind or halt)", sk.Name, sk.DeadLetter)
			}
			g.deadLetter[i] = d
			isDL[d] = true
		} else if sk.DeadLetter != "" {
			return nil, specErr("sink %q: dead_letter is set but on_failure is not dead_letter", sk.Name)
		}
	}
	for i, sk := range sp.Sinks {
		if len(sk.Inputs) == 0 && !isDL[i] {
			return nil, specErr("sink %q: no inputs: list the sources or transforms it reads", sk.Name)
		}
		for _, in := range sk.Inputs {
			if err := edge("sink "+quote(sk.Name), in, target{sink: true, idx: i}); err != nil {
				return nil, err
			}
		}
	}
	for i, ss := range sp.Sources {
		if len(g.sourceOut[i]) == 0 {
			return nil, specErr("source %q feeds nothing: name it in a transform's or sink's inputs", ss.Name)
		}
	}
	for _, ct := range g.transforms {
		used := false
		for _, o := range ct.outs {
			used = used || len(o) > 0
		}
		if !used {
			return nil, specErr("transform %q feeds nothing: name it in a transform's or sink's inputs", ct.name)
		}
	}
	if err := g.checkCycles(); err != nil {
		return nil, err
	}
	g.planRejects()
	checkpointDefaults(&sp.Checkpoint)
	return g, nil
}
func quote(s string) string { return `"` + s + `"` }

// checkCycles rejects a transform that reaches itself: workers walk the graph
// recursively and keep one scratch buffer per transform, which is only safe in
// a DAG.
func (g *graph) checkCycles() error {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(g.transforms))
	var visit func(i int) error
	visit = func(i int) error {
		color[i] = grey
		for _, o := range g.transforms[i].outs {
			for _, t := range o {
				if t.sink {
					continue
				}
				switch color[t.idx] {
				case grey:
					return specErr("transform %q: its inputs form a cycle through %q", g.transforms[t.idx].name, g.transforms[i].name)
				case white:
					if err := visit(t.idx); err != nil {
						return err
					}
				}
			}
		}
		color[i] = black
		return nil
	}
	for i := range g.transforms {
		if color[i] == white {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// planRejects decides, for every transform, what happens to a record it fails
// on. Replay cannot fix such a record, so the choice is the failure policy of
// the sinks it could have reached, the acknowledging ones (a sink with
// acknowledgements off never holds the watermark and drops its own failures):
//
//   - none: the record is dropped and logged, as those sinks would do;
//   - all use dead_letter: the record goes, with the error, to each distinct
//     dead letter sink of theirs, and is delivered once written there;
//   - any uses rewind or halt: the record resolves as Rejected and the
//     pipeline halts (rewinding would fail the same way again).
func (g *graph) planRejects() {
	for i := range g.transforms {
		seen := make([]bool, len(g.transforms))
		reach := make([]bool, len(g.sinks))
		g.downstream(i, seen, reach)
		var plan rejectPlan
		acking, halt := 0, false
		for k, ok := range reach {
			sk := &g.sinks[k]
			if !ok || sk.NoAcknowledgements {
				continue
			}
			acking++
			if sk.OnFailure != DeadLetter {
				halt = true
				break
			}
			if d := g.deadLetter[k]; !slices.Contains(plan.deadLetters, d) {
				plan.deadLetters = append(plan.deadLetters, d)
			}
		}
		switch {
		case halt:
			plan = rejectPlan{}
		case acking == 0:
			plan = rejectPlan{drop: true}
		}
		g.transforms[i].reject = plan
	}
}

// downstream marks in reach every sink that transform i feeds, directly or
// through other transforms.
func (g *graph) downstream(i int, seen, reach []bool) {
	if seen[i] {
		return
	}
	seen[i] = true
	for _, o := range g.transforms[i].outs {
		for _, t := range o {
			if t.sink {
				reach[t.idx] = true
			} else {
				g.downstream(t.idx, seen, reach)
			}
		}
	}
}

// String returns the policy's configuration name.
func (f FailurePolicy) String() string {
	switch f {
	case Rewind:
		return "rewind"
	case DeadLetter:
		return "dead_letter"
	case Halt:
		return "halt"
	}
	return "FailurePolicy(" + string(rune('0'+f)) + ")"
}
