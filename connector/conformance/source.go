package conformance

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// SourceHarness builds instances of the source under test.
type SourceHarness struct {
	// New returns a source reading the same input as every instance before
	// it, resuming from the positions earlier instances committed. The input
	// must hold at least five non-empty batches in one partition.
	New func(t *testing.T) connector.Source
	// Ephemeral is set for a source whose positions do not outlive its
	// process, because its input is replayed by whoever sent it (an HTTP
	// source: a client sends a request again until it is answered 2xx).
	// Such a source must name its partitions anew in every instance, or a
	// sink that stores positions would take the new instance's records for
	// ones it holds. The restart check then asks that the second instance
	// name no partition as the first did and read the failed batches'
	// records again (the harness sends them again), at any offsets.
	Ephemeral bool
	// Runtime drives the source through weir's runtime for the check that
	// its commits never regress across a rewind (pipelinetest.Runtime{}).
	// Required: the suite fails without it rather than skip the check.
	Runtime Runtime
}

// host is a minimal connector.Host driving a Checkpointer directly, as the
// runtime does, and refusing what the runtime refuses. The test goroutine
// polls; a source may call Revoke or Lost from its own goroutine while Poll
// is blocked, hence the lock.
type host struct {
	cp  *checkpoint.Checkpointer
	iss *checkpoint.AckIssuer

	mu     sync.Mutex
	byName map[string]checkpoint.Partition
	names  map[checkpoint.Partition]string
	// starts is where each partition now assigned was assigned (or, after
	// seekTo, sought); a revoked or lost partition has none.
	starts map[checkpoint.Partition]checkpoint.Position
	// next is where each assigned partition's next batch begins.
	next map[checkpoint.Partition]checkpoint.Position
	// firstAssign is the start the first Assign of each name gave.
	firstAssign map[string]checkpoint.Position
}

func newHost() *host {
	cp := checkpoint.New()
	return &host{cp: cp, iss: cp.NewIssuer(), byName: map[string]checkpoint.Partition{},
		names:  map[checkpoint.Partition]string{},
		starts: map[checkpoint.Partition]checkpoint.Position{}, next: map[checkpoint.Partition]checkpoint.Position{},
		firstAssign: map[string]checkpoint.Position{}}
}

func (h *host) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byName[name]
	if !ok {
		p = checkpoint.Partition(len(h.byName))
		h.byName[name] = p
		h.names[p] = name
	}
	if _, ok := h.firstAssign[name]; !ok {
		h.firstAssign[name] = start
	}
	h.starts[p] = start
	h.next[p] = start
	h.iss.Assign(p, start)
	return p
}

func (h *host) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	h.forget(ps)
	return nil
}

func (h *host) Lost(ps ...checkpoint.Partition) { h.forget(ps) }

func (h *host) forget(ps []checkpoint.Partition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		delete(h.starts, p)
		delete(h.next, p)
		h.iss.Revoke(p)
	}
}

