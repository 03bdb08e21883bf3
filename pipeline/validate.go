package pipeline

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/suggest"
)

// Validate checks s against every rule of a Spec and returns all the problems
// it finds, or nil when s can run. Zero settings stand for their defaults
// (see FillDefaults). Validate does not modify s.
//
// It is the one place the rules live: Run refuses exactly what Validate
// reports, with the same messages, and the configuration loader (package
// config) reports them at the lines of a pipeline file.
func Validate(s *Spec) []Problem {
	if s == nil {
		return []Problem{{Msg: "the spec is nil"}}
	}
	v := &validator{s: s, x: indexNames(s), shared: map[string]bool{}}
	if len(s.Sources) == 0 {
		v.add("", "", "sources", "missing: a pipeline needs at least one source")
	}
	if len(s.Sinks) == 0 {
		v.add("", "", "sinks", "missing: a pipeline needs at least one sink")
	}
	v.checkNames()
	for i := range s.Sources {
		v.checkSource(&s.Sources[i])
	}
	for i := range s.Transforms {
		if ts := &s.Transforms[i]; (ts.Transform == nil) == (ts.Router == nil) {
			v.add("transform", ts.Name, "", "set exactly one of Transform and Router")
		}
	}
	for i := range s.Sinks {
		v.checkSink(i)
	}
	v.checkGraph()
	v.checkCheckpoint(s.Checkpoint)
	if a := s.Metrics.Address; a != "" && a != "off" {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			v.add("metrics", "", "address", "%q is not host:port: write it like 127.0.0.1:9464 or :9464, or off to serve nothing", a)
		}
	}
	return v.probs
}

// validator collects the problems of one Spec.
type validator struct {
	s     *Spec
	x     *names
	probs []Problem
	// shared holds the names used by more than one component; whether such
	// a component feeds anything is not asked, since inputs reach only one.
	shared map[string]bool
}

