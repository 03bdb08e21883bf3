package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// SinkHarness builds instances of the sink under test and reads back what
// they made durable.
type SinkHarness struct {
	New func(t *testing.T) connector.Sink
	// Count returns how many records s made durable.
	Count func(t *testing.T, s connector.Sink) int
	// Written returns the values s made durable, as the destination shows
	// them. Nil for a sink that keeps nothing (blackhole).
	Written func(t *testing.T, s connector.Sink) [][]byte
	// WritesThrough is set for a sink whose Write already reaches the
	// destination and cannot be taken back (Kafka without transactions):
	// records of an aborted group, or of a group not yet flushed, may be
	// durable too. The suite then checks that flushed groups are durable and
	// in order, and ignores the aborted records in what was written.
	WritesThrough bool
	// Reopen returns a new instance of the sink, unopened, over the
	// destination s writes to, as a restarted process would build it after
	// a crash: s is abandoned as it is, neither flushed, aborted nor closed.
	// Nil skips the crash check (for a sink that keeps nothing).
	Reopen func(t *testing.T, s connector.Sink) connector.Sink
	// Unwritable returns a record the sink can never write as it is (a
	// value its format cannot hold), which Write must reject with a
	// *connector.RejectError. Nil skips the check, for a sink that writes
	// any record.
	Unwritable func() record.Record
	// Runtime drives the sink through weir's runtime for the checks of its
	// retries (pipelinetest.Runtime{}). Required: the suite fails without
	// it rather than skip them.
	Runtime Runtime
}

// durableOK reports whether got durable records satisfy want: exactly,
// or at least for a sink that writes through.
func (h SinkHarness) durableOK(got, want int) bool {
	if h.WritesThrough {
		return got >= want
	}
	return got == want
}

// without returns vals without the aborted ones, for a sink that writes
// through; vals itself otherwise.
func (h SinkHarness) without(vals [][]byte, aborted ...string) [][]byte {
	if !h.WritesThrough {
		return vals
	}
	var out [][]byte
	for _, v := range vals {
		keep := true
		for _, a := range aborted {
			if bytes.Equal(bytes.TrimSpace(v), []byte(a)) {
				keep = false
			}
		}
		if keep {
			out = append(out, v)
		}
	}
	return out
}

// wantWritten fails the test unless s shows exactly want, in order, once the
// aborted values are set aside for a sink that writes through. It checks
// nothing for a sink that keeps nothing (Written is nil).
func (h SinkHarness) wantWritten(t *testing.T, s connector.Sink, aborted []string, want ...string) {
	t.Helper()
	if h.Written == nil {
		return
	}
	got := h.without(h.Written(t, s), aborted...)
	if len(got) != len(want) {
		t.Fatalf("written %q, want %q", got, want)
	}
	for i := range want {
		if !bytes.Equal(bytes.TrimSpace(got[i]), []byte(want[i])) {
			t.Fatalf("written %q, want %q", got, want)
		}
	}
}

