package checkpoint

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// The ack path must cost a few percent of a pipeline at most (Vector lost 3-4x
// throughput to its acknowledgements). Targets: Clone+Release 0 allocs and at
// most 15 ns; Issue at most 1 allocation per batch; resolutions at 20M/s in
// order and 10M/s reordered within a window of 1024, with 0 allocations
// amortized; an AckSet of 10k references of one batch in constant memory.

// BenchmarkAckRefCloneRelease is what every record costs: one Clone when it
// is created from its batch, one Release when it is written or dropped.
func BenchmarkAckRefCloneRelease(b *testing.B) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	r := is.Issue(0, 1)
	b.ReportAllocs()
	for b.Loop() {
		cl := r.Clone()
		cl.Release(Delivered)
	}
	r.Release(Delivered)
}

// BenchmarkAckRefCloneReleaseParallel has every goroutine clone and release
// references of one shared batch: the worst case, where all cores contend for
// the batch's cache line (a fan-out of one large poll batch).
func BenchmarkAckRefCloneReleaseParallel(b *testing.B) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	r := is.Issue(0, 1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		mine := r.Clone()
		for pb.Next() {
			cl := mine.Clone()
			cl.Release(Delivered)
		}
		mine.Release(Delivered)
	})
	r.Release(Delivered)
}

// BenchmarkAckRefCloneReleaseParallelBatches has each goroutine work on its
// own batch, as pipeline workers usually do: handles are padded to a cache line
// so neighbouring batches do not contend.
func BenchmarkAckRefCloneReleaseParallelBatches(b *testing.B) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	refs := make(chan AckRef, runtime.GOMAXPROCS(0)*4)
	for range cap(refs) {
		refs <- is.Issue(0, 1)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		mine := <-refs
		for pb.Next() {
			cl := mine.Clone()
			cl.Release(Delivered)
		}
		mine.Release(Delivered)
	})
}

// BenchmarkIssue measures issuing a batch and resolving it with its one
// reference; the Checkpointer drains outside the timer. allocs/batch is exact
// (allocs/op rounds down): slabs amortise to 4/64 allocations per batch (the
// slab pair and the two that runtime.AddCleanup makes), 0.0625.
func BenchmarkIssue(b *testing.B) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		r := is.Issue(0, Position(n))
		r.Release(Delivered)
		if n++; n%(1<<14) == 0 {
			b.StopTimer()
			c.Drain()
			b.StartTimer()
		}
	}
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/batch")
	c.Drain()
}

// reorderedSeqs returns n sequence numbers in which every window of 1024 is a
// random permutation of itself: resolutions arrive out of order, but never
// further apart than a window (the in-flight limit).
func reorderedSeqs(n int) []uint64 {
	const window = 1024
	rng := rand.New(rand.NewPCG(7, 7))
	seqs := make([]uint64, n)
	for i := range seqs {
		seqs[i] = uint64(i)
	}
	for base := 0; base < n; base += window {
		w := seqs[base:min(base+window, n)]
		rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	}
	return seqs
}

func reportResolutions(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "resolutions/s")
}

// BenchmarkTrackerResolve measures PartitionTracker.Resolve alone.
func BenchmarkTrackerResolve(b *testing.B) {
	b.Run("inorder", func(b *testing.B) {
		t := NewPartitionTracker(1, 0)
		b.ReportAllocs()
		var seq uint64
		for b.Loop() {
			t.Resolve(seq, Position(seq+1), Delivered)
			seq++
		}
		if t.Watermark() != Position(seq) {
			b.Fatalf("watermark %d after %d in-order resolutions", t.Watermark(), seq)
		}
		reportResolutions(b, int(seq))
	})
	b.Run("reordered1024", func(b *testing.B) {
		const period = 1 << 16
		seqs := reorderedSeqs(period)
		t := NewPartitionTracker(1, 0)
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			seq := uint64(n&^(period-1)) + seqs[n&(period-1)]
			t.Resolve(seq, Position(seq+1), Delivered)
			n++
		}
		if t.Next()+uint64(t.Buffered()) != uint64(n) || t.Next()+1024 < uint64(n) {
			b.Fatalf("next %d buffered %d after %d resolutions", t.Next(), t.Buffered(), n)
		}
		reportResolutions(b, n)
	})
}

// BenchmarkDrain measures the Checkpointer's side of a resolution: popping it
// off the queue, the epoch check, and the tracker. Batches are issued and
// released in chunks outside the timer, in order or shuffled within windows of
// 1024, and Drain is timed alone.
func BenchmarkDrain(b *testing.B) {
	const chunk = 1 << 14
	for _, tc := range []struct {
		name string
		seqs []uint64
	}{
		{"inorder", nil},
		{"reordered1024", reorderedSeqs(chunk)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := New()
			is := c.NewIssuer()
			is.Assign(0, 0)
			c.Drain()
			refs := make([]AckRef, chunk)
			var pos Position
			issueChunk := func() {
				for i := range refs {
					pos++
					refs[i] = is.Issue(0, pos)
				}
				for i := range refs {
					j := i
					if tc.seqs != nil {
						j = int(tc.seqs[i])
					}
					refs[j].Release(Delivered)
				}
			}
			// Warm up: grow the tracker's ring and the runtime's heap.
			issueChunk()
			c.Drain()
			b.ReportAllocs()
			b.ResetTimer()
			total := 0
			for total < b.N {
				b.StopTimer()
				issueChunk()
				b.StartTimer()
				st := c.Drain()
				total += st.Messages
			}
			b.StopTimer()
			if s, _ := c.State(0); s.Watermark != pos {
				b.Fatalf("watermark %d, want %d", s.Watermark, pos)
			}
			// b.N counts resolutions; the timer ran only around Drain.
			reportResolutions(b, total)
		})
	}
}

// BenchmarkAckSetAdd10k moves 10,000 references of one batch into an AckSet
// and acknowledges them: a sink's chunk of one poll batch. The set takes one
// entry whatever the count, so memory is constant: with a recycled set, zero
// bytes per chunk.
func BenchmarkAckSetAdd10k(b *testing.B) {
	const refs = 10000
	for _, reuse := range []bool{false, true} {
		name := "fresh"
		if reuse {
			name = "reused"
		}
		b.Run(name, func(b *testing.B) {
			c := New()
			is := c.NewIssuer()
			is.Assign(0, 0)
			var set AckSet
			b.ReportAllocs()
			n, entries := 0, 0
			for b.Loop() {
				if !reuse {
					set = AckSet{}
				}
				r := is.Issue(0, Position(n))
				for range refs {
					cl := r.Clone()
					set.Add(&cl)
				}
				if entries = set.Len(); entries != 1 || set.Refs() != refs {
					b.Fatalf("Len %d Refs %d, want 1 %d", set.Len(), set.Refs(), refs)
				}
				r.Release(Delivered)
				set.Ack()
				if n++; n%1024 == 0 {
					c.Drain()
				}
			}
			b.ReportMetric(float64(entries), "entries")
		})
	}
}
