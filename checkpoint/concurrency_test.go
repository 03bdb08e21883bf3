package checkpoint

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// job is one reference handed from the polling goroutine to a worker, with the
// status the worker must release it with.
type job struct {
	r  AckRef
	st AckStatus
}

// TestConcurrentResolution runs the ack path the way a pipeline does, under
// -race: one polling goroutine issues batches on several partitions and hands
// clones of each batch to many workers, which clone them again (a fan-out) and
// release them, some through AckSets, while the checkpointer goroutine drains
// on Wake. It checks invariant 2's consequence, that nothing is lost or doubled
// without locks: every batch resolves exactly once with the worst status any of
// its references was released with, and each partition's final watermark is
// the end of its longest delivered prefix.
func TestConcurrentResolution(t *testing.T) {
	const (
		workers    = 8
		partitions = 4
		fanout     = 4 // references handed out per batch
	)
	batches := 10000
	if testing.Short() {
		batches = 500
	}
	c := New()
	is := c.NewIssuer()
	rng := rand.New(rand.NewPCG(1, 2))

	// Decide every outcome up front. Partition 0 fails once, late; partition 1
	// rejects once, early; the others deliver everything.
	type want struct {
		st  AckStatus
		sts [fanout]AckStatus
	}
	wants := make([][]want, partitions)
	ends := make([][]Position, partitions)
	for p := range wants {
		wants[p] = make([]want, batches)
		ends[p] = make([]Position, batches)
		for s := range wants[p] {
			w := &wants[p][s]
			if (p == 0 && s == batches-batches/10) || (p == 1 && s == batches/10) {
				w.sts[rng.IntN(fanout)] = Failed + AckStatus(p) // Failed on p0, Rejected on p1
			}
			for _, st := range w.sts {
				w.st = w.st.Merge(st)
			}
			ends[p][s] = Position(7 * (s + 1))
		}
	}

	var workersDone sync.WaitGroup
	chans := make([]chan job, workers)
	for w := range chans {
		chans[w] = make(chan job, 64)
		workersDone.Add(1)
		go func(in <-chan job) {
			defer workersDone.Done()
			var sets [numStatuses]AckSet
			held := 0
			for j := range in {
				// Fan out: the worker's own clone is released Delivered, so the
				// batch's status comes from the handed-out reference alone.
				cl := j.r.Clone()
				cl.Release(Delivered)
				if j.st == Delivered && held < 16 {
					sets[Delivered].Add(&j.r) // a sink buffering a chunk
					held++
					continue
				}
				j.r.Release(j.st)
			}
			sets[Delivered].Ack()
		}(chans[w])
	}

	// The checkpointer goroutine: drain on every wake until every partition is
	// revoked and drained.
	var total DrainStats
	cpDone := make(chan struct{})
	go func() {
		defer close(cpDone)
		for {
			<-c.Wake()
			total.Add(c.Drain())
			done := total.Revoked == partitions
			for p := range Partition(partitions) {
				done = done && c.Drained(p)
			}
			if done {
				return
			}
		}
	}()

	// The polling goroutine (this one): issue round-robin across partitions.
	nodes := make([][]*node, partitions)
	for p := range Partition(partitions) {
		is.Assign(p, 0)
		nodes[p] = make([]*node, batches)
	}
	for s := range batches {
		for p := range partitions {
			r := is.Issue(Partition(p), ends[p][s])
			nodes[p][s] = r.h.n
			refs := [fanout]AckRef{r}
			for i := 1; i < fanout; i++ {
				refs[i] = r.Clone()
			}
			for i, ref := range refs {
				chans[rng.IntN(workers)] <- job{r: ref, st: wants[p][s].sts[i]}
			}
		}
	}
	for p := range Partition(partitions) {
		is.Revoke(p)
	}
	for _, ch := range chans {
		close(ch)
	}
	workersDone.Wait()
	select {
	case <-cpDone:
	case <-time.After(time.Minute):
		t.Fatalf("checkpointer did not see every partition drained: a wake-up or a resolution was lost")
	}

	if total.Messages != partitions*batches || total.Outcome(Duplicate) != 0 ||
		total.Outcome(Impossible) != 0 || total.Outcome(Stale) != 0 || total.Leaked != 0 {
		t.Fatalf("drained %+v, want %d resolutions, each once", total, partitions*batches)
	}
	var wantStatuses [numStatuses]int
	for p := range wants {
		for s, w := range wants[p] {
			wantStatuses[w.st]++
			n := nodes[p][s]
			if got := n.state.Load(); got != stateResolved+uint32(w.st) {
				t.Errorf("batch %v resolved with state %d, want %v", n.id, got, w.st)
			}
		}
	}
	if total.Statuses != wantStatuses {
		t.Errorf("statuses %v, want %v", total.Statuses, wantStatuses)
	}
	for p := range Partition(partitions) {
		wm := Position(0)
		for s, w := range wants[p] {
			if w.st != Delivered {
				break
			}
			wm = ends[p][s]
		}
		st, _ := c.State(p)
		if st.Watermark != wm || !st.Drained {
			t.Errorf("p%d: watermark %d drained %v, want %d true", p, st.Watermark, st.Drained, wm)
		}
	}
}

// TestConcurrentSameBatch hammers one batch from many goroutines: each clones
// and releases many times, one of them with Failed. The batch must resolve once,
// only after every goroutine is done, and as Failed (the worst-of merge is one
// atomic OR ordered before the decrement, so no release's status is lost).
func TestConcurrentSameBatch(t *testing.T) {
	const goroutines, rounds = 8, 2000
	for trial := range 20 {
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		r := is.Issue(0, 1)
		var wg sync.WaitGroup
		failer := trial % goroutines
		for g := range goroutines {
			mine := r.Clone()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range rounds {
					cl := mine.Clone()
					st := Delivered
					if g == failer && i == rounds/2 {
						st = Failed
					}
					cl.Release(st)
				}
				mine.Release(Delivered)
			}()
		}
		r.Release(Delivered)
		wg.Wait()
		st := c.Drain()
		if st.Messages != 1 || st.Statuses[Failed] != 1 || st.Outcome(FailedBatch) != 1 {
			t.Fatalf("trial %d: Drain = %+v, want one failed resolution", trial, st)
		}
	}
}

// TestWakeNeverLost checks the queue's wake-up protocol under -race: a
// consumer that drains on every wake, and only then, sees every push from many
// producers, including pushes that were half done when it looked.
func TestWakeNeverLost(t *testing.T) {
	const producers, per = 6, 3000
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	refs := make([]AckRef, producers*per)
	for i := range refs {
		refs[i] = is.Issue(0, Position(i+1))
	}
	c.Drain()
	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(refs); i += producers {
				refs[i].Release(Delivered)
			}
		}()
	}
	seen := 0
	deadline := time.After(time.Minute)
	for seen < len(refs) {
		select {
		case <-c.Wake():
			seen += c.Drain().Messages
		case <-deadline:
			t.Fatalf("saw %d of %d resolutions: a wake-up was lost", seen, len(refs))
		}
	}
	wg.Wait()
	if got := c.Committable(nil); len(got) != 1 || got[0].Position != Position(len(refs)) {
		t.Fatalf("Committable = %v, want position %d", got, len(refs))
	}
}
