package pipeline_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/blackhole"
	"github.com/weir-etl/weir/transform"
)

// keepEven is a cheap filter: it drops records with an odd offset.
type keepEven struct{}

func (keepEven) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	if in.Origin.Offset%2 == 1 {
		return out, nil
	}
	return append(out, *in), nil
}

// benchAcks runs one pipeline per iteration, with the sinks' acknowledgements
// on and off, and reports source records/s and allocations per record. run
// builds, runs and checks one pipeline of perOp source records.
func benchAcks(b *testing.B, run func(b *testing.B, acks bool)) {
	for _, acks := range []bool{true, false} {
		name := "acks=on"
		if !acks {
			name = "acks=off"
		}
		b.Run(name, func(b *testing.B) {
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			start := time.Now()
			for b.Loop() {
				run(b, acks)
			}
			el := time.Since(start)
			runtime.ReadMemStats(&ms1)
			recs := float64(b.N) * perOp
			b.ReportMetric(recs/el.Seconds(), "records/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/recs, "allocs/record")
		})
	}
}

// perOp is how many source records one benchmark iteration runs.
const perOp = 100_000

// BenchmarkGenerateFilterBlackhole runs generate → filter → blackhole with the
// sink's acknowledgements on and off. The ratio of the two records/s figures is
// what acknowledgement tracking costs end to end.
func BenchmarkGenerateFilterBlackhole(b *testing.B) {
	benchAcks(b, func(b *testing.B, acks bool) {
		src := gen(b, perOp, 4, 500)
		sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"even"}, Sink: blackhole.New()})
		sp.Sinks[0].NoAcknowledgements = !acks
		sp.Sinks[0].Batch.MaxAge = 0 // the default: flush by count
		sp.Transforms = []pipeline.TransformSpec{{Name: "even", Inputs: []string{"gen"}, Transform: keepEven{}}}
		if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkFanOutRoute runs generate → route → two blackholes, with the sinks'
// acknowledgements on and off. The route sends every record to output "all"
// and half of them (the first half of each partition) to "half" as well, so
// half of the records are copied and their reference cloned: the fan-out path
// of the ack core. The conditions read only metadata, so no value is decoded
// and the figures are the runtime's. records/s counts source records.
func BenchmarkFanOutRoute(b *testing.B) {
	benchAcks(b, func(b *testing.B, acks bool) {
		r, err := transform.NewRoute([]transform.RouteOutput{
			{Name: "all", Condition: "true"},
			{Name: "half", Condition: "@origin.offset < 12500"}, // 25000 a partition
		})
		if err != nil {
			b.Fatal(err)
		}
		all, half := blackhole.New(), blackhole.New()
		sp := fastSpec(gen(b, perOp, 4, 500),
			pipeline.SinkSpec{Name: "all", Inputs: []string{"split.all"}, Sink: all},
			pipeline.SinkSpec{Name: "half", Inputs: []string{"split.half"}, Sink: half})
		for i := range sp.Sinks {
			sp.Sinks[i].NoAcknowledgements = !acks
			sp.Sinks[i].Batch.MaxAge = 0 // the default: flush by count
		}
		sp.Transforms = []pipeline.TransformSpec{{Name: "split", Inputs: []string{"gen"}, Router: r}}
		if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
			b.Fatal(err)
		}
		if all.Flushed() != perOp || half.Flushed() != perOp/2 {
			b.Fatalf("flushed %d and %d, want %d and %d", all.Flushed(), half.Flushed(), perOp, perOp/2)
		}
	})
}
