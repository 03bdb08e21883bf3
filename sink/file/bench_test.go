package file

import (
	"fmt"
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
