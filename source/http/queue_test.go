package http

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// queueSource is a source with one partition and no server, for driving its
// queue (enqueue, Poll, Seek, Commit) directly.
func queueSource(batch int) (*Source, *part) {
	c := NewConfig()
	c.BatchSize = batch
	s := &Source{name: "q", cfg: *c, limitBytes: 64 << 20, ready: make(chan struct{}, 1), byID: map[connector.Partition]*part{}}
	p := &part{id: 0, name: "/q@test"}
	s.parts = append(s.parts, p)
	s.byID[p.id] = p
	return s, p
}

// TestQueueModel checks the partition's queue against a model, a flat list
// of every record taken: whatever the requests' sizes, the batch size, the
// seeks and the commits, Poll hands out exactly the records from the read
// position on, with their offsets, across request boundaries; Seek replays
// from any position at or after the committed one; and a commit answers
// exactly the requests whose every record is before it, in order.
func TestQueueModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, p := queueSource(rapid.IntRange(1, 7).Draw(t, "batch"))
		var model []string // the value of each offset
		var reqs []*request
		var read, committed int64
		ctx := context.Background()
		t.Repeat(map[string]func(*rapid.T){
			"post": func(t *rapid.T) {
				n := rapid.IntRange(0, 9).Draw(t, "records")
				req := &request{done: make(chan struct{}), recs: recBufs.Get().(*recBuf)}
				for range n {
					v := fmt.Sprintf(`{"n":%d}`, len(model))
					model = append(model, v)
					req.recs.recs = append(req.recs.recs, record.New([]byte(v)))
				}
				s.mu.Lock()
				s.requests++
				s.mu.Unlock()
				if !s.enqueue(p, req, 0) {
					t.Fatal("enqueue refused while running")
				}
				if n == 0 {
					select {
					case <-req.done:
					default:
						t.Fatal("a request without records was not answered at once")
					}
					return
				}
				reqs = append(reqs, req)
			},
			"poll": func(t *rapid.T) {
				if read == int64(len(model)) {
					t.Skip("nothing to poll")
				}
				var b connector.Batch
				if err := s.Poll(ctx, &b); err != nil {
					t.Fatal(err)
				}
				want := min(int64(len(model))-read, int64(s.cfg.BatchSize))
				if int64(len(b.Records)) != want || b.End != connector.Position(read+want) {
					t.Fatalf("polled %d records ending at %d, want %d ending at %d", len(b.Records), b.End, want, read+want)
				}
				for i := range b.Records {
					off := read + int64(i)
					if got := string(b.Records[i].Bytes()); got != model[off] || b.Records[i].Origin.Offset != off {
						t.Fatalf("record %d of the batch: %q at offset %d, want %q at %d", i, got, b.Records[i].Origin.Offset, model[off], off)
					}
				}
				read += want
			},
			"seek": func(t *rapid.T) {
				pos := rapid.Int64Range(committed, int64(len(model))).Draw(t, "to")
				if err := s.Seek(ctx, p.id, connector.Position(pos)); err != nil {
					t.Fatal(err)
				}
				read = pos
			},
			"commit": func(t *rapid.T) {
				if read < committed {
					t.Skip("nothing polled past the commit")
				}
				pos := rapid.Int64Range(committed, read).Draw(t, "at")
				if err := s.Commit(ctx, []connector.Commit{{Partition: p.id, Position: connector.Position(pos)}}); err != nil {
					t.Fatal(err)
				}
				committed = pos
				for i, r := range reqs {
					select {
					case <-r.done:
						if r.end > pos {
							t.Fatalf("request %d (records to %d) answered at a commit at %d", i, r.end, pos)
						}
					default:
						if r.end <= pos {
							t.Fatalf("request %d (records to %d) not answered at a commit at %d", i, r.end, pos)
						}
					}
				}
			},
		})
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkQueue is one request of 500 records taken, polled in batches of
// the default size and committed: the source's own work on a request past
// its decoding.
func BenchmarkQueue(b *testing.B) {
	s, p := queueSource(NewConfig().BatchSize)
	ctx := context.Background()
	vals := make([]record.Record, 500)
	for i := range vals {
		vals[i] = record.New([]byte(`{"a":1}`))
	}
	var batch connector.Batch
	b.ReportAllocs()
	for b.Loop() {
		req := &request{done: make(chan struct{}), recs: recBufs.Get().(*recBuf)}
		req.recs.recs = append(req.recs.recs, vals...)
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		s.enqueue(p, req, 0)
		for p.read < p.next {
			batch.Records = batch.Records[:0]
			if err := s.Poll(ctx, &batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Commit(ctx, []connector.Commit{{Partition: p.id, Position: batch.End}}); err != nil {
			b.Fatal(err)
		}
	}
}
