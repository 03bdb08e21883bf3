package s3

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

var ctx = context.Background()

var errCrash = errors.New("crashed")

// run is what a runtime does with a PositionKeeper, cut short: from the
// stored positions of two partitions it writes the records of each not yet
// stored (n per partition, offsets 0..n-1), in groups of per records of
// both, flushing after each; a failed step ends the run (the process died,
// or the runtime would retry: the caller decides). With sealed set, groups
// are sealed and persisted one behind the other, as the persister does.
func run(t *testing.T, s *Sink, n, per int, sealed bool) error {
	t.Helper()
	parts := []string{"p/0", "p/1"}
	if err := s.Open(ctx); err != nil {
		return err
	}
	start, err := s.StoredPositions(ctx, "src", parts)
	if err != nil {
		return err
	}
	next := map[string]int64{}
	for _, p := range parts {
		next[p] = int64(start[p])
	}
	var out connector.SealedGroup
	for {
		var recs []record.Record
		var gps []connector.GroupPosition
		for _, p := range parts {
			for i := 0; i < per && next[p] < int64(n); i++ {
				r := record.New(fmt.Appendf(nil, `{"p":%q,"id":%d}`, p, next[p]))
				r.Origin = record.Origin{Source: "src", Partition: p, Offset: next[p]}
				recs = append(recs, r)
				next[p]++
			}
			gps = append(gps, connector.GroupPosition{Source: "src", Partition: p, Position: connector.Position(next[p])})
		}
		if len(recs) == 0 {
			break
		}
		if err := s.Write(ctx, recs); err != nil {
			return err
		}
		s.GroupPositions(gps)
		if !sealed {
			if err := s.Flush(ctx); err != nil {
				return err
			}
			continue
		}
		g, err := s.Seal(ctx)
		if err != nil {
			return err
		}
		if out != nil {
			if err := out.Persist(ctx); err != nil {
				return err
			}
		}
		out = g
	}
	if out != nil {
		if err := out.Persist(ctx); err != nil {
			return err
		}
	}
	return s.Close(ctx)
}

// checkOnce fails the test unless the visible objects hold every record of
// both partitions exactly once, and no upload is left.
func checkOnce(t *testing.T, st *memStore, n int, when string) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range readLines(t, st, "out/") {
		seen[string(l)]++
	}
	for _, p := range []string{"p/0", "p/1"} {
		for i := range n {
			if v := fmt.Sprintf(`{"p":%q,"id":%d}`, p, i); seen[v] != 1 {
				t.Fatalf("%s: record %s is visible %d times, want once", when, v, seen[v])
			}
		}
	}
	if len(seen) != 2*n {
		t.Fatalf("%s: %d distinct records visible, want %d", when, len(seen), 2*n)
	}
	if k := st.pending(); k != 0 {
		t.Fatalf("%s: %d multipart uploads left behind (billed, never visible)", when, k)
	}
}

// A crash at any request of a run, followed by a new run from the stored
// positions, leaves every record visible exactly once and no upload behind:
// the sink's exactly-once claim at every crash point it has.
func TestCrashAtEveryRequest(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		// How many requests a whole run makes, to crash at each of them.
		st := newMemStore()
		if err := run(t, newMemSink(t, st, nil), 12, 5, sealed); err != nil {
			t.Fatal(err)
		}
		total := len(st.calls)
		checkOnce(t, st, 12, "without a crash")
		for at := 1; at <= total; at++ {
			name := fmt.Sprintf("sealed=%v/crash-at-%d", sealed, at)
			st := newMemStore()
			calls := 0
			st.fail = func(op, key string) error {
				if calls++; calls >= at {
					return errCrash
				}
				return nil
			}
			err := run(t, newMemSink(t, st, nil), 12, 5, sealed)
			if !errors.Is(err, errCrash) {
				t.Fatalf("%s: the run ended with %v, not the crash", name, err)
			}
			st.fail = nil
			if err := run(t, newMemSink(t, st, nil), 12, 5, sealed); err != nil {
				t.Fatalf("%s: the run after the crash: %v", name, err)
			}
			checkOnce(t, st, 12, name)
		}
	}
}

