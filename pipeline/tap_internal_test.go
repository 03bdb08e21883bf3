package pipeline

import (
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/tap"
	"github.com/weir-etl/weir/record"
)

// BenchmarkTapHooks is what the tap hooks cost one batch of 500 records
// going through a source, a transform and a sink: with nobody tapping (one
// atomic load and nil checks), and with a tap open on another component
// (the table is loaded and its empty lists ranged over). Neither samples a
// record, so both must stay at 0 allocs/op and a few nanoseconds.
func BenchmarkTapHooks(b *testing.B) {
	recs := make([]record.Record, 500)
	for i := range recs {
		recs[i] = record.New([]byte(`{"i":1}`))
	}
	batch := &connector.Batch{Records: recs}
	for _, tc := range []struct {
		name      string
		elsewhere bool
	}{
		{"nobody", false},
		{"elsewhere", true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rt := &runtime{}
			rt.taps.shape = tap.Shape{Sources: 2, RouteOuts: []int{0}, Sinks: 2}
			if tc.elsewhere {
				if err := rt.taps.Add(&rt.taps.shape, tap.New(tap.Point{Kind: tap.Sink, Idx: 1, Out: -1}, "other", 1, -1, time.Now())); err != nil {
					b.Fatal(err)
				}
			}
			w := &worker{rt: rt}
			src := &sourceRunner{idx: 0}
			snk := &sinkRunner{rt: rt, idx: 0}
			b.ReportAllocs()
			for b.Loop() {
				w.tapBatch(src, batch)
				w.tapOut(0, recs)
				snk.tapIn(recs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
		})
	}
}