func (h *host) Skip(string, int64)   {}
func (h *host) Unread(string, int64) {}
func (h *host) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// seekTo rewinds p to pos as the runtime does: Seek, then a new epoch.
func (h *host) seekTo(t *testing.T, ctx context.Context, s connector.Source, p checkpoint.Partition, pos checkpoint.Position) {
	t.Helper()
	if err := s.Seek(ctx, p, pos); err != nil {
		t.Fatalf("Seek of partition %s to %d: %v", h.name(p), pos, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starts[p] = pos
	h.next[p] = pos
	h.iss.Assign(p, pos)
}

func (h *host) name(p checkpoint.Partition) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[p]
}

// polled is one batch the suite polled: its reference, not yet released,
// and copies of what it needs of the records.
type polled struct {
	ref        checkpoint.AckRef
	part       checkpoint.Partition
	name       string
	start, end checkpoint.Position // where the batch begins (the last one's end) and ends
	vals       [][]byte
	offs       []int64
}

// accept checks b as the runtime checks every batch, issues its reference
// and copies what the suite needs. It stops the test on a batch the runtime
// would refuse.
func (h *host) accept(t *testing.T, b *connector.Batch) polled {
	t.Helper()
	h.mu.Lock()
	start, ok := h.next[b.Partition]
	name := h.names[b.Partition]
	h.mu.Unlock()
	if !ok {
		t.Fatalf("Poll returned a batch of partition %d, which is not assigned (never, or revoked or lost since): call Host.Assign first, and return no batch of a partition after giving it up", b.Partition)
	}
	// A batch's positions go on from where the last one ended; its records
	// carry their own positions, in order, within the batch's
	// (connector.Position). The runtime refuses batches that break either.
	if b.End < start {
		t.Fatalf("a batch of partition %s ends at %d, before where it begins (%d, the last batch's end): positions must not go back", name, b.End, start)
	}
	last := start
	for i := range b.Records {
		off := checkpoint.Position(b.Records[i].Origin.Offset)
		if off < last || off >= b.End {
			t.Fatalf("record %d of a batch of partition %s has offset %d: want offsets in order within [%d, %d), the batch's positions", i, name, off, start, b.End)
		}
		last = off
	}
	h.mu.Lock()
	h.next[b.Partition] = b.End
	h.mu.Unlock()
	pb := polled{ref: h.iss.Issue(b.Partition, b.End), part: b.Partition, name: name, start: start, end: b.End}
	for i := range b.Records {
		v, err := b.Records[i].Value()
		if err != nil {
			t.Fatal(err)
		}
		pb.vals = append(pb.vals, bytes.Clone(v))
		pb.offs = append(pb.offs, b.Records[i].Origin.Offset)
	}
	return pb
}

// pollUntil polls until the partition called name (or, when name is "",
// any partition) has n non-empty batches, and returns them, their references
// unreleased. Other batches are released as delivered.
func pollUntil(t *testing.T, ctx context.Context, s connector.Source, h *host, name string, n int) []polled {
	t.Helper()
	by := map[string][]polled{}
	for range 10000 {
		var b connector.Batch
		if err := s.Poll(ctx, &b); err != nil {
			if errors.Is(err, connector.ErrEndOfInput) {
				t.Fatalf("input ended before a partition had %d non-empty batches", n)
			}
			t.Fatalf("Poll: %v", err)
		}
		pb := h.accept(t, &b)
		if len(pb.vals) == 0 || (name != "" && pb.name != name) {
			pb.ref.Release(checkpoint.Delivered)
			continue
		}
		by[pb.name] = append(by[pb.name], pb)
		if len(by[pb.name]) == n {
			return by[pb.name]
		}
	}
	t.Fatalf("no partition had %d non-empty batches after 10000 polls", n)
	return nil
}

// readN polls partition name until it returned n records and returns their
// values and offsets, releasing every batch as delivered.
func readN(t *testing.T, ctx context.Context, s connector.Source, h *host, name string, n int) ([][]byte, []int64) {
	t.Helper()
	var vals [][]byte
	var offs []int64
	for len(vals) < n {
		b := pollUntil(t, ctx, s, h, name, 1)[0]
		b.ref.Release(checkpoint.Delivered)
		vals = append(vals, b.vals...)
		offs = append(offs, b.offs...)
	}
	return vals[:n], offs[:n]
}

func flatten(bs []polled) ([][]byte, []int64) {
	var vals [][]byte
	var offs []int64
	for _, b := range bs {
		vals = append(vals, b.vals...)
		offs = append(offs, b.offs...)
	}
	return vals, offs
}

func releaseAll(bs []polled) {
	for i := range bs {
		bs[i].ref.Release(checkpoint.Delivered)
	}
}

// sameRecords fails the test unless the records read (got) are those
// expected (want), value and offset alike: a replay must bring each record
// back with the position it had, since the runtime recognises by its offset
// a record a sink already holds.
func sameRecords(t *testing.T, what string, gotVals [][]byte, gotOffs []int64, wantVals [][]byte, wantOffs []int64) {
	t.Helper()
	for i := range wantVals {
		if !bytes.Equal(gotVals[i], wantVals[i]) {
			t.Fatalf("%s, record %d is %s, want %s", what, i, gotVals[i], wantVals[i])
		}
	}
	if !slices.Equal(gotOffs, wantOffs) {
		t.Fatalf("%s, the records carry offsets %v, want %v, the offsets they had the first time", what, gotOffs, wantOffs)
	}
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
		bs := pollUntil(t, ctx, s, hs, "", 5)
		name, p := bs[0].name, bs[0].part
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
		if h.Ephemeral {
			readsAgainAnew(t, ctx, s2, hs, hs2, bs[2:])
			return
		}
		readsAgain(t, ctx, s2, hs2, name, bs[2:], bs[1].end, "after restart (C, D and E again, nothing committed past C)",
			"the position it committed: Assign each partition at its committed position")
	})
	t.Run("SeekReadsExactlyFromThePosition", func(t *testing.T) {
		ctx := context.Background()
		s := h.New(t)
		hs := newHost()
		if err := s.Open(ctx, hs); err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		bs := pollUntil(t, ctx, s, hs, "", 3)
		releaseAll(bs)
		name, p := bs[0].name, bs[0].part
		// To the end of the first batch: the second and third again.
		hs.seekTo(t, ctx, s, p, bs[0].end)
		wantVals, wantOffs := flatten(bs[1:])
		gotVals, gotOffs := readN(t, ctx, s, hs, name, len(wantVals))
		sameRecords(t, "after Seek to the end of the first batch", gotVals, gotOffs, wantVals, wantOffs)
		// To where the first batch began: all three.
		hs.seekTo(t, ctx, s, p, bs[0].start)
		wantVals, wantOffs = flatten(bs)
		gotVals, gotOffs = readN(t, ctx, s, hs, name, len(wantVals))
		sameRecords(t, "after Seek back to where the first batch began", gotVals, gotOffs, wantVals, wantOffs)
	})
	t.Run("CancelledPollLosesNothing", func(t *testing.T) { testCancelledPoll(t, h) })
	t.Run("DetachedSourceResumesAtItsCommit", func(t *testing.T) { testDetach(t, h) })
}

