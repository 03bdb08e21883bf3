package s3

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// BenchmarkWrite writes groups of 10,000 records of one partition and
// commits each over the in-memory bucket: the sink's own cost per record,
// encoding and bookkeeping, without a server.
func BenchmarkWrite(b *testing.B) {
	for _, tc := range []struct {
		name        string
		format, cmp string
	}{{"ndjson", "ndjson", "none"}, {"ndjson-zstd", "ndjson", "zstd"}, {"parquet-zstd", "parquet", "zstd"}} {
		b.Run(tc.name, func(b *testing.B) {
			recs := make([]record.Record, 10000)
			for i := range recs {
				recs[i] = record.New(fmt.Appendf(nil, `{"id":%d,"user":"user-%d","amount":%d.25,"ok":true,"tag":"abcdefghijklmnopqrstuvwxyz0123456789"}`, i, i%100000, i%99991))
				recs[i].Origin = record.Origin{Source: "src", Partition: "p/0", Offset: int64(i)}
			}
			st := newMemStore()
			s := newMemSink(b, st, func(c *Config) { c.Format, c.Compression = tc.format, tc.cmp })
			if err := s.Open(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var off int64
			for range b.N {
				for i := range recs {
					recs[i].Origin.Offset = off + int64(i)
				}
				off += int64(len(recs))
				if err := s.Write(ctx, recs); err != nil {
					b.Fatal(err)
				}
				s.GroupPositions([]connector.GroupPosition{{Source: "src", Partition: "p/0", Position: connector.Position(off)}})
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				st.mu.Lock()
				for k := range st.objects { // keep the bucket's memory flat
					if !strings.Contains(k, "/_weir/") {
						delete(st.objects, k)
					}
				}
				st.calls = st.calls[:0]
				st.mu.Unlock()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}
