package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/blackhole"
)

// failRoute routes every record to both of its outputs, and fails on the
// record at one offset.
type failRoute int64

func (failRoute) Outputs() []string { return []string{"x", "y"} }

func (f failRoute) Route(in *record.Record, dst []int) ([]int, error) {
	if in.Origin.Offset == int64(f) {
		return dst, errors.New("route condition compared null with a number")
	}
	return append(dst, 0, 1), nil
}

// Guarantee: a transform error resolves the record as rejected and routes it
// by the failure policy of the sinks downstream. When all of them dead-letter,
// the record goes, with the error, the transform and its origin, to each
// distinct dead letter sink, and counts as delivered once written there: the
// pipeline goes on and commits to the end.
func TestTransformErrorFollowsDeadLetterPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool // both sinks dead-letter into the same sink
		route  bool // the failing component is a route
	}{
		{name: "one dead letter sink per sink"},
		{name: "shared dead letter sink", shared: true},
		{name: "route fails", route: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := gen(t, 1000, 1, 10)
			a, b, dla, dlb := &conformance.MemSink{}, &conformance.MemSink{}, &conformance.MemSink{}, &conformance.MemSink{}
			dlbName := "dlb"
			if tc.shared {
				dlbName = "dla"
			}
			inA, inB := []string{"bad"}, []string{"bad"}
			if tc.route {
				inA, inB = []string{"bad.x"}, []string{"bad.y"}
			}
			sinks := []pipeline.SinkSpec{
				{Name: "a", Inputs: inA, Sink: a, OnFailure: pipeline.DeadLetter, DeadLetter: "dla"},
				{Name: "b", Inputs: inB, Sink: b, OnFailure: pipeline.DeadLetter, DeadLetter: dlbName},
				{Name: "dla", Sink: dla},
			}
			if !tc.shared {
				sinks = append(sinks, pipeline.SinkSpec{Name: "dlb", Sink: dlb})
			}
			sp := fastSpec(src, sinks...)
			ts := pipeline.TransformSpec{Name: "bad", Inputs: []string{"gen"}, Transform: failAt(55)}
			if tc.route {
				ts = pipeline.TransformSpec{Name: "bad", Inputs: []string{"gen"}, Router: failRoute(55)}
			}
			sp.Transforms = []pipeline.TransformSpec{ts}
			if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
				t.Fatalf("Run: %v; want the rejected record dead-lettered and the run to finish", err)
			}
			dead := append(dla.Values(), dlb.Values()...)
			want := 2
			if tc.shared {
				want = 1
			}
			if len(dead) != want {
				t.Fatalf("dead letters: %d, want %d: %q", len(dead), want, dead)
			}
			for _, d := range dead {
				for _, part := range []string{`"transform":"bad"`, `"source":"gen"`, `"partition":"gen/0"`, `"offset":55`, `"seq":55`, errText(tc.route)} {
					if !bytes.Contains(d, []byte(part)) {
						t.Errorf("dead letter %s lacks %s", d, part)
					}
				}
				if bytes.Contains(d, []byte(`"sink"`)) {
					t.Errorf("dead letter %s names a sink; the transform failed", d)
				}
			}
			if len(a.Values()) != 999 || len(b.Values()) != 999 {
				t.Errorf("sinks got %d and %d records, want 999 each", len(a.Values()), len(b.Values()))
			}
			if got := src.Offsets().Get("gen/0"); got != 1000 {
				t.Errorf("committed %d, want 1000: a dead-lettered record is delivered", got)
			}
		})
	}
}

func errText(route bool) string {
	if route {
		return "null with a number"
	}
	return "field amount is not a number"
}

// Guarantee: when any acknowledging sink downstream of the failing transform
// uses rewind or halt, the transform error halts the pipeline (replay cannot
// fix a rejected record) even if the other sinks dead-letter, and nothing at or
// past the record's batch is committed.
func TestTransformErrorHaltsUnlessAllDownstreamDeadLetter(t *testing.T) {
	for _, pol := range []pipeline.FailurePolicy{pipeline.Rewind, pipeline.Halt} {
		t.Run(pol.String(), func(t *testing.T) {
			src := gen(t, 1000, 1, 10)
			dl := &conformance.MemSink{}
			sp := fastSpec(src,
				pipeline.SinkSpec{Name: "a", Inputs: []string{"bad"}, Sink: blackhole.New(), OnFailure: pipeline.DeadLetter, DeadLetter: "dl"},
				pipeline.SinkSpec{Name: "b", Inputs: []string{"bad"}, Sink: blackhole.New(), OnFailure: pol},
				pipeline.SinkSpec{Name: "dl", Sink: dl})
			sp.Transforms = []pipeline.TransformSpec{{Name: "bad", Inputs: []string{"gen"}, Transform: failAt(55)}}
			err := pipeline.Run(context.Background(), sp, quiet)
			var he *pipeline.HaltError
			if !errors.As(err, &he) || he.Sink != "" || !strings.Contains(err.Error(), "bad rejected a record (offset 55)") {
				t.Fatalf("Run returned %v, want a halt naming transform bad at offset 55", err)
			}
			if got := src.Offsets().Get("gen/0"); got > 50 {
				t.Errorf("committed %d, past the rejected batch at 50", got)
			}
			if n := len(dl.Values()); n != 0 {
				t.Errorf("the dead letter sink got %d records; a halting sink downstream means halt", n)
			}
		})
	}
}

// Guarantee: a transform error upstream of sinks that all have
// acknowledgements off drops the record (as those sinks drop their own
// failures): nothing holds the watermark, and the run goes on.
func TestTransformErrorBeforeUnacknowledgedSinksDrops(t *testing.T) {
	src := gen(t, 1000, 1, 10)
	bh := blackhole.New()
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"bad"}, Sink: bh})
	sp.Sinks[0].NoAcknowledgements = true
	sp.Transforms = []pipeline.TransformSpec{{Name: "bad", Inputs: []string{"gen"}, Transform: failAt(55)}}
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatalf("Run: %v; want the record dropped and the run to finish", err)
	}
	if got := bh.Flushed(); got != 999 {
		t.Errorf("flushed %d, want 999", got)
	}
	if got := src.Offsets().Get("gen/0"); got != 1000 {
		t.Errorf("committed %d, want 1000", got)
	}
}
