package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weir-etl/weir/internal/suggest"
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
	// filterChain is, by source, the predicates (filters) its records go
	// through one after the other to a single sink, when that is all the
	// graph does with them; nil otherwise (see planFilterChains).
	filterChain []*filterChain
}

// filterChain is a source's straight path to its sinks through filters and
// maps: transforms that make at most one output of an input and can make it
// where the input lies (transform.InPlace), or predicates (transform.Predicate,
// which never change it). Its worker runs each poll batch through them where
// it lies and hands the records kept to the last sink in the batch's own
// slice, and to each other sink a copy (worker.filterBatch, copyTo).
type filterChain struct {
	transforms []int       // in the order records pass them
	steps      []chainStep // by position in transforms
	sinks      []int       // where the last one's output goes: sinks only
}

// chainStep is one transform of a filterChain: in place when it can be,
// else a predicate.
type chainStep struct {
	ip transform.InPlace
	p  transform.Predicate
}
type compiledTransform struct {
	typ    string // the registered type, or ""
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

// compile resolves a valid Spec into the graph the workers walk, with the
// defaults filled in. It checks nothing itself: Validate owns every rule, and
// an invalid s is a *SpecError holding all its problems.
func compile(s *Spec) (*graph, error) {
	if probs := Validate(s); len(probs) > 0 {
		return nil, &SpecError{Problems: probs}
	}
	g := &graph{spec: *s}
	sp := &g.spec
	// The caller's Spec is left as it was: FillDefaults works on copies.
	sp.Sources = slices.Clone(s.Sources)
	sp.Sinks = slices.Clone(s.Sinks)
	FillDefaults(sp)
	g.sinks = sp.Sinks
	g.resolve()
	g.planRejects()
	g.planFilterChains()
	return g, nil
}

// resolve turns every input name into an edge, and every dead_letter into a
// sink index.
func (g *graph) resolve() {
	sp := &g.spec
	x := indexNames(sp)
	g.transforms = make([]compiledTransform, len(sp.Transforms))
	for i, ts := range sp.Transforms {
		g.transforms[i] = compiledTransform{name: ts.Name, typ: ts.Type, t: ts.Transform, r: ts.Router, outs: make([][]target, x.outputs(i))}
	}
	g.sourceOut = make([][]target, len(sp.Sources))
	connect := func(inputs []string, t target) {
		for _, in := range inputs {
			e, why := x.input(in)
			if why != "" {
				panic("pipeline: compile: Validate passed an input it cannot resolve: " + why)
			}
			if e.transform {
				g.transforms[e.idx].outs[e.out] = append(g.transforms[e.idx].outs[e.out], t)
			} else {
				g.sourceOut[e.idx] = append(g.sourceOut[e.idx], t)
			}
		}
	}
	for i, ts := range sp.Transforms {
		connect(ts.Inputs, target{idx: i})
	}
	g.deadLetter = make([]int, len(sp.Sinks))
	for i, sk := range sp.Sinks {
		connect(sk.Inputs, target{sink: true, idx: i})
		g.deadLetter[i] = -1
		if sk.sendsDeadLetters() {
			g.deadLetter[i] = x.sinks[sk.DeadLetter]
		}
	}
}

// names finds the components of a Spec by name. Of components that share a
// name (which Validate reports), the first counts.
type names struct {
	spec                       *Spec
	sources, transforms, sinks map[string]int
}

func indexNames(s *Spec) *names {
	x := &names{spec: s, sources: map[string]int{}, transforms: map[string]int{}, sinks: map[string]int{}}
	claim := func(m map[string]int, name string, i int) {
		if _, ok := m[name]; !ok {
			m[name] = i
		}
	}
	for i, ss := range s.Sources {
		claim(x.sources, ss.Name, i)
	}
	for i, ts := range s.Transforms {
		claim(x.transforms, ts.Name, i)
	}
	for i, sk := range s.Sinks {
		claim(x.sinks, sk.Name, i)
	}
	return x
}

// outputs returns how many outputs transform i has: a Router's, or one.
func (x *names) outputs(i int) int {
	if r := x.spec.Transforms[i].Router; r != nil {
		return len(r.Outputs())
	}
	return 1
}

// endpoint is what an input names: a source, or one output of a transform.
type endpoint struct {
	transform bool
	idx       int // of the source or transform
	out       int // the transform's output; 0 for a plain Transform
}

// known reports whether name is a source or a transform.
func (x *names) known(name string) bool {
	_, src := x.sources[name]
	_, tr := x.transforms[name]
	return src || tr
}

// input resolves the input name in: a source, a transform, or a route's
// output ("route.output"). When in names none of these it returns why, as a
// message for the user.
func (x *names) input(in string) (endpoint, string) {
	base, out, dotted := strings.Cut(in, ".")
	if i, ok := x.sources[base]; ok && !dotted {
		return endpoint{idx: i}, ""
	}
	i, ok := x.transforms[base]
	if !ok {
		if _, ok := x.sources[base]; ok {
			return endpoint{}, fmt.Sprintf("%q is not a route, so %q names nothing; write %q", base, in, base)
		}
		if _, ok := x.sinks[in]; ok {
			return endpoint{}, fmt.Sprintf("%q is a sink, and sinks have no output; name a source, transform or route output", in)
		}
		msg := fmt.Sprintf("%q names no source, transform or route output", in)
		valid := x.validInputs()
		if s := suggest.Closest(in, valid); s != "" {
			return endpoint{}, msg + fmt.Sprintf("; did you mean %q?", s)
		}
		if len(valid) > 0 {
			msg += "; valid inputs: " + strings.Join(valid, ", ")
		}
		return endpoint{}, msg
	}
	r := x.spec.Transforms[i].Router
	switch {
	case r == nil && dotted:
		return endpoint{}, fmt.Sprintf("%q is not a route, so %q names nothing; write %q", base, in, base)
	case r == nil:
		return endpoint{transform: true, idx: i}, ""
	case !dotted && len(r.Outputs()) == 0:
		return endpoint{}, fmt.Sprintf("%q is a route: name one of its outputs, as %s.NAME", in, base)
	case !dotted:
		return endpoint{}, fmt.Sprintf("%q is a route: name one of its outputs (%s)", in, strings.Join(prefixed(base, r.Outputs()), ", "))
	}
	if k := slices.Index(r.Outputs(), out); k >= 0 {
		return endpoint{transform: true, idx: i, out: k}, ""
	}
	msg := fmt.Sprintf("route %q has no output %q", base, out)
	if outs := r.Outputs(); len(outs) > 0 {
		msg += "; its outputs are " + strings.Join(prefixed(base, outs), ", ")
	}
	return endpoint{}, msg
}

// validInputs lists, sorted, every name an input may be.
func (x *names) validInputs() []string {
	var valid []string
	for _, ss := range x.spec.Sources {
		valid = append(valid, ss.Name)
	}
	for _, ts := range x.spec.Transforms {
		if ts.Router == nil {
			valid = append(valid, ts.Name)
		} else {
			valid = append(valid, prefixed(ts.Name, ts.Router.Outputs())...)
		}
	}
	slices.Sort(valid)
	return slices.Compact(valid)
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + "." + n
	}
	return out
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

// planFilterChains finds, for each source, whether its records go only
// through a line of filters and maps (in-place transforms or predicates, each
// with one output, to exactly one next component) into sinks only, and
// records the line. A route, a transform that is neither (flat_map, a
// transform of one's own with only Process), or a fan-out before the last
// transform or to a transform leaves it nil.
func (g *graph) planFilterChains() {
	g.filterChain = make([]*filterChain, len(g.sourceOut))
	for s, outs := range g.sourceOut {
		c := &filterChain{}
		for len(outs) == 1 && !outs[0].sink {
			ct := &g.transforms[outs[0].idx]
			ip, _ := ct.t.(transform.InPlace)
			p, _ := ct.t.(transform.Predicate)
			if (ip == nil && p == nil) || ct.r != nil || len(ct.outs) != 1 {
				break
			}
			c.transforms = append(c.transforms, outs[0].idx)
			c.steps = append(c.steps, chainStep{ip: ip, p: p})
			outs = ct.outs[0]
		}
		if len(c.steps) == 0 || len(outs) == 0 {
			continue
		}
		for _, o := range outs {
			if !o.sink {
				c.sinks = nil
				break
			}
			c.sinks = append(c.sinks, o.idx)
		}
		if len(c.sinks) > 0 {
			g.filterChain[s] = c
		}
	}
}
