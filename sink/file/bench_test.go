package file

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// BenchmarkSinkNDJSON writes ~60-byte records in groups of 10,000, each group
// made durable (fsync of the chunk, rename, fsync of the directory) by Flush
// on the writing goroutine, or, for "sealed", sealed there and persisted on a
// second goroutine with at most two groups out, as the runtime does with
// batch.overlap 2.
func BenchmarkSinkNDJSON(b *testing.B) {
	const group = 10_000
	rs := make([]record.Record, group)
	size := 0
	for i := range rs {
		v := fmt.Appendf(nil, `{"id":%d,"region":"eu-west","amount":%d.25,"ok":true}`, i, i%1000)
		rs[i] = record.New(v)
		size += len(v) + 1
	}
	for _, c := range []struct {
		name, comp string
		sealed     bool
	}{{"none", "none", false}, {"zstd", "zstd", false}, {"sealed", "none", true}} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := newSink(b, func(cfg *Config) { cfg.Compression = c.comp })
			durable := s.Flush
			if c.sealed {
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
				defer func() {
					close(sealed)
					if err := <-errc; err != nil {
						b.Fatal(err)
					}
				}()
				durable = func(ctx context.Context) error {
					g, err := s.Seal(ctx)
					if err == nil {
						sealed <- g
					}
					return err
				}
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Write(ctx, rs); err != nil {
					b.Fatal(err)
				}
				if err := durable(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(group)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkSinkParquet writes the same records as parquet in groups of
// 10,000, each made durable by Flush: with the output's inferred schema
// (checked at Write, written at Flush) and with a declared one.
func BenchmarkSinkParquet(b *testing.B) {
	const group = 10_000
	rs := make([]record.Record, group)
	size := 0
	for i := range rs {
		v := fmt.Appendf(nil, `{"id":%d,"region":"eu-west","amount":%d.25,"ok":true}`, i, i%1000)
		rs[i] = record.New(v)
		size += len(v) + 1
	}
	for _, c := range []struct {
		name   string
		schema map[string]string
	}{{"inferred", nil}, {"declared", map[string]string{"id": "int64", "region": "string", "amount": "double", "ok": "bool"}}} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := newSink(b, func(cfg *Config) { cfg.Format = "parquet"; cfg.Schema = c.schema })
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