// testDetach checks a connector.Detacher: after Detach and Reattach with a
// new Host (a reload handing the source on), the source assigns its
// partition at the position committed last and reads everything after it
// again, also what it had read past it.
func testDetach(t *testing.T, h SourceHarness) {
	ctx := context.Background()
	s := h.New(t)
	d, ok := s.(connector.Detacher)
	if !ok {
		t.Skip("the source cannot be handed on (connector.Detacher)")
	}
	hs := newHost()
	if err := s.Open(ctx, hs); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	bs := pollUntil(t, ctx, s, hs, "", 5)
	name, p := bs[0].name, bs[0].part
	// A and B delivered and committed; C to E read and not committed.
	bs[0].ref.Release(checkpoint.Delivered)
	bs[1].ref.Release(checkpoint.Delivered)
	hs.cp.Drain()
	var cs []checkpoint.Commit
	for _, c := range hs.cp.Committable(nil) {
		if c.Partition == p {
			cs = append(cs, c)
		}
	}
	if len(cs) != 1 || cs[0].Position != bs[1].end {
		t.Fatalf("committable %v, want partition %d at the end of B, %d", cs, p, bs[1].end)
	}
	if err := s.Commit(ctx, cs); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := d.Detach(ctx); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	hs2 := newHost()
	if err := d.Reattach(ctx, hs2); err != nil {
		t.Fatalf("Reattach: %v", err)
	}
	readsAgain(t, ctx, s, hs2, name, bs[2:], bs[1].end, "after Detach and Reattach (C, D and E again, nothing committed past B)",
		"the position committed last")
}