// write writes records with the values vals, failing the test on an error.
func write(t *testing.T, ctx context.Context, s connector.Sink, vals ...string) {
	t.Helper()
	if err := s.Write(ctx, recs(vals...)); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// wantWrittenAnyOrder is wantWritten for values written by different
// instances of the sink (before and after a crash): the destination need
// not order them by instance (file names of two runs, say), so only which
// values, and how many times each, are compared.
func (h SinkHarness) wantWrittenAnyOrder(t *testing.T, s connector.Sink, aborted []string, want ...string) {
	t.Helper()
	if h.Written == nil {
		return
	}
	var got []string
	for _, v := range h.without(h.Written(t, s), aborted...) {
		got = append(got, string(bytes.TrimSpace(v)))
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("written %q, want %q in any order", got, want)
	}
}

func recs(vals ...string) []record.Record {
	out := make([]record.Record, len(vals))
	for i, v := range vals {
		out[i] = record.New([]byte(v))
	}
	return out
}

// TestSink runs the sink suite.
func TestSink(t *testing.T, h SinkHarness) {
	t.Run("FlushedIsDurableAbortedIsNot", func(t *testing.T) {
		ctx := context.Background()
		s := h.New(t)
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		step := func(vals []string, flush bool) {
			if err := s.Write(ctx, recs(vals...)); err != nil {
				t.Fatalf("Write: %v", err)
			}
			var err error
			if flush {
				err = s.Flush(ctx)
			} else {
				err = s.Abort(ctx)
			}
			if err != nil {
				t.Fatalf("Flush/Abort: %v", err)
			}
		}
		step([]string{`{"n":1}`, `{"n":2}`}, true)
		step([]string{`{"n":3}`}, false)
		step([]string{`{"n":4}`}, true)
		if got := h.Count(t, s); !h.durableOK(got, 3) {
			t.Fatalf("durable records: %d, want 3 (two flushed groups, the aborted one never)", got)
		}
		h.wantWritten(t, s, []string{`{"n":3}`}, `{"n":1}`, `{"n":2}`, `{"n":4}`)
	})
	t.Run("CloseFlushesNothing", func(t *testing.T) {
		ctx := context.Background()
		s := h.New(t)
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		write(t, ctx, s, `{"n":1}`, `{"n":2}`)
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		write(t, ctx, s, `{"n":3}`)
		// The runtime flushes before Close when it wants the group kept; a
		// group still open at Close is one it gave up on (a shutdown deadline).
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got := h.Count(t, s); !h.durableOK(got, 2) {
			t.Fatalf("durable records after Close: %d, want 2 (the flushed group; Close flushes nothing)", got)
		}
		h.wantWritten(t, s, []string{`{"n":3}`}, `{"n":1}`, `{"n":2}`)
	})
	t.Run("CrashBetweenWriteAndFlush", func(t *testing.T) {
		if h.Reopen == nil {
			t.Skip("the harness has no Reopen")
		}
		ctx := context.Background()
		s := h.New(t)
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		write(t, ctx, s, `{"n":1}`, `{"n":2}`)
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		// More than a write buffer holds, so that a sink writing the group
		// where readers look would have some of it there.
		pad := `{"pad":"` + strings.Repeat("x", 4000) + `"}`
		unflushed := []string{`{"n":3}`, pad}
		write(t, ctx, s, `{"n":3}`)
		for range 256 {
			write(t, ctx, s, pad)
		}
		if sl, ok := s.(connector.Sealer); ok {
			// A sealed group is no more durable than a written one until its
			// Persist returned.
			if _, err := sl.Seal(ctx); err != nil {
				t.Fatalf("Seal: %v", err)
			}
			write(t, ctx, s, `{"n":4}`)
			unflushed = append(unflushed, `{"n":4}`)
		}
		// The crash: s is left as it is. What a new instance finds is what
		// Flush made durable, and nothing else.
		s2 := h.Reopen(t, s)
		if err := s2.Open(ctx); err != nil {
			t.Fatalf("Open after the crash: %v", err)
		}
		defer s2.Close(ctx)
		if got := h.Count(t, s2); !h.durableOK(got, 2) {
			t.Fatalf("durable records after a crash: %d, want 2: the flushed group must survive (Flush returns only once it is durable, not in the process's memory) and the unflushed one must not show", got)
		}
		h.wantWrittenAnyOrder(t, s2, unflushed, `{"n":1}`, `{"n":2}`)
		write(t, ctx, s2, `{"n":5}`)
		if err := s2.Flush(ctx); err != nil {
			t.Fatalf("Flush after the crash: %v", err)
		}
		if got := h.Count(t, s2); !h.durableOK(got, 3) {
			t.Fatalf("durable records after a crash and a new flush: %d, want 3", got)
		}
		h.wantWrittenAnyOrder(t, s2, unflushed, `{"n":1}`, `{"n":2}`, `{"n":5}`)
	})
	t.Run("RejectedRecordIsLeftOut", func(t *testing.T) {
		if h.Unwritable == nil {
			t.Skip("the harness has no Unwritable record")
		}
		ctx := context.Background()
		s := h.New(t)
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		rs := []record.Record{record.New([]byte(`{"n":1}`)), h.Unwritable(), record.New([]byte(`{"n":3}`))}
		err := s.Write(ctx, rs)
		var rej *connector.RejectError
		if !errors.As(err, &rej) || rej.Index != 1 {
			t.Fatalf("Write of [ok, unwritable, ok] returned %v, want a *connector.RejectError with Index 1", err)
		}
		// As the runtime does: the records before the rejected one were
		// accepted, those after it were not and come in the next Write.
		write(t, ctx, s, `{"n":3}`)
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if got := h.Count(t, s); !h.durableOK(got, 2) {
			t.Fatalf("durable records: %d, want 2 (the records around the rejected one, each once)", got)
		}
		h.wantWritten(t, s, nil, `{"n":1}`, `{"n":3}`)
	})
	t.Run("PositionsAreStoredWithTheirGroup", func(t *testing.T) { testPositionKeeper(t, h) })
	t.Run("RuntimeRewindsFailedWrites", func(t *testing.T) {
		s := h.New(t)
		var mu sync.Mutex
		failed := 0
		fs := &FaultSink{Sink: s, OnWrite: func(rs []record.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for i := range rs {
				if rs[i].Origin.Offset == 120 && failed < 2 {
					failed++
					return errors.New("injected failure")
				}
			}
			return nil
		}}
		runAndCheck(t, h, s, fs, 2)
	})
	t.Run("SealedGroupsPersistInOrder", func(t *testing.T) {
		ctx := context.Background()
		s := h.New(t)
		sl, ok := s.(connector.Sealer)
		if !ok {
			t.Skip("the sink does not seal groups (connector.Sealer)")
		}
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		write := func(vals ...string) {
			t.Helper()
			if err := s.Write(ctx, recs(vals...)); err != nil {
				t.Fatalf("Write: %v", err)
			}
		}
		seal := func() connector.SealedGroup {
			t.Helper()
			g, err := sl.Seal(ctx)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			return g
		}
		durable := func(want int, when string) {
			t.Helper()
			if got := h.Count(t, s); !h.durableOK(got, want) {
				t.Fatalf("%s: %d records durable, want %d", when, got, want)
			}
		}
		write(`{"n":1}`, `{"n":2}`)
		g1 := seal()
		write(`{"n":3}`) // the next group, while the first waits
		g2 := seal()
		write(`{"n":4}`)
		if err := g1.Persist(ctx); err != nil {
			t.Fatalf("first Persist: %v", err)
		}
		durable(2, "after the first Persist")
		if err := g2.Persist(ctx); err != nil {
			t.Fatalf("second Persist: %v", err)
		}
		durable(3, "after the second Persist")
		if err := s.Abort(ctx); err != nil { // the group of n=4
			t.Fatalf("Abort: %v", err)
		}
		write(`{"n":5}`)
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		durable(4, "after Abort and Flush")
		h.wantWritten(t, s, []string{`{"n":4}`}, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":5}`)
	})
	t.Run("RuntimeRetriesFailedPersists", func(t *testing.T) {
		s := h.New(t)
		sl, ok := s.(connector.Sealer)
		if !ok {
			t.Skip("the sink does not seal groups (connector.Sealer)")
		}
		fs := NewFaultSealer(sl)
		var mu sync.Mutex
		calls := 0
		fs.OnPersist = func() error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 2 || calls == 3 {
				return errors.New("injected persist failure")
			}
			return nil
		}
		runAndCheck(t, h, s, fs, 3)
		if _, _, discards, _ := fs.SealCounts(); discards < 1 {
			t.Fatalf("no group was discarded: the injected failures never reached a Persist")
		}
	})
}

// runAndCheck runs 200 generated records in one partition through the
// runtime into w, which wraps s and injects failures, with maxAttempts
// attempts per group; then it checks that everything was committed and that
// every record is durable in s.
func runAndCheck(t *testing.T, h SinkHarness, s, w connector.Sink, maxAttempts int) {
	t.Helper()
	rt := needRuntime(t, h.Runtime, "SinkHarness")
	committed, err := rt.RunGenerated(context.Background(), w, 200, maxAttempts)
	if err != nil {
		t.Fatal(err)
	}
	if committed != 200 {
		t.Fatalf("committed %d, want 200", committed)
	}
	if got := h.Count(t, s); got < 200 {
		t.Fatalf("durable records: %d, want at least 200", got)
	}
	if h.Written != nil {
		have := map[string]bool{}
		for _, v := range h.Written(t, s) {
			have[string(bytes.TrimSpace(v))] = true
		}
		for i := range 200 {
			if v := fmt.Sprintf(`{"id":%d,"seq":%d}`, i, i); !have[v] {
				t.Fatalf("record %s never became durable", v)
			}
		}
	}
}

// commitRecorder wraps a source and fails the test when a partition's commit
// goes backwards.
type commitRecorder struct {
	connector.Source
	t    *testing.T
	mu   sync.Mutex
	last map[checkpoint.Partition]checkpoint.Position
	n    int
	// committed is called after every commit, outside the lock.
	committed func()
}

func (c *commitRecorder) Commit(ctx context.Context, cs []connector.Commit) error {
	c.mu.Lock()
	for _, m := range cs {
		if prev, ok := c.last[m.Partition]; ok && m.Position < prev {
			c.t.Errorf("commit of partition %d regressed from %d to %d", m.Partition, prev, m.Position)
		}
		c.last[m.Partition] = m.Position
		c.n++
	}
	c.mu.Unlock()
	err := c.Source.Commit(ctx, cs)
	if c.committed != nil {
		c.committed()
	}
	return err
}

// testCommitsNeverRegress runs the source through the runtime, with a
// failed write that forces a rewind, and checks every commit is monotonic.
func testCommitsNeverRegress(t *testing.T, h SourceHarness) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	writes, after := 0, 0 // writes so far; commits since the failures were over
	// Stop on the first commit after the failed writes and the rewind they
	// cause, not after a number of writes (they can all come before the first
	// commit tick) nor after a number of commits (a finite input in tail mode
	// may be committed to its end in fewer).
	rec := &commitRecorder{Source: h.New(t), t: t, last: map[checkpoint.Partition]checkpoint.Position{},
		committed: func() {
			mu.Lock()
			defer mu.Unlock()
			if writes >= 4 {
				if after++; after == 1 {
					cancel()
				}
			}
		}}
	mem := &MemSink{}
	fs := &FaultSink{Sink: mem,
		OnWrite: func([]record.Record) error {
			mu.Lock()
			defer mu.Unlock()
			if writes++; writes == 2 || writes == 3 {
				return errors.New("injected failure")
			}
			return nil
		}}
	if err := needRuntime(t, h.Runtime, "SourceHarness").Run(ctx, rec, fs, 2); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if after == 0 {
		t.Fatalf("the runtime committed nothing after the failed writes (%d commits before)", rec.n)
	}
}

