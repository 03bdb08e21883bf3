package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// ExactlyOnceHarness builds instances of an exactly-once sink (a
// connector.PositionKeeper) for TestExactlyOnce, arms the crash points of
// their commit, and reads their destination as a reader outside weir does.
//
// Every function gets the sink it works on as the connector.Sink that New,
// Reopen or Another returned.
type ExactlyOnceHarness struct {
	// New returns a new, unopened instance over a fresh, empty destination
	// of its own.
	New func(t *testing.T) connector.Sink
	// Reopen returns a new, unopened instance over s's destination with s's
	// identity: what a restarted process builds from the same
	// configuration (the same transactional identity, the same sink name).
	// The suite has crashed s (Crash) or closed it, and never uses it again.
	Reopen func(t *testing.T, s connector.Sink) connector.Sink
	// Another returns a new, unopened instance over s's destination with an
	// identity of its own, while s goes on: a second process of the
	// pipeline, as two members of a Kafka group are, or a process that took
	// over from one that is stopped but not dead. Nil skips the checks of
	// concurrent writers, for a destination only one instance can write.
	Another func(t *testing.T, s connector.Sink) connector.Sink
	// Crash releases what the operating system releases when s's process
	// dies (its file descriptors and locks, its connections), without any
	// more of s's work reaching the destination: no flush, no abort, no
	// close of a transaction. Nil when there is nothing to release.
	Crash func(t *testing.T, s connector.Sink)
	// Held returns the record values s's destination holds, read the way
	// the sink's documentation tells a reader outside weir to read it (the
	// files a reader counts, a read_committed consumer, a SELECT), not
	// through s.
	Held func(t *testing.T, s connector.Sink) [][]byte
	// CrashPoints arms s's crash points: s must call step, with a short
	// stable name, at every step of its commit after which a crash would
	// leave the destination in another state (before the data is written,
	// between data and positions, after both: each sink has its own), on
	// the goroutine that runs Flush or Persist, and never while holding a
	// lock that Crash cannot release. The suite crashes s by panicking
	// inside step; a nil step disarms them.
	CrashPoints func(s connector.Sink, step func(name string))
	// PartitionsApart says that the sink commits a group partition by
	// partition, each partition's records of the group and its position in
	// one step of its own (the S3 sink's position object per partition),
	// not the whole group in one: after a crash inside a commit the suite
	// then takes, for each partition, the position before the group or the
	// one after it, where it otherwise wants one of the two for every
	// partition at once.
	PartitionsApart bool
}

// TestExactlyOnce runs the exactly-once suite: a fake runtime of its own
// (it needs nothing of package pipeline) writes records of three source
// partitions in groups, the way the runtime does, and checks the sink's side
// of connector.PositionKeeper's contract:
//
//   - StoredPositionsMatchWhatIsHeld: after each durable group, and after a
//     clean restart, the positions reported are those of the last durable
//     group, and the destination holds exactly the records below them, once;
//   - AbortedGroupStoresNothing: an aborted group leaves neither records nor
//     positions, and the same records written again are held once;
//   - CrashAtEveryStep/<step>: the sink is crashed before Flush (or Seal),
//     at each step of its commit that it reports through CrashPoints, and
//     after; a new instance must report positions that agree with what the
//     destination holds, with the group all in or all out (each
//     partition's share of it, with PartitionsApart), and a run that
//     goes on from the reported positions must leave every record held
//     exactly once. For a Sealer the crashed Persist has a second sealed
//     group behind it, which must not show;
//   - StoredPositionsReadTheDestination (with Another): positions another
//     instance stored after this one opened are reported;
//   - FenceOfConcurrentWriters/ZombieCommitsLast, .../ZombieCommitsFirst
//     (with Another): two instances write records of one partition at once,
//     the second from the positions it read when it took the partition
//     over; whichever commits second must fail or leave out what the first
//     holds, and after the runtime's retries every record is held once.
//
// docs/connectors.md ("The exactly-once suite") shows how to call it.
func TestExactlyOnce(t *testing.T, h ExactlyOnceHarness) {
	t.Helper()
	if h.New == nil || h.Reopen == nil || h.Held == nil || h.CrashPoints == nil {
		t.Fatal("conformance: ExactlyOnceHarness needs New, Reopen, Held and CrashPoints")
	}
	probe := h.New(t)
	if _, ok := probe.(connector.PositionKeeper); !ok {
		t.Fatalf("conformance: %T is not a connector.PositionKeeper", probe)
	}
	_, sealer := probe.(connector.Sealer)
	h.crash(t, probe) // never opened: releases nothing of note
	t.Run("StoredPositionsMatchWhatIsHeld", func(t *testing.T) { testStoredMatchHeld(t, h) })
	t.Run("AbortedGroupStoresNothing", func(t *testing.T) { testAbortedGroup(t, h) })
	t.Run("CrashAtEveryStep", func(t *testing.T) { testCrashAtEveryStep(t, h, sealer) })
	t.Run("StoredPositionsReadTheDestination", func(t *testing.T) {
		if h.Another == nil {
			t.Skip("the harness has no Another: only one instance writes the destination")
		}
		testStoredReadsDestination(t, h)
	})
	t.Run("FenceOfConcurrentWriters", func(t *testing.T) {
		if h.Another == nil {
			t.Skip("the harness has no Another: only one instance writes the destination")
		}
		t.Run("ZombieCommitsLast", func(t *testing.T) { testFence(t, h, true) })
		t.Run("ZombieCommitsFirst", func(t *testing.T) { testFence(t, h, false) })
	})
}

