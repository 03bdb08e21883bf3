package pipeline

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/transform"
)

// The stand-ins are never run: these tests only validate and compile.
type nopSource struct{ connector.Source }
type nopSink struct{ connector.Sink }

// validSpec is a pipeline that uses every kind of edge: in -> f (filter) ->
// r (route) -> r.a -> out, r.b -> out2, which dead-letters to dlq.
func validSpec(t *testing.T) *Spec {
	t.Helper()
	f, err := transform.NewFilter("true")
	if err != nil {
		t.Fatal(err)
	}
	r, err := transform.NewRoute([]transform.RouteOutput{{Name: "a", Condition: "true"}, {Name: "b", Condition: "false"}})
	if err != nil {
		t.Fatal(err)
	}
	return &Spec{
		Sources: []SourceSpec{{Name: "in", Source: nopSource{}}},
		Transforms: []TransformSpec{
			{Name: "f", Inputs: []string{"in"}, Transform: f},
			{Name: "r", Inputs: []string{"f"}, Router: r},
		},
		Sinks: []SinkSpec{
			{Name: "out", Inputs: []string{"r.a"}, Sink: nopSink{}},
			{Name: "out2", Inputs: []string{"r.b"}, Sink: nopSink{}, OnFailure: DeadLetter, DeadLetter: "dlq"},
			{Name: "dlq", Sink: nopSink{}, OnFailure: Halt},
		},
	}
}

// clone copies the slices of s that Validate might be tempted to write.
func clone(s *Spec) *Spec {
	c := *s
	c.Sources = slices.Clone(s.Sources)
	c.Transforms = slices.Clone(s.Transforms)
	c.Sinks = slices.Clone(s.Sinks)
	return &c
}

func TestValidSpecCompiles(t *testing.T) {
	sp := validSpec(t)
	before := clone(sp)
	if probs := Validate(sp); probs != nil {
		t.Fatalf("valid spec: %v", probs)
	}
	g, err := compile(sp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sp, before) {
		t.Errorf("Validate or compile changed the caller's spec:\n got %+v\nwant %+v", sp, before)
	}
	if g.sinks[0].Batch.MaxRecords != DefaultBatchMaxRecords || g.spec.Checkpoint.CommitInterval != DefaultCommitInterval ||
		g.spec.Sources[0].MaxInFlightBatches != DefaultMaxInFlightBatches {
		t.Errorf("compile did not fill the defaults: %+v %+v", g.sinks[0], g.spec.Checkpoint)
	}
	want := [][]target{{{sink: true, idx: 0}}, {{sink: true, idx: 1}}}
	if !reflect.DeepEqual(g.transforms[1].outs, want) || !reflect.DeepEqual(g.deadLetter, []int{-1, 2, -1}) {
		t.Errorf("edges: route outs %v, dead letters %v", g.transforms[1].outs, g.deadLetter)
	}
}

