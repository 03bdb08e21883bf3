package pipeline

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// BenchmarkIssueLock measures what the poller does per batch under the
// Host's lock (check the positions, issue the reference, look up the name),
// and an uncontended sync.Mutex alone, to show what making the Host safe from
// any goroutine costs: one lock per batch, not per record.
func BenchmarkIssueLock(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("checkAndIssue/records=%d", n), func(b *testing.B) {
			rt := &runtime{log: slog.New(slog.DiscardHandler), m: newMetrics(), now: time.Now, g: &graph{}}
			s := newSourceRunner(rt, 0, SourceSpec{Name: "s"})
			p := s.Assign("p", 0)
			batch := &connector.Batch{Partition: p}
			for i := range n {
				r := record.New(nil)
				r.Origin.Offset = int64(i)
				batch.Records = append(batch.Records, r)
			}
			var pos int64
			b.ReportAllocs()
			for b.Loop() {
				for i := range batch.Records {
					batch.Records[i].Origin.Offset = pos + int64(i)
				}
				pos += int64(n)
				batch.End = checkpoint.Position(pos)
				ref, _, _, err := s.checkAndIssue(batch)
				if err != nil {
					b.Fatal(err)
				}
				ref.Release(checkpoint.Delivered)
				s.cp.Drain()
			}
		})
	}
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		n := 0
		for b.Loop() {
			mu.Lock()
			n++
			mu.Unlock()
		}
		_ = n
	})
}