// testPositionKeeper checks a connector.PositionKeeper: the positions given
// with a group are stored when, and only when, the group is durable, per
// source and partition, and survive a crash with it.
func testPositionKeeper(t *testing.T, h SinkHarness) {
	ctx := context.Background()
	s := h.New(t)
	k, ok := s.(connector.PositionKeeper)
	if !ok {
		t.Skip("the sink does not keep positions (connector.PositionKeeper)")
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	parts := []string{"p/0", "p/1"}
	stored := func(k connector.PositionKeeper, want map[string]connector.Position, when string) {
		t.Helper()
		got, err := k.StoredPositions(ctx, "src", parts)
		if err != nil {
			t.Fatalf("%s: StoredPositions: %v", when, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: stored %v, want %v (a partition with nothing stored is left out)", when, got, want)
		}
		for p, pos := range want {
			if got[p] != pos {
				t.Fatalf("%s: stored %v, want %v", when, got, want)
			}
		}
	}
	// give hands positions over as the runtime does, in a slice that is the
	// runtime's: it is overwritten after the call, as the runtime reuses it.
	give := func(k connector.PositionKeeper, ps ...connector.GroupPosition) {
		k.GroupPositions(ps)
		for i := range ps {
			ps[i] = connector.GroupPosition{Source: "reused", Partition: "reused", Position: -1}
		}
	}
	gp := func(part string, pos connector.Position) connector.GroupPosition {
		return connector.GroupPosition{Source: "src", Partition: part, Position: pos}
	}
	flush := func(s connector.Sink) {
		t.Helper()
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	stored(k, nil, "before any group")
	write(t, ctx, s, `{"n":1}`, `{"n":2}`)
	give(k, gp("p/0", 10), gp("p/1", 5))
	stored(k, nil, "before the Flush")
	flush(s)
	stored(k, map[string]connector.Position{"p/0": 10, "p/1": 5}, "after the Flush")
	if other, err := k.StoredPositions(ctx, "other", parts); err != nil || len(other) > 0 {
		t.Fatalf("positions of another source: %v (%v), want none: positions are per source", other, err)
	}
	// A failed group, aborted and written again, as the runtime retries.
	write(t, ctx, s, `{"n":3}`)
	give(k, gp("p/0", 20))
	if err := s.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	stored(k, map[string]connector.Position{"p/0": 10, "p/1": 5}, "after an Abort")
	write(t, ctx, s, `{"n":3}`)
	give(k, gp("p/0", 20))
	flush(s)
	want := map[string]connector.Position{"p/0": 20, "p/1": 5}
	stored(k, want, "after the retried Flush (a partition not in the group keeps its position)")
	if sl, ok := s.(connector.Sealer); ok {
		write(t, ctx, s, `{"n":4}`)
		give(k, gp("p/1", 15))
		g, err := sl.Seal(ctx)
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		stored(k, want, "after Seal, before Persist")
		if err := g.Persist(ctx); err != nil {
			t.Fatalf("Persist: %v", err)
		}
		want = map[string]connector.Position{"p/0": 20, "p/1": 15}
		stored(k, want, "after Persist")
	}
	if h.Reopen == nil {
		s.Close(ctx)
		return
	}
	write(t, ctx, s, `{"n":5}`)
	give(k, gp("p/0", 30))
	s2 := h.Reopen(t, s) // the crash
	if err := s2.Open(ctx); err != nil {
		t.Fatalf("Open after the crash: %v", err)
	}
	defer s2.Close(ctx)
	stored(s2.(connector.PositionKeeper), want, "after a crash before the Flush")
}
