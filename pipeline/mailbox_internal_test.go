package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

// Guarantee: the held lists a sink goroutine writes can be read from another
// goroutine at any time without a lock (run with -race): a reader sees only
// batches noted for the group it loaded, in the order noted, never an
// element being written.
func TestHeldListsReadWhileWritten(t *testing.T) {
	var h heldLists
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var dst []checkpoint.BatchID
		for {
			select {
			case <-done:
				return
			default:
			}
			dst = h.batches(dst[:0])
			// Each group (a partition here) once, its batches in the order
			// noted from the first: a sealed group may be read beside the
			// current one, never twice and never torn.
			seen := map[checkpoint.Partition]bool{}
			for i, id := range dst {
				starts := i == 0 || id.Partition != dst[i-1].Partition
				if starts && (seen[id.Partition] || id.Seq != 0) || !starts && id.Seq != dst[i-1].Seq+1 {
					t.Errorf("read %v: a group listed twice or not in the order noted", dst)
					return
				}
				seen[id.Partition] = true
			}
		}
	})
	for g := range 200 {
		for i := range 1 + g%40 {
			h.note(checkpoint.BatchID{Partition: checkpoint.Partition(g), Epoch: 1, Seq: uint64(i)})
		}
		if g%3 == 0 {
			b := h.drop()
			h.sealedGroup(b)
			h.returned(b)
		} else {
			h.drop()
		}
	}
	close(done)
	wg.Wait()
	if got := h.batches(nil); len(got) != 0 {
		t.Fatalf("after the last drop: %v held", got)
	}
}

// Guarantee: every rewind request reaches the poller exactly once and in
// the order made, whatever the interleaving of requests and takes; a request
// made after the poller stored a fresh context cancels that context.
func TestRewindBoxDeliversEachRequestOnce(t *testing.T) {
	b := rewindBox{sig: make(chan struct{}, 1)}
	ctx := b.newContext(context.Background())
	const n = 2000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			b.request([]policy.Rewind{{Partition: 0, Epoch: checkpoint.Epoch(i + 1)}})
		}
	})
	var got []policy.Rewind
	for len(got) < n {
		<-b.sig
		got = append(got, b.take()...)
	}
	wg.Wait()
	got = append(got, b.take()...)
	if len(got) != n {
		t.Fatalf("took %d requests, want %d", len(got), n)
	}
	for i, r := range got {
		if r.Epoch != checkpoint.Epoch(i+1) {
			t.Fatalf("request %d is epoch %d: out of order or repeated", i, r.Epoch)
		}
	}
	if !errors.Is(context.Cause(ctx), errRewind) {
		t.Fatalf("the context of the Polls: cause %v, want the rewind's", context.Cause(ctx))
	}
	fresh := b.newContext(context.Background())
	b.request([]policy.Rewind{{Partition: 1, Epoch: 1}})
	if fresh.Err() == nil {
		t.Fatal("a request after the fresh context did not cancel it")
	}
}
