package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// reassign reads partition "a", loses it (Host.Lost, as a Kafka source does
// when its session expired), and is assigned "b", which the runtime gives the
// id "a" had; then it reads "b". wait, when set, is called between the two,
// after the loss.
type reassign struct {
	h     connector.Host
	polls int
	ids   [2]checkpoint.Partition
	wait  func()

	mu       sync.Mutex
	assigned bool // b was assigned
	reused   bool // b got a's id
}

func (s *reassign) Open(ctx context.Context, h connector.Host) error {
	s.h = h
	s.ids[0] = h.Assign("a", 0)
	return nil
}

func (s *reassign) Poll(ctx context.Context, b *connector.Batch) error {
	s.polls++
	k := 0
	switch s.polls {
	case 1:
	case 2:
		if s.wait != nil {
			s.wait()
		}
		s.h.Lost(s.ids[0])
		id := s.h.Assign("b", 0)
		s.mu.Lock()
		s.ids[1], s.assigned, s.reused = id, true, id == s.ids[0]
		s.mu.Unlock()
		k = 1
	default:
		return connector.ErrEndOfInput
	}
	name := []string{"a", "b"}[k]
	for i := range 10 {
		r := record.New(fmt.Appendf(nil, `{"id":%d,"p":%q}`, k*10+i, name))
		r.Origin.Offset = int64(i)
		b.Records = append(b.Records, r)
	}
	b.Partition, b.End = s.ids[k], 10
	return nil
}

func (s *reassign) Commit(context.Context, []connector.Commit) error { return nil }
func (s *reassign) Seek(_ context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	return fmt.Errorf("unexpected seek of %d to %d", p, pos)
}
func (s *reassign) Close(context.Context) error { return nil }

// Guarantee: the positions a PositionKeeper stores name the partition the
// group's records came from, even when that partition was lost and its id
// given to another before the group was sealed (the next assignment reuses a
// forgotten partition's id). Here the group holding a's ten records is sealed
// only when b's first chunk arrives, after a was lost and b took its id:
// storing them as b's position would make the sink skip all of b as stored.
// Both orders are run: b assigned before a's chunk reached the sink (whose
// first look at a then reads a's stored position), and after.
func TestPositionsNameTheirPartitionAfterItsIDIsReused(t *testing.T) {
	for _, first := range []bool{false, true} {
		name := "a's chunk reached the sink first"
		if !first {
			name = "b assigned before a's chunk reached the sink"
		}
		t.Run(name, func(t *testing.T) {
			db := newKeeperDB()
			var reached chan struct{}
			k := &keeperSink{db: db}
			src := &reassign{}
			var sk connector.Sink = k
			if first {
				reached = make(chan struct{})
				var once sync.Once
				sk = &writeHook{keeperSink: k, onWrite: func() { once.Do(func() { close(reached) }) }}
				src.wait = func() { <-reached }
			} else {
				// a's chunk is held back until b took its id.
				gate := make(chan struct{})
				var once sync.Once
				sk = &writeHook{keeperSink: k, onWrite: func() { once.Do(func() { <-gate }) }}
				src.wait = func() {}
				defer func() {
					select {
					case <-gate:
					default:
						close(gate)
					}
				}()
				go func() {
					for {
						src.mu.Lock()
						done := src.assigned
						src.mu.Unlock()
						if done {
							close(gate)
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
			}
			sp := fastSpec(src, pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: sk,
				Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
			if err := pipeline.Run(context.Background(), sp, quiet); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			src.mu.Lock()
			reused, ids := src.reused, src.ids
			src.mu.Unlock()
			if !reused {
				t.Fatalf("b got id %d, a had %d: the runtime did not reuse the id, so the test cannot tell", ids[1], ids[0])
			}
			exactlyOnce(t, db.check(t), 20)
			db.mu.Lock()
			defer db.mu.Unlock()
			if db.positions["gen/a"] != 10 || db.positions["gen/b"] != 10 {
				t.Errorf("stored positions %v; want gen/a and gen/b at 10", db.positions)
			}
		})
	}
}

// writeHook is a keeperSink that calls onWrite before each Write.
type writeHook struct {
	*keeperSink
	onWrite func()
}

func (w *writeHook) Write(ctx context.Context, recs []record.Record) error {
	w.onWrite()
	return w.keeperSink.Write(ctx, recs)
}
