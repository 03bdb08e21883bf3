package conformance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// SourceHarness builds instances of the source under test.
type SourceHarness struct {
	// New returns a source reading the same input as every instance before
	// it, resuming from the positions earlier instances committed. The input
	// must hold at least five non-empty batches in one partition.
	New func(t *testing.T) connector.Source
}

// host is a minimal connector.Host driving a Checkpointer directly.
type host struct {
	cp     *checkpoint.Checkpointer
	iss    *checkpoint.AckIssuer
	byName map[string]checkpoint.Partition
	starts map[checkpoint.Partition]checkpoint.Position
	next   map[checkpoint.Partition]checkpoint.Position // where the next batch begins
}

func newHost() *host {
	cp := checkpoint.New()
	return &host{cp: cp, iss: cp.NewIssuer(), byName: map[string]checkpoint.Partition{},
		starts: map[checkpoint.Partition]checkpoint.Position{}, next: map[checkpoint.Partition]checkpoint.Position{}}
}

func (h *host) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	p, ok := h.byName[name]
	if !ok {
		p = checkpoint.Partition(len(h.byName))
		h.byName[name] = p
	}
	h.starts[p] = start
	delete(h.next, p)
	h.iss.Assign(p, start)
	return p
}
func (h *host) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	for _, p := range ps {
		h.iss.Revoke(p)
	}
	return nil
}
func (h *host) Skip(string, int64)   {}
func (h *host) Unread(string, int64) {}
func (h *host) Lost(ps ...checkpoint.Partition) {
	for _, p := range ps {
		h.iss.Revoke(p)
	}
}
func (h *host) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

type polled struct {
	ref  checkpoint.AckRef
	end  checkpoint.Position
	vals [][]byte
}

// pollUntil polls until partition p (or, when p < 0, any partition) has n
// non-empty batches, and returns them and the partition.
func pollUntil(t *testing.T, ctx context.Context, s connector.Source, h *host, p int, n int) ([]polled, checkpoint.Partition) {
	t.Helper()
	by := map[checkpoint.Partition][]polled{}
	for range 10000 {
		var b connector.Batch
		if err := s.Poll(ctx, &b); err != nil {
			if errors.Is(err, connector.ErrEndOfInput) {
				t.Fatalf("input ended before a partition had %d non-empty batches", n)
			}
			t.Fatalf("Poll: %v", err)
		}
		// Every record carries its own position: offsets from where the
		// batch begins, in order, below its end (connector.Position). The
		// runtime refuses batches that break it.
		start, ok := h.next[b.Partition]
		if !ok {
			start = h.starts[b.Partition]
		}
		last := start
		for i := range b.Records {
			off := checkpoint.Position(b.Records[i].Origin.Offset)
			if off < last || off >= b.End {
				t.Fatalf("record %d of a batch of partition %d has offset %d: want offsets in order within [%d, %d), the batch's positions", i, b.Partition, off, start, b.End)
			}
			last = off
		}
		h.next[b.Partition] = b.End
		ref := h.iss.Issue(b.Partition, b.End)
		if len(b.Records) == 0 || (p >= 0 && int(b.Partition) != p) {
			ref.Release(checkpoint.Delivered)
			continue
		}
		pb := polled{ref: ref, end: b.End}
		for i := range b.Records {
			v, err := b.Records[i].Value()
			if err != nil {
				t.Fatal(err)
			}
			pb.vals = append(pb.vals, bytes.Clone(v))
		}
		by[b.Partition] = append(by[b.Partition], pb)
		if len(by[b.Partition]) == n {
			return by[b.Partition], b.Partition
		}
	}
	t.Fatalf("no partition had %d non-empty batches after 10000 polls", n)
	return nil, 0
}

func flatten(bs []polled) [][]byte {
	var out [][]byte
	for _, b := range bs {
		out = append(out, b.vals...)
	}
	return out
}

// TestSource runs the source suite.
func TestSource(t *testing.T, h SourceHarness) {
	t.Run("CommitsNeverRegress", func(t *testing.T) { testCommitsNeverRegress(t, h) })
	t.Run("FailedBatchesAreReplayedAfterRestart", func(t *testing.T) {
		ctx := context.Background()
		s := h.New(t)
		hs := newHost()
		if err := s.Open(ctx, hs); err != nil {
			t.Fatal(err)
		}
		bs, p := pollUntil(t, ctx, s, hs, -1, 5)
		// Deliver A, B and D; fail C and E.
		for i, st := range []checkpoint.AckStatus{checkpoint.Delivered, checkpoint.Delivered, checkpoint.Failed, checkpoint.Delivered, checkpoint.Failed} {
			bs[i].ref.Release(st)
		}
		hs.cp.Drain()
		cs := hs.cp.Committable(nil)
		for _, c := range cs {
			if c.Partition == p && c.Position != bs[1].end {
				t.Fatalf("committable %d, want the end of B, %d", c.Position, bs[1].end)
			}
		}
		if err := s.Commit(ctx, cs); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}

		s2 := h.New(t)
		hs2 := newHost()
		if err := s2.Open(ctx, hs2); err != nil {
			t.Fatal(err)
		}
		defer s2.Close(ctx)
		want := flatten(bs[2:])
		var got [][]byte
		for len(got) < len(want) {
			again, _ := pollUntil(t, ctx, s2, hs2, int(p), 1)
			again[0].ref.Release(checkpoint.Delivered)
			got = append(got, again[0].vals...)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("after restart, record %d is %s, want %s (C, D and E again, nothing committed past C)", i, got[i], want[i])
			}
		}
	})
	t.Run("SeekReplays", func(t *testing.T) {
		ctx := context.Background()
		s := h.New(t)
		hs := newHost()
		if err := s.Open(ctx, hs); err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		bs, p := pollUntil(t, ctx, s, hs, -1, 2)
		for i := range bs {
			bs[i].ref.Release(checkpoint.Delivered)
		}
		if err := s.Seek(ctx, p, bs[0].end); err != nil {
			t.Fatalf("Seek: %v", err)
		}
		hs.iss.Assign(p, bs[0].end)
		hs.next[p] = bs[0].end
		again, _ := pollUntil(t, ctx, s, hs, int(p), 1)
		again[0].ref.Release(checkpoint.Delivered)
		if !bytes.Equal(again[0].vals[0], bs[1].vals[0]) {
			t.Fatalf("after Seek to the end of the first batch, read %s, want %s", again[0].vals[0], bs[1].vals[0])
		}
	})
}
