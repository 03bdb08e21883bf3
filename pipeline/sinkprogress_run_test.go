package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/source/generate"
)

// idOf returns the "id" of a generated record, unique across partitions.
func idOf(t testing.TB, v []byte) int {
	t.Helper()
	i := bytes.Index(v, []byte(`"id":`))
	if i < 0 {
		t.Fatalf("no id in %s", v)
	}
	rest := v[i+5:]
	j := bytes.IndexAny(rest, ",}")
	n, err := strconv.Atoi(string(rest[:j]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// failOnce makes a sink's writes fail for records at the given offsets of
// partition "gen/0" until the runtime gave up on them once (a write and its
// one retry): each offset causes one rewind.
func failOnce(offsets ...int64) func([]record.Record) error {
	var mu sync.Mutex
	tries := map[int64]int{}
	return func(recs []record.Record) error {
		mu.Lock()
		defer mu.Unlock()
		for i := range recs {
			r := &recs[i]
			for _, o := range offsets {
				if r.Origin.Partition == "gen/0" && r.Origin.Offset == o && tries[o] < 2 {
					tries[o]++
					return fmt.Errorf("test sink: record at offset %d fails", o)
				}
			}
		}
		return nil
	}
}

// Guarantee: a rewind caused by one sink replays only to the sinks that need
// it. The healthy sink receives every record exactly once, the failing sink
// every record at least once, and the source commits everything. Before
// per-sink progress, every rewind replayed to every sink.
func TestRewindReplaysOnlyToTheFailingSink(t *testing.T) {
	const n = 4000
	src := gen(t, n, 2, 50)
	healthy := &conformance.MemSink{}
	flakyMem := &conformance.MemSink{}
	flaky := &conformance.FaultSink{Sink: flakyMem, OnWrite: failOnce(300, 900, 1500)}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "healthy", Inputs: []string{"gen"}, Sink: healthy, Batch: pipeline.BatchSettings{MaxRecords: 200}},
		pipeline.SinkSpec{Name: "flaky", Inputs: []string{"gen"}, Sink: flaky, Batch: pipeline.BatchSettings{MaxRecords: 200}})
	var rep *pipeline.Report
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	h := map[int]int{}
	for _, v := range healthy.Values() {
		h[idOf(t, v)]++
	}
	f := map[int]int{}
	for _, v := range flakyMem.Values() {
		f[idOf(t, v)]++
	}
	dups := 0
	for id := range n {
		if h[id] == 0 {
			t.Errorf("record %d missing from the healthy sink", id)
		}
		if f[id] == 0 {
			t.Errorf("record %d missing from the failing sink", id)
		}
		if h[id] > 1 {
			dups++
		}
	}
	if dups > 0 {
		t.Errorf("the healthy sink holds %d duplicates, want 0: a rewind caused by another sink replayed to it", dups)
	}
	if len(healthy.Values()) != n {
		t.Errorf("the healthy sink holds %d records, want %d", len(healthy.Values()), n)
	}
	if rep.Sinks[0].Skipped == 0 {
		t.Errorf("the healthy sink skipped nothing: the failing sink caused no replay (report %+v)", rep.Sinks)
	}
	t.Logf("failing sink: %d records for %d; healthy sink skipped %d", len(flakyMem.Values()), n, rep.Sinks[0].Skipped)
}

// keeperDB is the durable state of a fake transactional database: rows and
// positions, changed together by a commit. It checks on every commit the rule
// a PositionKeeper relies on: a stored position never passes a record the
// database does not hold.
type keeperDB struct {
	mu        sync.Mutex
	rows      map[string]int // record id -> copies
	positions map[string]connector.Position
	byPos     map[string]map[int64]bool // "source/partition" -> offsets held
	broken    []string
	// deadLettered, when set, reports whether the record at an offset is
	// durable in a dead letter sink: a stored position may pass it then.
	deadLettered func(key string, offset int64) bool
}

func newKeeperDB() *keeperDB {
	return &keeperDB{rows: map[string]int{}, positions: map[string]connector.Position{}, byPos: map[string]map[int64]bool{}}
}

// keeperRow is a record as a keeperSink stores it.
type keeperRow struct {
	value  string
	origin record.Origin
}

func (db *keeperDB) commit(rows []keeperRow, pos []connector.GroupPosition) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, r := range rows {
		db.rows[r.value]++
		key := r.origin.Source + "/" + r.origin.Partition
		if db.byPos[key] == nil {
			db.byPos[key] = map[int64]bool{}
		}
		db.byPos[key][r.origin.Offset] = true
	}
	for _, p := range pos {
		key := p.Source + "/" + p.Partition
		if p.Position < db.positions[key] {
			db.broken = append(db.broken, fmt.Sprintf("%s: stored position went back from %d to %d", key, db.positions[key], p.Position))
		}
		db.positions[key] = p.Position
		// Generated partitions hold every offset: none below the stored
		// position may be missing.
		for o := int64(0); o < int64(p.Position); o++ {
			if !db.byPos[key][o] && (db.deadLettered == nil || !db.deadLettered(key, o)) {
				db.broken = append(db.broken, fmt.Sprintf("%s: stored position %d passes offset %d, which is not stored", key, p.Position, o))
				break
			}
		}
	}
}