// TestValidateAndCompileAgree feeds every rule's bad spec to Validate and to
// compile (what Run calls): Validate must find exactly the problems listed,
// keyed by component and field, and compile must refuse the spec with a
// *SpecError holding the same problems.
func TestValidateAndCompileAgree(t *testing.T) {
	sink := func(name string, inputs ...string) SinkSpec {
		return SinkSpec{Name: name, Inputs: inputs, Sink: nopSink{}}
	}
	filter := func(t *testing.T, name string, inputs ...string) TransformSpec {
		f, err := transform.NewFilter("true")
		if err != nil {
			t.Fatal(err)
		}
		return TransformSpec{Name: name, Inputs: inputs, Transform: f}
	}
	type p = Problem
	cases := []struct {
		name   string
		mutate func(t *testing.T, s *Spec)
		want   []Problem // Msg is a part of the message
	}{
		{"no sources", func(t *testing.T, s *Spec) { s.Sources = nil },
			[]p{{"", "", "sources", "missing: a pipeline needs at least one source"}, {"transform", "f", "inputs[0]", `"in" names no source`}}},
		{"no sinks", func(t *testing.T, s *Spec) { s.Sinks = nil },
			[]p{{"", "", "sinks", "missing: a pipeline needs at least one sink"}, {"transform", "r", "", "feeds nothing"}}},
		{"no name", func(t *testing.T, s *Spec) { s.Sinks = append(s.Sinks, sink("", "r.a")) },
			[]p{{"sink", "", "", "has no name"}}},
		{"bad name", func(t *testing.T, s *Spec) { s.Sinks = append(s.Sinks, sink("a.b", "r.a")) },
			[]p{{"sink", "a.b", "", `"a.b" is not a valid component name`}}},
		{"name with a space", func(t *testing.T, s *Spec) { s.Sinks = append(s.Sinks, sink("my sink", "r.a")) },
			[]p{{"sink", "my sink", "", "is not a valid component name"}}},
		{"name used twice", func(t *testing.T, s *Spec) { s.Sinks = append(s.Sinks, sink("f", "r.a")) },
			[]p{{"sink", "f", "", `the name "f" is already used by a transform`}}},
		{"source nil", func(t *testing.T, s *Spec) { s.Sources[0].Source = nil },
			[]p{{"source", "in", "", "Source is nil"}}},
		{"negative in-flight batches", func(t *testing.T, s *Spec) { s.Sources[0].MaxInFlightBatches = -1 },
			[]p{{"source", "in", "max_in_flight_batches", "must be more than 0 (unset means the default, 1024)"}}},
		{"negative in-flight bytes", func(t *testing.T, s *Spec) { s.Sources[0].MaxInFlightBytes = -1 },
			[]p{{"source", "in", "max_in_flight_bytes", "must be more than 0"}}},
		{"transform and router", func(t *testing.T, s *Spec) { s.Transforms[1].Transform = s.Transforms[0].Transform },
			[]p{{"transform", "r", "", "set exactly one of Transform and Router"}}},
		{"neither transform nor router", func(t *testing.T, s *Spec) { s.Transforms[0].Transform = nil },
			[]p{{"transform", "f", "", "set exactly one of Transform and Router"}}},
		{"sink nil", func(t *testing.T, s *Spec) { s.Sinks[0].Sink = nil },
			[]p{{"sink", "out", "", "Sink is nil"}}},
		{"negative max_records", func(t *testing.T, s *Spec) { s.Sinks[0].Batch.MaxRecords = -1 },
			[]p{{"sink", "out", "batch.max_records", "must be more than 0 (unset means the default, 10000)"}}},
		{"negative max_bytes", func(t *testing.T, s *Spec) { s.Sinks[0].Batch.MaxBytes = -1 },
			[]p{{"sink", "out", "batch.max_bytes", "must be more than 0"}}},
		{"negative max_age", func(t *testing.T, s *Spec) { s.Sinks[0].Batch.MaxAge = -1 },
			[]p{{"sink", "out", "batch.max_age", "must be more than 0 (unset means the default, 1s)"}}},
		{"negative overlap", func(t *testing.T, s *Spec) { s.Sinks[0].Batch.Overlap = -1 },
			[]p{{"sink", "out", "batch.overlap", "must be more than 0"}}},
		{"negative linger", func(t *testing.T, s *Spec) { s.Sinks[0].Batch.Linger = -1 },
			[]p{{"sink", "out", "batch.linger", "must not be negative"}}},
		{"linger not below the default max_age", func(t *testing.T, s *Spec) { s.Sinks[0].Batch.Linger = time.Second },
			[]p{{"sink", "out", "batch.linger", "must be less than max_age (1s)"}}},
		{"linger not below max_age", func(t *testing.T, s *Spec) {
			s.Sinks[0].Batch.Linger, s.Sinks[0].Batch.MaxAge = 3*time.Second, 2*time.Second
		}, []p{{"sink", "out", "batch.linger", "must be less than max_age (2s)"}}},
		{"negative max_attempts", func(t *testing.T, s *Spec) { s.Sinks[0].Retry.MaxAttempts = -1 },
			[]p{{"sink", "out", "retry.max_attempts", "must be more than 0"}}},
		{"negative initial_backoff", func(t *testing.T, s *Spec) { s.Sinks[0].Retry.InitialBackoff = -1 },
			[]p{{"sink", "out", "retry.initial_backoff", "must be more than 0"}}},
		{"negative max_backoff", func(t *testing.T, s *Spec) { s.Sinks[0].Retry.MaxBackoff = -1 },
			[]p{{"sink", "out", "retry.max_backoff", "must be more than 0"}}},
		{"negative max_elapsed", func(t *testing.T, s *Spec) { s.Sinks[0].Retry.MaxElapsed = -1 },
			[]p{{"sink", "out", "retry.max_elapsed", "must be more than 0"}}},
		{"max_backoff below initial_backoff", func(t *testing.T, s *Spec) {
			s.Sinks[0].Retry.InitialBackoff, s.Sinks[0].Retry.MaxBackoff = 2*time.Second, time.Second
		}, []p{{"sink", "out", "retry.max_backoff", "is less than initial_backoff (2s)"}}},
		{"unknown policy", func(t *testing.T, s *Spec) { s.Sinks[0].OnFailure = 7 },
			[]p{{"sink", "out", "on_failure", "unknown policy 7"}}},
		{"dead_letter without the policy", func(t *testing.T, s *Spec) { s.Sinks[0].DeadLetter = "dlq" },
			[]p{{"sink", "out", "dead_letter", "is set but neither on_failure nor on_give_up is dead_letter"}}},
		{"dead_letter missing", func(t *testing.T, s *Spec) { s.Sinks[0].OnFailure = DeadLetter },
			[]p{{"sink", "out", "dead_letter", "missing: on_failure is dead_letter"}}},
		{"dead_letter missing for on_give_up", func(t *testing.T, s *Spec) { s.Sinks[0].OnGiveUp = GiveUpDeadLetter },
			[]p{{"sink", "out", "dead_letter", "missing: on_give_up is dead_letter"}}},
		{"unknown give-up policy", func(t *testing.T, s *Spec) { s.Sinks[0].OnGiveUp = 9 },
			[]p{{"sink", "out", "on_give_up", "unknown policy 9"}}},
		{"dead letter sink gives up to a dead letter", func(t *testing.T, s *Spec) {
			s.Sinks[2].OnGiveUp, s.Sinks[2].DeadLetter = GiveUpDeadLetter, "out"
		}, []p{{"sink", "out2", "dead_letter", `sink "dlq" itself sends records to a dead letter sink`}}},
		{"negative commit_failure_timeout", func(t *testing.T, s *Spec) { s.Checkpoint.CommitFailureTimeout = -1 },
			[]p{{"checkpoint", "", "commit_failure_timeout", "must be more than 0"}}},
		{"dead_letter itself", func(t *testing.T, s *Spec) { s.Sinks[1].DeadLetter = "out2" },
			[]p{{"sink", "out2", "dead_letter", "names the sink itself"}, {"sink", "dlq", "inputs", "fed by nothing"}}},
		{"dead_letter names no sink", func(t *testing.T, s *Spec) { s.Sinks[1].DeadLetter = "dlqq" },
			[]p{{"sink", "out2", "dead_letter", `"dlqq" names no sink; did you mean "dlq"?`}, {"sink", "dlq", "inputs", "fed by nothing"}}},
		{"dead letter sink uses dead_letter", func(t *testing.T, s *Spec) {
			s.Sinks[2].OnFailure, s.Sinks[2].DeadLetter = DeadLetter, "out"
		}, []p{{"sink", "out2", "dead_letter", `sink "dlq" itself sends records to a dead letter sink`}}},
		{"sink fed by nothing", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = nil },
			[]p{{"sink", "out", "inputs", "missing: the sink is fed by nothing"}, {"transform", "r", "outputs.a", `route output "a" feeds nothing`}}},
		{"transform fed by nothing", func(t *testing.T, s *Spec) { s.Transforms[0].Inputs = nil },
			[]p{{"transform", "f", "inputs", "missing: the transform is fed by nothing"}, {"source", "in", "", "feeds nothing"}}},
		{"input listed twice", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "r.a"} },
			[]p{{"sink", "out", "inputs[1]", `"r.a" is listed twice`}}},
		{"input names nothing", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "ff"} },
			[]p{{"sink", "out", "inputs[1]", `"ff" names no source, transform or route output; did you mean "f"?`}}},
		{"input names nothing near", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "payments"} },
			[]p{{"sink", "out", "inputs[1]", "valid inputs: f, in, r.a, r.b"}}},
		{"input is a sink", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "dlq"} },
			[]p{{"sink", "out", "inputs[1]", `"dlq" is a sink, and sinks have no output`}}},
		// One fault, one message: the route's outputs that no input names
		// now are not also reported as feeding nothing.
		{"input is a bare route", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r"} },
			[]p{{"sink", "out", "inputs[0]", `"r" is a route: name one of its outputs (r.a, r.b)`}}},
		{"route has no such output", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "r.c"} },
			[]p{{"sink", "out", "inputs[1]", `route "r" has no output "c"; its outputs are r.a, r.b`}}},
		{"output of a transform", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "f.x"} },
			[]p{{"sink", "out", "inputs[1]", `"f" is not a route, so "f.x" names nothing; write "f"`}}},
		{"output of a source", func(t *testing.T, s *Spec) { s.Sinks[0].Inputs = []string{"r.a", "in.x"} },
			[]p{{"sink", "out", "inputs[1]", `"in" is not a route, so "in.x" names nothing`}}},
		{"source feeds nothing", func(t *testing.T, s *Spec) {
			s.Sources = append(s.Sources, SourceSpec{Name: "extra", Source: nopSource{}})
		},
			[]p{{"source", "extra", "", "feeds nothing, so its records would be dropped"}}},
		{"transform feeds nothing", func(t *testing.T, s *Spec) { s.Transforms = append(s.Transforms, filter(t, "g", "in")) },
			[]p{{"transform", "g", "", "feeds nothing"}}},
		{"route output feeds nothing", func(t *testing.T, s *Spec) { s.Sinks[1].Inputs = []string{"r.a"} },
			[]p{{"transform", "r", "outputs.b", `route output "b" feeds nothing, so records matching only it would be dropped: name "r.b"`}}},
		{"cycle", func(t *testing.T, s *Spec) {
			s.Transforms = append(s.Transforms, filter(t, "a", "in", "c"), filter(t, "b", "a"), filter(t, "c", "b"))
			s.Sinks[0].Inputs = append(s.Sinks[0].Inputs, "c")
		}, []p{{"transform", "a", "inputs", "inputs form a cycle, so no record could ever leave it: a -> b -> c -> a"}}},
		{"negative commit_interval", func(t *testing.T, s *Spec) { s.Checkpoint.CommitInterval = -1 },
			[]p{{"checkpoint", "", "commit_interval", "must be more than 0 (unset means the default, 5s)"}}},
		{"negative shutdown_timeout", func(t *testing.T, s *Spec) { s.Checkpoint.ShutdownTimeout = -1 },
			[]p{{"checkpoint", "", "shutdown_timeout", "must be more than 0"}}},
		{"negative drain_timeout", func(t *testing.T, s *Spec) { s.Checkpoint.DrainTimeout = -1 },
			[]p{{"checkpoint", "", "drain_timeout", "must be more than 0"}}},
		{"negative stall_warning", func(t *testing.T, s *Spec) { s.Checkpoint.StallWarning = -1 },
			[]p{{"checkpoint", "", "stall_warning", "must be more than 0"}}},
		{"negative commit_timeout", func(t *testing.T, s *Spec) { s.Checkpoint.CommitTimeout = -1 },
			[]p{{"checkpoint", "", "commit_timeout", "must be more than 0 (unset means the default, 30s)"}}},
		{"metrics address", func(t *testing.T, s *Spec) { s.Metrics.Address = "localhost" },
			[]p{{"metrics", "", "address", `"localhost" is not host:port`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := validSpec(t)
			c.mutate(t, sp)
			probs := Validate(sp)
			if len(probs) != len(c.want) {
				t.Fatalf("Validate found %d problems, want %d:\n%s", len(probs), len(c.want), lines(probs))
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(probs, func(p Problem) bool {
					return p.Kind == w.Kind && p.Name == w.Name && p.Field == w.Field && strings.Contains(p.Msg, w.Msg)
				}) {
					t.Errorf("no problem %+v in:\n%s", w, lines(probs))
				}
			}
			_, err := compile(sp)
			var se *SpecError
			if !errors.Is(err, ErrSpec) || !errors.As(err, &se) {
				t.Fatalf("compile: got %v, want a *SpecError wrapping ErrSpec", err)
			}
			if !reflect.DeepEqual(se.Problems, probs) {
				t.Errorf("compile and Validate disagree:\ncompile:  %s\nValidate: %s", lines(se.Problems), lines(probs))
			}
		})
	}
}

func lines(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("\t" + p.String() + "\n")
	}
	return b.String()
}

func TestNilSpec(t *testing.T) {
	if probs := Validate(nil); len(probs) != 1 || probs[0].Msg != "the spec is nil" {
		t.Errorf("Validate(nil) = %v", probs)
	}
	if _, err := compile(nil); !errors.Is(err, ErrSpec) {
		t.Errorf("compile(nil) = %v", err)
	}
}

func TestSpecErrorText(t *testing.T) {
	one := &SpecError{Problems: []Problem{{Kind: "sink", Name: "out", Field: "dead_letter", Msg: "is set but on_failure is not dead_letter"}}}
	if got, want := one.Error(), `pipeline: invalid spec: sink "out": dead_letter: is set but on_failure is not dead_letter`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	two := &SpecError{Problems: []Problem{
		{Field: "sources", Msg: "missing: a pipeline needs at least one source"},
		{Kind: "checkpoint", Field: "commit_interval", Msg: "must be more than 0"},
	}}
	want := "pipeline: invalid spec: 2 problems:\nsources: missing: a pipeline needs at least one source\ncheckpoint: commit_interval: must be more than 0"
	if got := two.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
