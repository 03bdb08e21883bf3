package pipeline_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// fieldsSink reads every record's fields in Write, as a parquet or templated
// file sink does, and counts records that hold the field "tagged".
type fieldsSink struct {
	conformance.MemSink
	tagged atomic.Int64
}

func (s *fieldsSink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		f, err := recs[i].Fields()
		if err != nil {
			return err
		}
		if _, ok := f["tagged"]; ok {
			s.tagged.Add(1)
		}
	}
	return s.MemSink.Write(ctx, recs)
}

// A record fanned out to sinks shares its decoded fields with the copies
// (sinks only read), but a copy bound for a transform gets fields of its own:
// a map downstream must not change what a sibling sink sees. Under -race the
// first case also checks that the sinks' concurrent reads are only reads.
func TestFanOutCopiesFieldsOnlyForTransforms(t *testing.T) {
	decode, err := transform.NewFilter("seq >= 0") // decodes every record
	if err != nil {
		t.Fatal(err)
	}
	tag, err := transform.NewMap(transform.MapConfig{Set: []transform.Assignment{{Field: "tagged", Expr: "true"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, viaMap := range []bool{false, true} {
		t.Run(fmt.Sprintf("via map %v", viaMap), func(t *testing.T) {
			const n = 2000
			a, b := &fieldsSink{}, &fieldsSink{}
			bIn := "decoded"
			sp := fastSpec(gen(t, n, 2, 100),
				pipeline.SinkSpec{Name: "a", Inputs: []string{"decoded"}, Sink: a},
				pipeline.SinkSpec{Name: "b", Inputs: []string{bIn}, Sink: b})
			sp.Transforms = []pipeline.TransformSpec{{Name: "decoded", Inputs: []string{"gen"}, Transform: decode}}
			if viaMap {
				sp.Transforms = append(sp.Transforms, pipeline.TransformSpec{Name: "tag", Inputs: []string{"decoded"}, Transform: tag})
				sp.Sinks[1].Inputs = []string{"tag"}
			}
			if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
				t.Fatal(err)
			}
			if got := len(a.Values()); got != n {
				t.Fatalf("sink a wrote %d records, want %d", got, n)
			}
			if got := a.tagged.Load(); got != 0 {
				t.Fatalf("sink a saw %d records with the field set by a transform on another branch", got)
			}
			if want := map[bool]int64{false: 0, true: n}[viaMap]; b.tagged.Load() != want {
				t.Fatalf("sink b saw %d tagged records, want %d", b.tagged.Load(), want)
			}
		})
	}
}