// keeperSink is a connector.PositionKeeper over a keeperDB: a group's rows and
// positions are committed together by Flush.
type keeperSink struct {
	db      *keeperDB
	group   []keeperRow
	pos     []connector.GroupPosition
	onFlush func() error
	// storedFails is how many StoredPositions calls fail before they work
	// again (a catalog or database unreachable for a while).
	storedFails atomic.Int64
}

func (k *keeperSink) Open(context.Context) error { return nil }
func (k *keeperSink) Write(_ context.Context, recs []record.Record) error {
	for i := range recs {
		v, err := recs[i].Value()
		if err != nil {
			return err
		}
		k.group = append(k.group, keeperRow{value: string(v), origin: recs[i].Origin})
	}
	return nil
}
func (k *keeperSink) GroupPositions(ps []connector.GroupPosition) {
	k.pos = append(k.pos[:0], ps...)
}
func (k *keeperSink) Flush(context.Context) error {
	if k.onFlush != nil {
		if err := k.onFlush(); err != nil {
			return err
		}
	}
	k.db.commit(k.group, k.pos)
	k.group, k.pos = k.group[:0], k.pos[:0]
	return nil
}
func (k *keeperSink) Abort(context.Context) error {
	k.group, k.pos = k.group[:0], k.pos[:0]
	return nil
}
func (k *keeperSink) Close(context.Context) error { return nil }
func (k *keeperSink) StoredPositions(_ context.Context, source string, parts []string) (map[string]connector.Position, error) {
	if k.storedFails.Add(-1) >= 0 {
		return nil, errors.New("test database: unreachable")
	}
	k.db.mu.Lock()
	defer k.db.mu.Unlock()
	out := map[string]connector.Position{}
	for _, p := range parts {
		if pos, ok := k.db.positions[source+"/"+p]; ok {
			out[p] = pos
		}
	}
	return out, nil
}

// check fails t if the database saw a broken rule, and returns the copies of
// each generated id it holds.
func (db *keeperDB) check(t *testing.T) map[int]int {
	t.Helper()
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, b := range db.broken {
		t.Error(b)
	}
	ids := map[int]int{}
	for v, c := range db.rows {
		ids[idOf(t, []byte(v))] += c
	}
	return ids
}

