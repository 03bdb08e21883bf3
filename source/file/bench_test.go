package file

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// BenchmarkSourceNDJSON reads 1M NDJSON lines of about 60 bytes from a warm
// file, as the pipeline would (batches of 1000), and reports lines/s and MB/s:
// in mode once, and in mode tail, where each read is followed by the check
// that the file was not truncated meanwhile (a stat and its first bytes).
func BenchmarkSourceNDJSON(b *testing.B) {
	const lines = 1_000_000
	dir := b.TempDir()
	p := filepath.Join(dir, "in.log")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range lines {
		fmt.Fprintf(w, `{"id":%d,"region":"eu-west","amount":%d.25,"ok":true}`+"\n", i, i%1000)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	for _, mode := range []string{"once", "tail"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			for i := range b.N {
				cfg := NewConfig()
				cfg.Paths, cfg.Mode = []string{p}, mode
				cfg.DataDir = filepath.Join(dir, fmt.Sprint("state-", mode, i))
				src, err := New("bench", cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := src.Open(context.Background(), newHost()); err != nil {
					b.Fatal(err)
				}
				var batch connector.Batch
				n := 0
				for n < lines {
					err := src.Poll(context.Background(), &batch)
					if errors.Is(err, connector.ErrEndOfInput) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n += len(batch.Records)
				}
				if n != lines {
					b.Fatalf("read %d lines, want %d", n, lines)
				}
				src.Close(context.Background())
			}
			b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