// readsAgainAnew checks an ephemeral source's second instance s, polled
// through hs: none of its partitions is named as one of the first
// instance's (known to first), and the records of bs come again, in order,
// among what it reads (a client may send more again than failed).
func readsAgainAnew(t *testing.T, ctx context.Context, s connector.Source, first, hs *host, bs []polled) {
	t.Helper()
	want, _ := flatten(bs)
	got := 0
	for polls := 0; got < len(want); polls++ {
		if polls == 10000 {
			t.Fatalf("after restart, %d of the %d records of the failed batches came again after 10000 polls", got, len(want))
		}
		b := pollUntil(t, ctx, s, hs, "", 1)[0]
		b.ref.Release(checkpoint.Delivered)
		first.mu.Lock()
		_, reused := first.byName[b.name]
		first.mu.Unlock()
		if reused {
			t.Fatalf("after restart the source names a partition %s, as the instance before it did: an ephemeral source's positions start again, so a sink that stores positions would skip its records as held; name partitions anew in every instance", b.name)
		}
		for _, v := range b.vals {
			if got < len(want) && bytes.Equal(v, want[got]) {
				got++
			}
		}
	}
}

// readsAgain checks that s, polled through hs, gives the records of bs
// again with their offsets, and that it assigned partition name first at
// from. after says when, and why says what from is.
func readsAgain(t *testing.T, ctx context.Context, s connector.Source, hs *host, name string, bs []polled, from checkpoint.Position, after, why string) {
	t.Helper()
	wantVals, wantOffs := flatten(bs)
	gotVals, gotOffs := readN(t, ctx, s, hs, name, len(wantVals))
	sameRecords(t, after, gotVals, gotOffs, wantVals, wantOffs)
	hs.mu.Lock()
	start := hs.firstAssign[name]
	hs.mu.Unlock()
	if start != from {
		t.Fatalf("%s the source assigned partition %s at %d, want %d, %s", after, name, start, from, why)
	}
}

// testCancelledPoll checks that a Poll whose context is cancelled keeps what
// the source has buffered: the runtime cancels the Poll in progress to apply
// a rewind of one partition, and every other partition's data must still
// come, in order. It polls with a live context and a cancelled one in turn,
// then seeks back and checks that the partition read the same records.
func testCancelledPoll(t *testing.T, h SourceHarness) {
	ctx := context.Background()
	s := h.New(t)
	hs := newHost()
	if err := s.Open(ctx, hs); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var bs []polled // the non-empty batches of the first partition with records
	take := func(pb polled) {
		if len(pb.vals) > 0 && (len(bs) == 0 || pb.name == bs[0].name) {
			bs = append(bs, pb)
			return
		}
		pb.ref.Release(checkpoint.Delivered)
	}
	for polls := 0; len(bs) < 4; polls++ {
		if polls == 10000 {
			t.Fatal("no partition had 4 non-empty batches after 10000 polls")
		}
		var b connector.Batch
		if err := s.Poll(ctx, &b); err != nil {
			if errors.Is(err, connector.ErrEndOfInput) {
				t.Fatal("input ended before a partition had 4 non-empty batches")
			}
			t.Fatalf("Poll: %v", err)
		}
		take(hs.accept(t, &b))
		for range 2 {
			// Either an error or a batch: a Poll that had a batch at hand may
			// return it, as long as nothing is lost.
			var b connector.Batch
			if err := pollWithin(cancelled, s, &b, cancelledPollDeadline); err == nil {
				take(hs.accept(t, &b))
			} else if errors.Is(err, errPollHung) {
				t.Fatal(err)
			}
		}
	}
	releaseAll(bs)
	// The same records again, with no cancellation in between, are what
	// the first reading should have returned.
	firstVals, firstOffs := flatten(bs)
	hs.seekTo(t, ctx, s, bs[0].part, bs[0].start)
	wantVals, wantOffs := readN(t, ctx, s, hs, bs[0].name, len(firstVals))
	sameRecords(t, "read with cancelled Polls in between (compared with a reading without, after Seek)", firstVals, firstOffs, wantVals, wantOffs)
}

// cancelledPollDeadline is how long a Poll with a cancelled context may
// take; far more than any source needs, so that a slow machine never fails.
var cancelledPollDeadline = 10 * time.Second

var errPollHung = errors.New("conformance: a Poll did not return in time although its context was cancelled: Poll must return when ctx is done, keeping what it has buffered (the runtime cancels it to apply a rewind)")

// pollWithin calls Poll and waits at most d for it to return.
func pollWithin(ctx context.Context, s connector.Source, b *connector.Batch, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- s.Poll(ctx, b) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return errPollHung
	}
}
