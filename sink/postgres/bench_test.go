package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-etl/weir/record"
)

// BenchmarkWrite measures encoding records into a group's rows, which Write
// does on the sink's goroutine: the JSON scan, the checks and the COPY text.
func BenchmarkWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		cols []Column
	}{
		{"fields", []Column{{Name: "id", Type: "bigint"}, {Name: "user", Type: "text"}, {Name: "amount", Type: "numeric"},
			{Name: "ok", Type: "boolean"}, {Name: "tag", Type: "text"}, {Name: "at", Type: "timestamptz"}}},
		{"nested", []Column{{Name: "id", Type: "bigint"}, {Name: "amount", Type: "numeric(12,2)", Field: "pay.amount"}}},
		{"whole", []Column{{Name: "doc", Type: "jsonb", Value: true}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := NewConfig()
			cfg.URL, cfg.Table, cfg.Columns = "postgres://x@h/d", "t", bc.cols
			s, err := New("db", cfg)
			if err != nil {
				b.Fatal(err)
			}
			recs := make([]record.Record, 1000)
			for i := range recs {
				recs[i] = record.New(fmt.Appendf(nil, `{"id":%d,"user":"user-%d","amount":%d.25,"ok":true,"tag":"abcdefghijklmnop","at":"2026-03-01T12:30:45.123Z","pay":{"amount":1.5}}`, i, i, i))
				recs[i].Origin = record.Origin{Source: "in", Partition: "p", Offset: int64(i)}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := s.Write(ctx, recs); err != nil {
					b.Fatal(err)
				}
				s.cur.reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}