func (h ExactlyOnceHarness) crash(t *testing.T, s connector.Sink) {
	t.Helper()
	if h.CrashPoints != nil {
		h.CrashPoints(s, nil)
	}
	if h.Crash != nil {
		h.Crash(t, s)
	}
}

// crashSignal is what step panics with to crash a sink.
type crashSignal struct{ at string }

// stepName names the n-th (from 1) occurrence of a step within one commit.
func stepName(name string, n int) string {
	if n == 1 {
		return name
	}
	return fmt.Sprintf("%s#%d", name, n)
}

// crashAt returns a step function that panics at the named occurrence, and
// reports whether it did.
func crashAt(at string) (step func(string), crashed func() bool) {
	seen := map[string]int{}
	did := false
	return func(name string) {
			seen[name]++
			if stepName(name, seen[name]) == at && !did {
				did = true
				panic(crashSignal{at: at})
			}
		}, func() bool {
			return did
		}
}

// recover runs f and reports whether it crashed with a crashSignal; any
// other panic goes on.
func recoverCrash(f func() error) (err error, crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashSignal); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	return f(), false
}

// testStoredMatchHeld writes every record in groups, checking after each and
// after a clean restart that reported positions and held records agree.
func testStoredMatchHeld(t *testing.T, h ExactlyOnceHarness) {
	ctx := context.Background()
	p := newEOSPlan(1)
	d := newDriver(t, h, h.New(t), p)
	d.open(ctx)
	for !d.done() {
		d.group(ctx, 0)
		if err := d.commit(ctx); err != nil {
			t.Fatalf("committing a group: %v", err)
		}
		d.agree(ctx, "after a durable group", d.want)
	}
	d.close(ctx)
	d2 := newDriver(t, h, h.Reopen(t, d.s), p)
	d2.open(ctx)
	defer d2.close(ctx)
	d2.agree(ctx, "after a clean restart", p.ends())
}

// testAbortedGroup aborts a group and writes it again.
func testAbortedGroup(t *testing.T, h ExactlyOnceHarness) {
	ctx := context.Background()
	p := newEOSPlan(2)
	d := newDriver(t, h, h.New(t), p)
	d.open(ctx)
	defer d.close(ctx)
	d.group(ctx, 0)
	if err := d.commit(ctx); err != nil {
		t.Fatalf("committing the first group: %v", err)
	}
	before := d.want
	g := d.group(ctx, 0)
	if err := d.s.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	d.pending = nil
	d.agree(ctx, "after an Abort", before)
	// The runtime writes the same records again, with their positions.
	d.writeGroup(ctx, g)
	if err := d.commit(ctx); err != nil {
		t.Fatalf("committing the group written again: %v", err)
	}
	d.agree(ctx, "after the aborted group was written again", d.want)
}