func (v *validator) add(kind, name, field, format string, args ...any) {
	v.probs = append(v.probs, Problem{Kind: kind, Name: name, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// componentName is what a name may look like: no dots, since "route.output"
// names a route's output; nothing that needs quoting in a pipeline file, a
// metric label or a log line.
var componentName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

// checkNames reports names that are missing, malformed, or used twice: inputs
// name components without saying whether they are sources or transforms, so
// a name is unique across all three kinds.
func (v *validator) checkNames() {
	first := map[string]string{} // name: the kind that used it first
	claim := func(kind, name string) {
		switch {
		case name == "":
			v.add(kind, name, "", "has no name: give every source, transform and sink a name of its own")
			return
		case !componentName.MatchString(name):
			v.add(kind, name, "", "%q is not a valid component name: use letters, digits, _ and -, without dots (route outputs are named <route>.<output>)", name)
		}
		if k, dup := first[name]; dup {
			v.shared[name] = true
			v.add(kind, name, "", "the name %q is already used by a %s; every source, transform and sink needs its own name", name, k)
			return
		}
		first[name] = kind
	}
	for _, ss := range v.s.Sources {
		claim("source", ss.Name)
	}
	for _, ts := range v.s.Transforms {
		claim("transform", ts.Name)
	}
	for _, sk := range v.s.Sinks {
		claim("sink", sk.Name)
	}
}

func (v *validator) checkSource(ss *SourceSpec) {
	if ss.Source == nil {
		v.add("source", ss.Name, "", "Source is nil: set it to the connector that reads this input")
	}
	v.positive("source", ss.Name, "max_in_flight_batches", int64(ss.MaxInFlightBatches), DefaultMaxInFlightBatches)
	v.positive("source", ss.Name, "max_in_flight_bytes", ss.MaxInFlightBytes, DefaultMaxInFlightBytes)
}

// positive reports a setting that is negative; zero means def.
func (v *validator) positive(kind, name, field string, n, def int64) {
	if n < 0 {
		v.add(kind, name, field, "must be more than 0 (unset means the default, %d)", def)
	}
}

// positiveDuration reports a duration that is negative; zero means def.
func (v *validator) positiveDuration(kind, name, field string, d, def time.Duration) {
	if d < 0 {
		v.add(kind, name, field, "must be more than 0 (unset means the default, %v)", def)
	}
}

func (v *validator) checkSink(i int) {
	sk := &v.s.Sinks[i]
	if sk.Sink == nil {
		v.add("sink", sk.Name, "", "Sink is nil: set it to the connector that writes this output")
	}
	b, r := sk.Batch, sk.Retry
	v.positive("sink", sk.Name, "batch.max_records", int64(b.MaxRecords), DefaultBatchMaxRecords)
	v.positive("sink", sk.Name, "batch.max_bytes", b.MaxBytes, DefaultBatchMaxBytes)
	v.positiveDuration("sink", sk.Name, "batch.max_age", b.MaxAge, DefaultBatchMaxAge)
	v.positive("sink", sk.Name, "batch.overlap", int64(b.Overlap), DefaultBatchOverlap)
	switch eb := b.withDefaults(); {
	case b.Linger < 0:
		v.add("sink", sk.Name, "batch.linger", "must not be negative (unset means off)")
	case b.Linger > 0 && eb.MaxAge > 0 && b.Linger >= eb.MaxAge:
		v.add("sink", sk.Name, "batch.linger", "must be less than max_age (%v) to have any effect; lower it or leave it out", eb.MaxAge)
	}
	v.positive("sink", sk.Name, "retry.max_attempts", int64(r.MaxAttempts), DefaultRetryMaxAttempts)
	v.positiveDuration("sink", sk.Name, "retry.initial_backoff", r.InitialBackoff, DefaultRetryInitial)
	v.positiveDuration("sink", sk.Name, "retry.max_backoff", r.MaxBackoff, DefaultRetryMax)
	v.positiveDuration("sink", sk.Name, "retry.max_elapsed", r.MaxElapsed, DefaultRetryMaxElapsed)
	if er := r.withDefaults(); r.InitialBackoff >= 0 && er.MaxBackoff >= 0 && er.MaxBackoff < er.InitialBackoff {
		v.add("sink", sk.Name, "retry.max_backoff", "is less than initial_backoff (%v); make it at least as long", er.InitialBackoff)
	}
	if sk.OnFailure > Halt {
		v.add("sink", sk.Name, "on_failure", "unknown policy %d: use Rewind, DeadLetter or Halt", sk.OnFailure)
	}
	if sk.OnGiveUp > GiveUpDeadLetter {
		v.add("sink", sk.Name, "on_give_up", "unknown policy %d: use GiveUpHalt or GiveUpDeadLetter", sk.OnGiveUp)
	}
	if _, keeps := sk.Sink.(connector.PositionKeeper); keeps && sk.NoAcknowledgements {
		// Without acknowledgements the runtime never reads or gives the
		// sink's positions: it would write every replay again.
		v.add("sink", sk.Name, "acknowledgements", "is false, but the sink is exactly-once (it stores positions with its data), which needs them: remove acknowledgements: false, or configure the sink without exactly-once")
	}
	v.checkDeadLetter(i)
}

// checkDeadLetter checks on_failure, on_give_up and dead_letter together. A
// dead letter sink ends the chain: were it to dead-letter in turn, a failed
// record could travel round a circle of sinks for ever, and the records of
// one failure would be spread over several places.
func (v *validator) checkDeadLetter(i int) {
	sk := &v.s.Sinks[i]
	if !sk.sendsDeadLetters() {
		if sk.DeadLetter != "" {
			v.add("sink", sk.Name, "dead_letter", "is set but neither on_failure nor on_give_up is dead_letter: add on_failure: dead_letter (or on_give_up: dead_letter), or remove dead_letter")
		}
		return
	}
	which := "on_failure"
	if sk.OnFailure != DeadLetter {
		which = "on_give_up"
	}
	d, ok := v.x.sinks[sk.DeadLetter]
	switch {
	case sk.DeadLetter == "":
		v.add("sink", sk.Name, "dead_letter", "missing: %s is dead_letter, so name the sink that receives failed records in dead_letter", which)
	case sk.DeadLetter == sk.Name:
		v.add("sink", sk.Name, "dead_letter", "names the sink itself; records that failed here would fail here again: name another sink")
	case !ok:
		var sinks []string
		for _, o := range v.s.Sinks {
			sinks = append(sinks, o.Name)
		}
		if s := suggest.Closest(sk.DeadLetter, sinks); s != "" {
			v.add("sink", sk.Name, "dead_letter", "%q names no sink; did you mean %q?", sk.DeadLetter, s)
		} else {
			v.add("sink", sk.Name, "dead_letter", "%q names no sink; sinks: %s", sk.DeadLetter, strings.Join(sinks, ", "))
		}
	case v.s.Sinks[d].sendsDeadLetters():
		v.add("sink", sk.Name, "dead_letter", "sink %q itself sends records to a dead letter sink, but a dead letter sink must end the chain: give it on_failure rewind or halt, and on_give_up halt", sk.DeadLetter)
	}
}

// sendsDeadLetters reports whether the sink sends records to its dead letter
// sink, on failure or when it gives up.
func (sk *SinkSpec) sendsDeadLetters() bool {
	return sk.OnFailure == DeadLetter || sk.OnGiveUp == GiveUpDeadLetter
}

func (v *validator) checkCheckpoint(c CheckpointSettings) {
	v.positiveDuration("checkpoint", "", "commit_interval", c.CommitInterval, DefaultCommitInterval)
	v.positiveDuration("checkpoint", "", "shutdown_timeout", c.ShutdownTimeout, DefaultShutdownTimeout)
	v.positiveDuration("checkpoint", "", "drain_timeout", c.DrainTimeout, DefaultDrainTimeout)
	v.positiveDuration("checkpoint", "", "stall_warning", c.StallWarning, DefaultStallWarning)
	v.positiveDuration("checkpoint", "", "commit_failure_timeout", c.CommitFailureTimeout, DefaultCommitFailureTimeout)
	v.positiveDuration("checkpoint", "", "commit_timeout", c.CommitTimeout, DefaultCommitTimeout)
}

// checkGraph checks the edges: every input names something that has output,
// once; every transform and sink is fed (a dead letter sink may be fed by
// its failures alone); every source, transform and route output feeds
// something; and transforms form no cycle.
//
// A component or route output that feeds nothing is an error, not a
// warning: its records would reach no sink and be released as delivered, so
// the source would commit positions of data that went nowhere.
func (v *validator) checkGraph() {
	s := v.s
	used := map[endpoint]bool{}
	// named are the sources and transforms that an input names wrongly
	// ("r" for a route's output, "in.x" for a source): the input's own
	// problem says what to write, and "feeds nothing" for the component
	// it meant would be the same mistake told twice.
	named := map[string]bool{}
	reads := make([][]int, len(s.Transforms)) // by transform: the transforms it reads
	for i, ts := range s.Transforms {
		reads[i] = v.checkInputs("transform", ts.Name, ts.Inputs, false, used, named)
	}
	dlTarget := map[string]bool{}
	for _, sk := range s.Sinks {
		if sk.sendsDeadLetters() {
			dlTarget[sk.DeadLetter] = true
		}
	}
	for _, sk := range s.Sinks {
		v.checkInputs("sink", sk.Name, sk.Inputs, dlTarget[sk.Name], used, named)
	}
	const feedsNothing = "feeds nothing, so its records would be dropped: name it in the inputs of a transform or sink, or remove it"
	for i, ss := range s.Sources {
		if !v.shared[ss.Name] && !named[ss.Name] && !used[endpoint{idx: i}] {
			v.add("source", ss.Name, "", feedsNothing)
		}
	}
	for i, ts := range s.Transforms {
		if v.shared[ts.Name] || named[ts.Name] {
			continue
		}
		n := v.x.outputs(i)
		var unused []int
		for k := range n {
			if !used[endpoint{transform: true, idx: i, out: k}] {
				unused = append(unused, k)
			}
		}
		if len(unused) == n {
			v.add("transform", ts.Name, "", feedsNothing)
			continue
		}
		for _, k := range unused {
			o := ts.Router.Outputs()[k]
			v.add("transform", ts.Name, "outputs."+o, "route output %q feeds nothing, so records matching only it would be dropped: name %q in the inputs of a transform or sink, or remove the output", o, ts.Name+"."+o)
		}
	}
	v.checkCycles(reads)
}

// checkInputs checks one component's inputs, marks what they name as used
// (or, for an input that names a component wrongly, that component as
// named), and returns the transforms among them.
func (v *validator) checkInputs(kind, name string, inputs []string, optional bool, used map[endpoint]bool, named map[string]bool) []int {
	if len(inputs) == 0 && !optional {
		v.add(kind, name, "inputs", "missing: the %s is fed by nothing; list the sources, transforms or route outputs it reads", kind)
	}
	var reads []int
	for k, in := range inputs {
		field := fmt.Sprintf("inputs[%d]", k)
		if slices.Contains(inputs[:k], in) {
			v.add(kind, name, field, "%q is listed twice; each record would arrive twice", in)
			continue
		}
		e, why := v.x.input(in)
		if why != "" {
			v.add(kind, name, field, "%s", why)
			if base, _, _ := strings.Cut(in, "."); v.x.known(base) {
				named[base] = true
			}
			continue
		}
		used[e] = true
		if e.transform {
			reads = append(reads, e.idx)
		}
	}
	return reads
}

// checkCycles reports each cycle of transforms once, naming its path: the
// workers walk the graph recursively with one scratch buffer per transform,
// which is only safe in a DAG, and no record could ever leave a cycle.
func (v *validator) checkCycles(reads [][]int) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(reads))
	var path []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		path = append(path, i)
		for _, next := range reads[i] {
			switch state[next] {
			case unseen:
				visit(next)
			case onPath:
				// path runs from next to i along inputs; records flow the
				// other way, so the cycle reads next, then path backwards.
				at := slices.Index(path, next)
				cycle := []string{v.s.Transforms[next].Name}
				for j := len(path) - 1; j > at; j-- {
					cycle = append(cycle, v.s.Transforms[path[j]].Name)
				}
				cycle = append(cycle, v.s.Transforms[next].Name)
				v.add("transform", cycle[0], "inputs", "inputs form a cycle, so no record could ever leave it: %s", strings.Join(cycle, " -> "))
			}
		}
		path = path[:len(path)-1]
		state[i] = done
	}
	for i := range reads {
		if state[i] == unseen {
			visit(i)
		}
	}
}