func exactlyOnce(t *testing.T, ids map[int]int, n int) {
	t.Helper()
	missing, dups := 0, 0
	for id := range n {
		switch c := ids[id]; {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	if missing != 0 || dups != 0 || len(ids) != n {
		t.Errorf("the database holds %d distinct ids of %d: %d missing, %d duplicates; want each exactly once", len(ids), n, missing, dups)
	}
}

// Guarantee: a PositionKeeper is exactly-once across restarts even when the
// source's own commit is lost: a run that starts reading from the beginning
// again skips everything the sink stored.
func TestPositionKeeperSkipsWhatItStored(t *testing.T) {
	const n = 20000
	db := newKeeperDB()
	// The first run stops early (its source commits are forgotten), the
	// second reads everything from the start.
	first, err := generate.New("gen", generate.Config{Count: n, Partitions: 3, BatchSize: 40, Template: generate.DefaultTemplate})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := &keeperSink{db: db, onFlush: func() error {
		db.mu.Lock()
		enough := len(db.rows) >= 1000
		db.mu.Unlock()
		if enough {
			cancel()
		}
		return nil
	}}
	sp := fastSpec(first, pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: k, Batch: pipeline.BatchSettings{MaxRecords: 100}})
	sp.Sources[0].MaxInFlightBatches = 8
	if err := pipeline.Run(ctx, sp, quiet); err != nil {
		t.Fatal(err)
	}
	stored := len(db.check(t))
	if stored == 0 || stored == n {
		t.Fatalf("the first run stored %d of %d records; the test needs a partial run", stored, n)
	}
	var rep *pipeline.Report
	sp = fastSpec(gen(t, n, 3, 40), pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: &keeperSink{db: db}, Batch: pipeline.BatchSettings{MaxRecords: 100}})
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, db.check(t), n)
	if rep.Sinks[0].Skipped < int64(stored) {
		t.Errorf("the second run skipped %d records, want at least the %d stored before", rep.Sinks[0].Skipped, stored)
	}
}

// Guarantee: a PositionKeeper whose stored positions cannot be read for a
// while (its database unreachable when a partition's first records arrive)
// stores no position past the records that failed for it: the chunks that
// follow the failed one in flight are failed too, until the rewind brings
// the failed records again. Before, the next chunk found the store back,
// was written, and its position covered the failed records, which the
// replay then skipped as stored: lost.
func TestPositionKeeperUnreachableAtFirstLosesNothing(t *testing.T) {
	const n = 4000
	db := newKeeperDB()
	keeper := &keeperSink{db: db}
	keeper.storedFails.Store(3)
	src := gen(t, n, 2, 50)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: keeper, Batch: pipeline.BatchSettings{MaxRecords: 150}})
	sp.Sinks[0].Retry.MaxAttempts = 2
	sp.Sources[0].MaxInFlightBatches = 8
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, db.check(t), n)
}

// Guarantee: rewinds caused by a second, failing sink give a PositionKeeper
// no duplicate, and its own failed flushes store no position past what it
// holds.
func TestPositionKeeperUnderRewinds(t *testing.T) {
	const n = 4000
	db := newKeeperDB()
	var mu sync.Mutex
	flushes := 0
	keeper := &keeperSink{db: db, onFlush: func() error {
		mu.Lock()
		defer mu.Unlock()
		flushes++
		if flushes%7 == 0 {
			return errors.New("test database: commit failed")
		}
		return nil
	}}
	flakyMem := &conformance.MemSink{}
	flaky := &conformance.FaultSink{Sink: flakyMem, OnWrite: failOnce(300, 900, 1500, 1800)}
	src := gen(t, n, 2, 50)
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: keeper, Batch: pipeline.BatchSettings{MaxRecords: 150}},
		pipeline.SinkSpec{Name: "flaky", Inputs: []string{"gen"}, Sink: flaky, Batch: pipeline.BatchSettings{MaxRecords: 200}})
	sp.Sinks[0].Retry.MaxAttempts = 3 // the database's failed commits succeed on a retry
	var rep *pipeline.Report
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, db.check(t), n)
	if rep.Sinks[0].Skipped == 0 {
		t.Errorf("the database skipped nothing: the failing sink caused no replay")
	}
	for id, c := range seenIDs(t, flakyMem.Values()) {
		if c == 0 {
			t.Errorf("record %d missing from the failing sink", id)
		}
	}
}

func seenIDs(t *testing.T, vals [][]byte) map[int]int {
	m := map[int]int{}
	for _, v := range vals {
		m[idOf(t, v)]++
	}
	return m
}