// testCrashAtEveryStep finds the sink's crash points with one recorded
// commit, then crashes a fresh instance at each and checks the restart.
func testCrashAtEveryStep(t *testing.T, h ExactlyOnceHarness, sealer bool) {
	ctx := context.Background()
	var steps []string
	{
		d := newDriver(t, h, h.New(t), newEOSPlan(3))
		d.open(ctx)
		seen := map[string]int{}
		h.CrashPoints(d.s, func(name string) {
			seen[name]++
			steps = append(steps, stepName(name, seen[name]))
		})
		d.group(ctx, 0)
		if err := d.commit(ctx); err != nil {
			t.Fatalf("committing a group: %v", err)
		}
		h.CrashPoints(d.s, nil)
		d.close(ctx)
	}
	if len(steps) == 0 {
		t.Fatalf("the sink reported no commit steps through CrashPoints: every step of its commit (before the data, between data and positions, after) must be one, so that the suite can crash it there")
	}
	t.Logf("commit steps: %s", strings.Join(steps, ", "))
	points := append(append([]string{"before-commit"}, steps...), "after-commit")
	for i, at := range points {
		t.Run(at, func(t *testing.T) { testCrashAt(t, h, sealer, at, int64(10+i)) })
	}
}

// testCrashAt commits one group, crashes the sink at the step at of the
// next one, reopens it, and goes on from what the new instance reports.
func testCrashAt(t *testing.T, h ExactlyOnceHarness, sealer bool, at string, seed int64) {
	ctx := context.Background()
	p := newEOSPlan(seed)
	d := newDriver(t, h, h.New(t), p)
	d.open(ctx)
	d.group(ctx, 0)
	if err := d.commit(ctx); err != nil {
		t.Fatalf("committing the first group: %v", err)
	}
	before := d.want
	d.group(ctx, 0)
	after := maps.Clone(before)
	for k, pos := range d.pending[len(d.pending)-1] {
		after[k] = max(after[k], pos)
	}
	var crashed bool
	switch at {
	case "before-commit":
		crashed = true
	case "after-commit":
		if err := d.commit(ctx); err != nil {
			t.Fatalf("committing the second group: %v", err)
		}
		crashed = true
	default:
		step, did := crashAt(at)
		h.CrashPoints(d.s, step)
		var err error
		if sealer {
			// The runtime keeps a second group sealed behind the one it
			// persists: a crash must take it down too.
			var first connector.SealedGroup
			if first, err = d.seal(ctx); err == nil {
				d.group(ctx, 0)
				if _, err = d.seal(ctx); err == nil {
					err, crashed = persistCrashing(ctx, first)
				}
			}
		} else {
			err, crashed = recoverCrash(func() error { return d.flush(ctx) })
		}
		if !crashed {
			if err != nil {
				t.Fatalf("the commit failed before its step %s: %v", at, err)
			}
			if !did() {
				t.Fatalf("the sink did not reach its step %s this time (it did in the first commit)", at)
			}
		}
	}
	if !crashed {
		t.Fatalf("the sink was not crashed at %s", at)
	}
	h.crash(t, d.s)
	d2 := newDriver(t, h, h.Reopen(t, d.s), p)
	d2.open(ctx)
	got := d2.agree(ctx, "after a crash at "+at, nil)
	switch {
	case equalPositions(got, before), equalPositions(got, after):
	case h.PartitionsApart:
		for _, k := range sortedKeys(mergeKeys(got, before, after)) {
			if got[k] != before[k] && got[k] != after[k] {
				t.Fatalf("after a crash at %s: stored %v, want for each partition the position of the last group before the crash, %v, or of the group being committed, %v, and nothing in between: a partition's share of a group and its position are stored in one step", at, got, before, after)
			}
		}
	default:
		t.Fatalf("after a crash at %s: stored %v, want the positions of the last group before the crash, %v, or of the group being committed, %v, and nothing in between: a group and its positions are stored in one step", at, got, before, after)
	}
	// The runtime goes on from what the new instance reports.
	d2.resume(got)
	for !d2.done() {
		d2.group(ctx, 0)
		if err := d2.commit(ctx); err != nil {
			t.Fatalf("committing after the crash: %v", err)
		}
	}
	d2.agree(ctx, "after the run went on from the positions reported after the crash", p.ends())
	d2.close(ctx)
}

