package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/blackhole"
)

// rotator is a source that, like a tail-mode file source under rotation,
// gives every batch a partition of its own: it assigns a new name, polls one
// batch of it, revokes it, and goes on with the next name.
type rotator struct {
	h       connector.Host
	n, done int
	cur     connector.Partition
	open    bool
}

func (r *rotator) Open(_ context.Context, h connector.Host) error { r.h = h; return nil }

func (r *rotator) Poll(ctx context.Context, b *connector.Batch) error {
	if r.open {
		if err := r.h.Revoke(ctx, r.cur); err != nil {
			return err
		}
		r.open = false
		r.done++
	}
	if r.done == r.n {
		return connector.ErrEndOfInput
	}
	r.cur = r.h.Assign(fmt.Sprintf("file-%d", r.done), 0)
	r.open = true
	for i := range 3 {
		rec := record.New([]byte(`{}`))
		rec.Origin.Offset = int64(i)
		b.Records = append(b.Records, rec)
	}
	b.Partition, b.End = r.cur, 3
	return nil
}

func (r *rotator) Commit(context.Context, []connector.Commit) error { return nil }
func (r *rotator) Seek(context.Context, connector.Partition, connector.Position) error {
	return nil
}
func (r *rotator) Close(context.Context) error { return nil }

// Guarantee: partition ids are reused after the source forgets a partition,
// so the runtime's tables stay as small as the live partitions over 10,000
// rotations. Before, every new partition took a new slot for ever.
func TestPartitionIDsAreReused(t *testing.T) {
	const rotations = 10_000
	src := &rotator{n: rotations}
	spec := &Spec{
		Sources:    []SourceSpec{{Name: "files", Source: src}},
		Sinks:      []SinkSpec{{Name: "out", Inputs: []string{"files"}, Sink: blackhole.New(), Batch: BatchSettings{MaxAge: time.Millisecond}}},
		Checkpoint: CheckpointSettings{CommitInterval: 10 * time.Millisecond, DrainTimeout: time.Minute},
	}
	var rt *runtime
	err := Run(context.Background(), spec, WithLogger(slog.New(slog.DiscardHandler)),
		func(o *options) { o.hooks.started = func(r *runtime) { rt = r } })
	if err != nil {
		t.Fatal(err)
	}
	s := rt.sources[0]
	s.hostMu.Lock()
	names, byName := len(s.host.names), len(s.host.byName)
	s.hostMu.Unlock()
	if src.done != rotations {
		t.Fatalf("%d rotations done, want %d", src.done, rotations)
	}
	if names > 2 || byName > 1 {
		t.Errorf("after %d rotations the source's tables hold %d ids and %d names; want at most 2 and 1 (the live partitions)", rotations, names, byName)
	}
	if got := len(rt.sinks[0].prog[0]); got > 2 {
		t.Errorf("the sink tracks %d partitions, want at most 2", got)
	}
}