// A request that takes effect but whose answer is lost (the position
// object's PUT above all) is settled by reading back before anything more
// of the partition is written: the runtime's retry, Discard then Abort
// then the same records again, writes nothing twice and loses nothing.
func TestLostAnswers(t *testing.T) {
	st := newMemStore()
	if err := run(t, newMemSink(t, st, nil), 12, 5, false); err != nil {
		t.Fatal(err)
	}
	total := len(st.calls)
	for at := 1; at <= total; at++ {
		st := newMemStore()
		calls := 0
		lost := ""
		st.fail = func(op, key string) error {
			if calls++; calls == at && op != "list" && op != "get" && op != "head" {
				lost = op + " " + key
				return errLostAnswer
			}
			return nil
		}
		s := newMemSink(t, st, nil)
		for attempt := 0; ; attempt++ {
			err := retryRun(t, s, st, 12, 5)
			if err == nil {
				break
			}
			if attempt > 3 {
				t.Fatalf("lost answer of %s: still failing: %v", lost, err)
			}
		}
		checkOnce(t, st, 12, "lost answer of "+lost)
	}
}

var errLostAnswer = errors.New("no answer (it took effect)")

// retryRun is run with the runtime's retry: a failed group is aborted and
// written again by the same sink.
func retryRun(t *testing.T, s *Sink, st *memStore, n, per int) error {
	parts := []string{"p/0", "p/1"}
	if err := s.Open(ctx); err != nil {
		return err
	}
	start, err := s.StoredPositions(ctx, "src", parts)
	if err != nil {
		return err
	}
	next := map[string]int64{}
	for _, p := range parts {
		next[p] = int64(start[p])
	}
	for {
		var recs []record.Record
		var gps []connector.GroupPosition
		for _, p := range parts {
			for i := 0; i < per && next[p] < int64(n); i++ {
				r := record.New(fmt.Appendf(nil, `{"p":%q,"id":%d}`, p, next[p]))
				r.Origin = record.Origin{Source: "src", Partition: p, Offset: next[p]}
				recs = append(recs, r)
				next[p]++
			}
			gps = append(gps, connector.GroupPosition{Source: "src", Partition: p, Position: connector.Position(next[p])})
		}
		if len(recs) == 0 {
			return s.Close(ctx)
		}
		for attempt := 0; ; attempt++ {
			err := s.Write(ctx, recs)
			if err == nil {
				s.GroupPositions(gps)
				err = s.Flush(ctx)
			}
			if err == nil {
				break
			}
			if !errors.Is(err, errLostAnswer) || attempt > 3 {
				return err
			}
			if err := s.Abort(ctx); err != nil && !errors.Is(err, errLostAnswer) {
				return err
			}
		}
	}
}