// persistCrashing runs g's Persist on a goroutine of its own, as the
// runtime's persister does, and reports whether it crashed.
func persistCrashing(ctx context.Context, g connector.SealedGroup) (error, bool) {
	type result struct {
		err     error
		crashed bool
	}
	ch := make(chan result, 1)
	go func() {
		err, crashed := recoverCrash(func() error { return g.Persist(ctx) })
		ch <- result{err, crashed}
	}()
	r := <-ch
	return r.err, r.crashed
}

// testStoredReadsDestination checks that positions another instance stored
// are reported by one opened before.
func testStoredReadsDestination(t *testing.T, h ExactlyOnceHarness) {
	ctx := context.Background()
	p := newEOSPlan(4)
	a := newDriver(t, h, h.New(t), p)
	a.open(ctx)
	defer a.close(ctx)
	a.agree(ctx, "at the start", nil)
	b := newDriver(t, h, h.Another(t, a.s), p)
	b.open(ctx)
	b.group(ctx, 0)
	if err := b.commit(ctx); err != nil {
		t.Fatalf("committing a group of the other instance: %v", err)
	}
	b.close(ctx)
	got := a.stored(ctx)
	if !equalPositions(got, b.want) {
		t.Fatalf("an instance opened before another stored positions %v reports %v: StoredPositions must read the destination (a position another process stored while it owned the partition), not what the instance remembers", b.want, got)
	}
}

// testFence has two instances write overlapping records of partition a/0,
// the zombie from the start, the other from the positions it read after
// taking the partition over, and commits the zombie's group last or first.
func testFence(t *testing.T, h ExactlyOnceHarness, zombieLast bool) {
	ctx := context.Background()
	p := newEOSPlan(5)
	p.parts = p.parts[:1] // a/0 alone
	zombie := newDriver(t, h, h.New(t), p)
	zombie.open(ctx)
	defer zombie.close(ctx)
	zg := zombie.group(ctx, 6) // offsets 0..5, not committed yet
	other := newDriver(t, h, h.Another(t, zombie.s), p)
	other.open(ctx) // from the positions it finds stored: none yet
	defer other.close(ctx)
	og := other.group(ctx, 10) // offsets 0..9
	first, second, sg := other, zombie, zg
	if !zombieLast {
		first, second, sg = zombie, other, og
	}
	if err := first.commit(ctx); err != nil {
		t.Fatalf("the first commit failed: %v", err)
	}
	// The second may fail (the fence) or leave out what the first holds;
	// either way the runtime writes its group again, a few times if it must.
	err := second.commit(ctx)
	for try := 0; err != nil && try < 3; try++ {
		t.Logf("the second commit failed, as a fence may make it: %v", err)
		if aerr := second.s.Abort(ctx); aerr != nil {
			t.Fatalf("Abort: %v", aerr)
		}
		second.pending = nil
		second.writeGroup(ctx, sg)
		err = second.commit(ctx)
	}
	if err != nil {
		t.Fatalf("the second writer's group could not be written again after the fence: %v", err)
	}
	held := parseHeld(t, h.Held(t, other.s))
	if dups := held.dups(); len(dups) > 0 {
		t.Fatalf("records held twice after two instances wrote partition a/0 at once (%s): %s: a group must not become durable with records that another instance's stored positions cover", map[bool]string{true: "the zombie committing last", false: "the zombie committing first"}[zombieLast], strings.Join(dups, ", "))
	}
	for o := int64(0); o < 10; o++ {
		if held.count(eosKey{"a", "a/0"}, o) != 1 {
			t.Fatalf("record a/0@%d is not held after both writers committed", o)
		}
	}
	if got := other.stored(ctx); got[eosKey{"a", "a/0"}] < 10 {
		t.Fatalf("stored %v after both writers committed, want a/0 at 10 at least", got)
	}
}

func equalPositions(a, b map[eosKey]connector.Position) bool {
	// A partition with nothing stored and one stored at 0 are the same.
	for k, v := range a {
		if v != b[k] {
			return false
		}
	}
	for k, v := range b {
		if v != a[k] {
			return false
		}
	}
	return true
}

// mergeKeys returns a map with every key of ms.
func mergeKeys(ms ...map[eosKey]connector.Position) map[eosKey]connector.Position {
	out := map[eosKey]connector.Position{}
	for _, m := range ms {
		for k := range m {
			out[k] = 0
		}
	}
	return out
}

func sortedKeys(m map[eosKey]connector.Position) []eosKey {
	keys := make([]eosKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b eosKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}