// A source must give each record its own position: the runtime stops a run
// whose records do not, since skipping what a sink holds relies on it.
func TestRecordsWithoutPositionsStopTheRun(t *testing.T) {
	src := &words{list: []string{"a", "b", "c"}, noOffsets: true}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: &conformance.MemSink{}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := pipeline.Run(ctx, sp, quiet)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("set each record's Origin.Offset")) {
		t.Fatalf("Run = %v, want an error saying a record's Origin.Offset must be its position", err)
	}
}

// keeperSealer is a keeperSink that seals: a sealed group's Persist commits
// its rows and positions. The runtime may persist the next group while the
// sink writes another.
type keeperSealer struct {
	keeperSink
	onPersist func() error
}

func (k *keeperSealer) Seal(context.Context) (connector.SealedGroup, error) {
	g := &keeperGroup{k: k, rows: k.group, pos: append([]connector.GroupPosition(nil), k.pos...)}
	k.group, k.pos = nil, k.pos[:0]
	return g, nil
}

type keeperGroup struct {
	k    *keeperSealer
	rows []keeperRow
	pos  []connector.GroupPosition
}

func (g *keeperGroup) Persist(context.Context) error {
	if err := g.k.onPersist(); err != nil {
		return err
	}
	g.k.db.commit(g.rows, g.pos)
	return nil
}

func (g *keeperGroup) Discard(context.Context) error { return nil }

// Guarantee: a sealing PositionKeeper whose commits fail, some of them for
// good (the group is then replayed), never stores a position past a record it
// does not hold, and ends with every record exactly once. The runtime stops
// persisting later groups after a failed one, and caps the positions it gives
// at a failed group's records.
func TestSealingPositionKeeperUnderFailures(t *testing.T) {
	const n = 6000
	db := newKeeperDB()
	var mu sync.Mutex
	persists, flushes := 0, 0
	k := &keeperSealer{keeperSink: keeperSink{db: db, onFlush: func() error {
		mu.Lock()
		defer mu.Unlock()
		flushes++
		if flushes%2 == 0 {
			return errors.New("test database: commit failed again")
		}
		return nil
	}}, onPersist: func() error {
		mu.Lock()
		defer mu.Unlock()
		persists++
		if persists%5 == 0 {
			return errors.New("test database: commit failed")
		}
		return nil
	}}
	src := gen(t, n, 3, 30)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: k, Batch: pipeline.BatchSettings{MaxRecords: 90, Overlap: 3}})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, db.check(t), n)
	mu.Lock()
	defer mu.Unlock()
	if flushes < 2 {
		t.Errorf("%d synchronous retries: the test did not fail a group for good", flushes)
	}
}

// Guarantee: a PositionKeeper whose stored positions cannot be read (its
// catalog or database went away before the sink's first flush of a
// partition) is a failing sink like one whose flushes fail: /readyz names
// it with the error once that has lasted stall_warning, though no flush is
// ever attempted meanwhile; once the store answers, the run ends with every
// record once. Before, only the partitions showed as stalled: the reads
// were retried and their records replayed without the sink's health ever
// hearing of it.
func TestStoredPositionsFailingIsVisible(t *testing.T) {
	const n = 2000
	db := newKeeperDB()
	keeper := &keeperSink{db: db}
	keeper.storedFails.Store(1 << 40)
	sp := fastSpec(gen(t, n, 2, 50), pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: keeper, Batch: pipeline.BatchSettings{MaxRecords: 150}})
	sp.Checkpoint.StallWarning = 200 * time.Millisecond
	sp.Metrics.Address = "127.0.0.1:0"
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(context.Background(), sp, quiet, pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	waitReason(t, base, "the sink whose stored positions cannot be read", func(r pipeline.Reason) bool {
		return r.Kind == "sink" && r.Sink == "db" && strings.Contains(r.Message, "test database: unreachable")
	})
	db.mu.Lock()
	held := len(db.rows)
	db.mu.Unlock()
	if held != 0 {
		t.Fatalf("the database holds %d records while no stored position could be read, want 0", held)
	}
	keeper.storedFails.Store(0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, db.check(t), n)
}