// A second writer of a partition, one that read the positions before the
// first wrote them, fails instead of overwriting them.
func TestSecondWriterIsFenced(t *testing.T) {
	st := newMemStore()
	a, b := newMemSink(t, st, nil), newMemSink(t, st, nil)
	for _, s := range []*Sink{a, b} {
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StoredPositions(ctx, "src", []string{"p/0"}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(s *Sink, id int) error {
		r := record.New(fmt.Appendf(nil, `{"id":%d}`, id))
		r.Origin = record.Origin{Source: "src", Partition: "p/0", Offset: 0}
		if err := s.Write(ctx, []record.Record{r}); err != nil {
			return err
		}
		s.GroupPositions([]connector.GroupPosition{{Source: "src", Partition: "p/0", Position: 1}})
		return s.Flush(ctx)
	}
	if err := write(a, 1); err != nil {
		t.Fatal(err)
	}
	err := write(b, 2)
	if err == nil || !strings.Contains(err.Error(), "another writer") {
		t.Fatalf("the second writer's flush returned %v, want an error naming another writer", err)
	}
	if got := readLines(t, st, "out/"); len(got) != 1 || string(got[0]) != `{"id":1}` {
		t.Fatalf("visible %q, want only the first writer's record", got)
	}
	if k := st.pending(); k != 0 {
		t.Fatalf("%d uploads left by the fenced writer", k)
	}
}

// A writer fenced by another's commit of its partition, when the runtime
// writes the group again (Abort, the same records), reads the partition's
// position object again: it leaves out what the other holds and commits the
// rest over the other's commit, instead of failing on the ETag it read
// before, retry after retry.
func TestFencedWriterRetriesFromTheOthersPositions(t *testing.T) {
	st := newMemStore()
	a, b := newMemSink(t, st, nil), newMemSink(t, st, nil)
	for _, s := range []*Sink{a, b} {
		if err := s.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StoredPositions(ctx, "src", []string{"p/0"}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(s *Sink, n int) error {
		var recs []record.Record
		for i := range n {
			r := record.New(fmt.Appendf(nil, `{"id":%d}`, i))
			r.Origin = record.Origin{Source: "src", Partition: "p/0", Offset: int64(i)}
			recs = append(recs, r)
		}
		if err := s.Write(ctx, recs); err != nil {
			return err
		}
		s.GroupPositions([]connector.GroupPosition{{Source: "src", Partition: "p/0", Position: connector.Position(n)}})
		return s.Flush(ctx)
	}
	if err := write(a, 3); err != nil {
		t.Fatal(err)
	}
	if err := write(b, 5); err == nil || !strings.Contains(err.Error(), "another writer") {
		t.Fatalf("the second writer's flush returned %v, want an error naming another writer", err)
	}
	if err := b.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := write(b, 5); err != nil {
		t.Fatalf("the fenced writer's group written again: %v, want it committed after the other's", err)
	}
	got := map[string]int{}
	for _, l := range readLines(t, st, "out/") {
		got[string(l)]++
	}
	for i := range 5 {
		if v := fmt.Sprintf(`{"id":%d}`, i); got[v] != 1 {
			t.Fatalf("record %s is visible %d times, want once (visible: %v)", v, got[v], got)
		}
	}
	if pos, err := a.StoredPositions(ctx, "src", []string{"p/0"}); err != nil || pos["p/0"] != 5 {
		t.Fatalf("stored %v (%v), want p/0 at 5", pos, err)
	}
	if k := st.pending(); k != 0 {
		t.Fatalf("%d uploads left behind", k)
	}
}

// A completion that fails after its commit is retried before the partition
// is committed again, never left for Open to take for an uncommitted
// upload: a crash after a later group loses nothing.
func TestFailedCompletionIsNotOverwritten(t *testing.T) {
	st := newMemStore()
	completes, puts := 0, 0
	st.fail = func(op, key string) error {
		switch op {
		case "complete":
			if completes++; completes <= 4 {
				return errors.New("a blip")
			}
		case "put":
			if puts++; puts > 3 {
				return errCrash
			}
		}
		return nil
	}
	s := newMemSink(t, st, nil)
	for attempt := 0; ; attempt++ {
		err := retryRun(t, s, st, 12, 5)
		if errors.Is(err, errCrash) {
			break
		}
		if attempt > 5 {
			t.Fatalf("no crash: %v", err)
		}
		if err := s.Abort(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st.fail = nil
	if err := run(t, newMemSink(t, st, nil), 12, 5, false); err != nil {
		t.Fatal(err)
	}
	checkOnce(t, st, 12, "after failed completions and a crash")
}

// An upload aborted under a writer between its start and its commit (a
// second process's Open taking it for a crashed run's) does not count as
// written: the commit is taken back and the group written again.
func TestAbortedUnderTheWriter(t *testing.T) {
	st := newMemStore()
	s := newMemSink(t, st, nil)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	aborted := false
	st.fail = func(op, key string) error {
		if op == "put" && !aborted {
			aborted = true
			for id := range st.uploads { // what the other process's Open does
				delete(st.uploads, id)
			}
		}
		return nil
	}
	write := func() error {
		r := record.New([]byte(`{"id":1}`))
		r.Origin = record.Origin{Source: "src", Partition: "p/0", Offset: 0}
		if err := s.Write(ctx, []record.Record{r}); err != nil {
			return err
		}
		s.GroupPositions([]connector.GroupPosition{{Source: "src", Partition: "p/0", Position: 1}})
		return s.Flush(ctx)
	}
	if err := write(); err == nil || !strings.Contains(err.Error(), "taken back") {
		t.Fatalf("the flush whose upload was aborted returned %v, want the commit taken back", err)
	}
	if pos, err := s.StoredPositions(ctx, "src", []string{"p/0"}); err != nil || len(pos) != 0 {
		t.Fatalf("stored %v (%v) after the taken-back commit, want nothing", pos, err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, st, "out/"); len(got) != 1 {
		t.Fatalf("visible %q, want the record once", got)
	}
}
