package file

import (
	"fmt"
	"github.com/weir-etl/weir/connector"
	"testing"

	"github.com/weir-etl/weir/record"
)

// BenchmarkSinkNDJSON writes ~60-byte records in groups of 10,000, each group
// made durable by Flush (fsync of the chunk, rename, fsync of the directory).
func BenchmarkSinkNDJSON(b *testing.B) {
	for _, comp := range []string{"none", "zstd"} {
		b.Run(comp, func(b *testing.B) {
			s, _ := newSink(b, func(c *Config) { c.Compression = comp })
			const group = 10_000
			rs := make([]record.Record, group)
			size := 0
			for i := range rs {
				v := fmt.Appendf(nil, `{"id":%d,"region":"eu-west","amount":%d.25,"ok":true}`, i, i%1000)
				rs[i] = record.New(v)
				size += len(v) + 1
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Write(ctx, rs); err != nil {
					b.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(group)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkSinkNDJSONFlushVsSeal compares, on the same records, groups made
// durable by Flush on the writing goroutine with groups sealed there and
// persisted on a second goroutine, two at most out at once, as the runtime
// does with batch.overlap 2.
func BenchmarkSinkNDJSONFlushVsSeal(b *testing.B) {
	const group = 10_000
	rs := make([]record.Record, group)
	size := 0
	for i := range rs {
		v := fmt.Appendf(nil, `{"id":%d,"region":"eu-west","amount":%d.25,"ok":true}`, i, i%1000)
		rs[i] = record.New(v)
		size += len(v) + 1
	}
	b.Run("flush", func(b *testing.B) {
		s, _ := newSink(b, nil)
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Write(ctx, rs); err != nil {
				b.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(group)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("seal", func(b *testing.B) {
		s, _ := newSink(b, nil)
		sealed := make(chan connector.SealedGroup, 1) // with the one persisting, two out
		errc := make(chan error, 1)
		go func() {
			var first error
			for g := range sealed {
				if err := g.Persist(ctx); err != nil && first == nil {
					first = err
				}
			}
			errc <- first
		}()
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Write(ctx, rs); err != nil {
				b.Fatal(err)
			}
			g, err := s.Seal(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sealed <- g
		}
		close(sealed)
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(group)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
