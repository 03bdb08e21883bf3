package config

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/transform"
)

// TestValidateRefusesWhatRunRefuses checks that a file `weir validate`
// accepts is one `weir run` accepts, and the other way round: each case is a
// pipeline file and the same pipeline built in Go. The loader must refuse the
// file at the line of the setting at fault, with the message pipeline.Run
// gives for the Spec. (A dead letter sink that itself used on_failure
// dead_letter once passed validate and failed run.)
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	src := func(name string) pipeline.SourceSpec {
		return pipeline.SourceSpec{Name: name, Source: &testSource{name: name}}
	}
	sink := func(name string, inputs ...string) pipeline.SinkSpec {
		return pipeline.SinkSpec{Name: name, Inputs: inputs, Sink: &testSink{name: name}}
	}
	route := func(t *testing.T, outs ...string) transform.Router {
		var ro []transform.RouteOutput
		for _, o := range outs {
			ro = append(ro, transform.RouteOutput{Name: o, Condition: "true"})
		}
		r, err := transform.NewRoute(ro)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := []struct {
		name  string
		yaml  string
		spec  func(t *testing.T) *pipeline.Spec
		line  int
		field string
	}{
		{
			name: "dead letter sink uses dead_letter",
			yaml: `sources:
  in: { type: test_source, path: /in }
sinks:
  out:
    type: test_sink
    inputs: [in]
    on_failure: dead_letter
    dead_letter: dlq
  dlq:
    type: test_sink
    on_failure: dead_letter
    dead_letter: last
  last: { type: test_sink }
`,
			spec: func(t *testing.T) *pipeline.Spec {
				out, dlq := sink("out", "in"), sink("dlq")
				out.OnFailure, out.DeadLetter = pipeline.DeadLetter, "dlq"
				dlq.OnFailure, dlq.DeadLetter = pipeline.DeadLetter, "last"
				return &pipeline.Spec{Sources: []pipeline.SourceSpec{src("in")}, Sinks: []pipeline.SinkSpec{out, dlq, sink("last")}}
			},
			line: 8, field: "sinks.out.dead_letter",
		},
		{
			name: "input listed twice",
			yaml: `sources:
  in: { type: test_source, path: /in }
sinks:
  out:
    type: test_sink
    inputs:
      - in
      - in
`,
			spec: func(t *testing.T) *pipeline.Spec {
				return &pipeline.Spec{Sources: []pipeline.SourceSpec{src("in")}, Sinks: []pipeline.SinkSpec{sink("out", "in", "in")}}
			},
			line: 8, field: "sinks.out.inputs[1]",
		},
		{
			name: "route output feeds nothing",
			yaml: `sources:
  in: { type: test_source, path: /in }
transforms:
  r:
    type: route
    inputs: [in]
    outputs:
      a: "true"
      b: "true"
sinks:
  out: { type: test_sink, inputs: [r.a] }
`,
			spec: func(t *testing.T) *pipeline.Spec {
				return &pipeline.Spec{
					Sources:    []pipeline.SourceSpec{src("in")},
					Transforms: []pipeline.TransformSpec{{Name: "r", Inputs: []string{"in"}, Router: route(t, "a", "b")}},
					Sinks:      []pipeline.SinkSpec{sink("out", "r.a")},
				}
			},
			line: 9, field: "transforms.r.outputs.b",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := c.spec(t)
			sp.Metrics.Address = "off"
			runErr := pipeline.Run(context.Background(), sp, pipeline.WithLogger(slog.New(slog.DiscardHandler)))
			if !errors.Is(runErr, pipeline.ErrSpec) {
				t.Fatalf("run: got %v, want an error wrapping ErrSpec", runErr)
			}
			_, err := parse("p.yaml", []byte(c.yaml), env(nil))
			var es *Errors
			if !errors.As(err, &es) {
				t.Fatalf("validate accepted what run refuses (%v); got %v", runErr, err)
			}
			for _, e := range es.List {
				if e.Line == c.line && e.Field == c.field && strings.Contains(runErr.Error(), e.Msg) {
					return
				}
			}
			t.Errorf("no problem at line %d, field %s, with run's message\nrun: %v\nvalidate: %v", c.line, c.field, runErr, err)
		})
	}
}
