package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"sync"
	"syscall"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// poisonSink fails, as a whole, every group that holds a marked record: a
// failure that belongs to one record (its directory cannot be made) but that
// the sink reports for the group, as the file sink does. With onWrite the
// failure comes from Write, after the records before the marked one joined
// the group (the file sink's case); otherwise from Flush. It notes the size
// of every group it was asked to flush.
type poisonSink struct {
	bad     func(r *record.Record) bool // nil: nothing is marked
	onWrite bool
	all     bool // every group fails, whatever it holds

	mu       sync.Mutex
	group    [][]byte
	flushed  [][]byte
	pending  int
	poisoned bool
	flushes  int // Flush calls, failed or not
	maxGroup int // the most records a Flush was asked to make durable
}

func (p *poisonSink) Write(ctx context.Context, recs []record.Record) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range recs {
		if p.all || (p.bad != nil && p.bad(&recs[i])) {
			p.poisoned = true
			if p.onWrite {
				p.add(recs[:i])
				return fmt.Errorf("test sink: creating directory for offset %d: %w", recs[i].Origin.Offset, syscall.ENOTDIR)
			}
		}
	}
	p.add(recs)
	return nil
}

func (p *poisonSink) add(recs []record.Record) {
	for i := range recs {
		v, _ := recs[i].Value()
		p.group = append(p.group, bytes.Clone(v))
	}
	p.pending += len(recs)
}

func (p *poisonSink) Open(context.Context) error  { return nil }
func (p *poisonSink) Close(context.Context) error { return nil }

func (p *poisonSink) Flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushes++
	p.maxGroup = max(p.maxGroup, p.pending)
	if p.poisoned {
		return fmt.Errorf("test sink: a group with a marked record: %w", syscall.EACCES)
	}
	p.flushed = append(p.flushed, p.group...)
	p.group, p.pending = nil, 0
	return nil
}

func (p *poisonSink) Abort(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.group, p.pending, p.poisoned = nil, 0, false
	return nil
}

// Values returns what the sink made durable.
func (p *poisonSink) Values() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.flushed...)
}

func (p *poisonSink) counts() (flushes, maxGroup int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushes, p.maxGroup
}

// poisonSealer is a poisonSink that seals: a sealed group with a marked
// record fails its Persist, as a rename into a directory that cannot be
// written does.
type poisonSealer struct{ poisonSink }

func (p *poisonSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maxGroup = max(p.maxGroup, p.pending)
	g := &poisonGroup{p: p, vals: p.group, poisoned: p.poisoned}
	p.group, p.pending, p.poisoned = nil, 0, false
	return g, nil
}

type poisonGroup struct {
	p        *poisonSealer
	vals     [][]byte
	poisoned bool
}

func (g *poisonGroup) Persist(ctx context.Context) error {
	if g.poisoned {
		return fmt.Errorf("test sink: renaming a chunk with a marked record: %w", syscall.EACCES)
	}
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.p.flushed = append(g.p.flushed, g.vals...)
	return nil
}

func (g *poisonGroup) Discard(context.Context) error { return nil }

// deadIDs returns the ids of the records in dead letters, and each dead
// letter's error.
func deadIDs(t *testing.T, vals [][]byte) (map[int]int, []string) {
	t.Helper()
	ids := map[int]int{}
	var errs []string
	for _, v := range vals {
		var env struct {
			Value json.RawMessage `json:"value"`
			Error string          `json:"error"`
		}
		if err := json.Unmarshal(v, &env); err != nil {
			t.Fatalf("dead letter %s: %v", v, err)
		}
		ids[idOf(t, env.Value)]++
		errs = append(errs, env.Error)
	}
	return ids, errs
}

// checkIsolated fails t unless each marked record is in one dead letter and
// not written, and every other record is written once and not in a dead
// letter.
func checkIsolated(t *testing.T, n int, bad map[int]bool, written, dead map[int]int) {
	t.Helper()
	var deadGood, badWritten, missing, dups, deadTwice int
	var example []int
	for id := range n {
		switch {
		case bad[id] && written[id] > 0:
			badWritten++
		case bad[id] && dead[id] != 1:
			deadTwice++
		case !bad[id] && dead[id] > 0:
			deadGood++
			if len(example) < 5 {
				example = append(example, id)
			}
		case !bad[id] && written[id] == 0:
			missing++
		case !bad[id] && written[id] > 1:
			dups++
		}
	}
	if deadGood+badWritten+missing+dups+deadTwice > 0 {
		t.Errorf("of %d records, %d marked: %d good records dead-lettered (e.g. %v), %d good missing, %d good written twice or more, "+
			"%d marked written, %d marked not in exactly one dead letter; want exactly the marked records dead-lettered and every other written once",
			n, len(bad), deadGood, example, missing, dups, badWritten, deadTwice)
	}
}

// Guarantee: under on_failure dead_letter, a failure that belongs to one
// record sends that record alone to the dead letter sink: the group it
// failed is written again in parts until the records that fail are found,
// every other record is written once, and the source commits everything.
// Before, the whole group was dead-lettered with it (999 good records for
// one bad one).
func TestFailingRecordIsDeadLetteredAlone(t *testing.T) {
	const n = 3000
	bad := map[int]bool{137: true, 1000: true, 1001: true, 2999: true, 0: true}
	isBad := func(r *record.Record) bool {
		v, _ := r.Value()
		return bad[idOf(t, v)]
	}
	for _, tc := range []struct {
		name string
		sink func() (connector.Sink, *poisonSink)
	}{
		{name: "flush fails", sink: func() (connector.Sink, *poisonSink) {
			p := &poisonSink{bad: isBad}
			return p, p
		}},
		{name: "write fails", sink: func() (connector.Sink, *poisonSink) {
			p := &poisonSink{bad: isBad, onWrite: true}
			return p, p
		}},
		{name: "persist fails", sink: func() (connector.Sink, *poisonSink) {
			p := &poisonSealer{poisonSink{bad: isBad}}
			return p, &p.poisonSink
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := gen(t, n, 2, 100)
			dead := &conformance.MemSink{}
			sk, ps := tc.sink()
			sp := fastSpec(src,
				pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sk, OnFailure: pipeline.DeadLetter, DeadLetter: "dead",
					Batch: pipeline.BatchSettings{MaxRecords: 250}},
				pipeline.SinkSpec{Name: "dead", Sink: dead})
			var rep *pipeline.Report
			if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
				t.Fatal(err)
			}
			got := seenIDs(t, ps.Values())
			dl, errs := deadIDs(t, dead.Values())
			checkIsolated(t, n, bad, got, dl)
			for _, e := range errs {
				if e == "" {
					t.Errorf("a dead letter without its error")
				}
			}
			if c := src.Offsets().Get("gen/0") + src.Offsets().Get("gen/1"); c != n {
				t.Errorf("committed %d, want %d", c, n)
			}
			if _, most := ps.counts(); most > 250 {
				t.Errorf("a group of %d records was written, want at most batch.max_records 250 (also when failed groups are written again)", most)
			}
			if rep.Sinks[0].Failed != int64(len(bad)) {
				t.Errorf("the report counts %d failed records, want %d", rep.Sinks[0].Failed, len(bad))
			}
		})
	}
}

// Guarantee: a sink's groups never hold more than batch.max_records, also
// when a poll batch (here 1000 records, or 70 with a limit of 100) does not
// fit what is left of the group: the batch is split across groups. Before, a
// batch joined the group whole and the group was flushed after it, so a
// file source's 1000-record batches made groups of 1000 under a limit of
// 500.
func TestGroupsStayWithinMaxRecords(t *testing.T) {
	for _, tc := range []struct{ batch, max int }{{1000, 300}, {70, 100}, {100, 100}, {7, 3}} {
		t.Run(fmt.Sprintf("batch %d max %d", tc.batch, tc.max), func(t *testing.T) {
			const n = 5000
			src := gen(t, n, 3, tc.batch)
			sk := &poisonSink{}
			sp := fastSpec(src, pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sk, Batch: pipeline.BatchSettings{MaxRecords: tc.max}})
			if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
				t.Fatal(err)
			}
			if _, most := sk.counts(); most > tc.max {
				t.Errorf("a group of %d records was flushed, want at most batch.max_records %d", most, tc.max)
			}
			checkIsolated(t, n, nil, seenIDs(t, sk.Values()), nil)
			if c := src.Offsets().Get("gen/0") + src.Offsets().Get("gen/1") + src.Offsets().Get("gen/2"); c != n {
				t.Errorf("committed %d, want %d", c, n)
			}
		})
	}
}

// Guarantee: a sink where every record fails costs a bounded number of
// attempts per group, about four times log2 of its size after its retries,
// not one per record: once the parts keep failing whatever their size, the
// rest of the group goes to the dead letter as it is. Every record ends in
// the dead letter sink, and the source commits everything.
func TestEveryRecordFailingIsBounded(t *testing.T) {
	const n, maxRecords, batch = 2000, 100, 100
	src := gen(t, n, 1, batch)
	dead := &conformance.MemSink{}
	sk := &poisonSink{all: true}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sk, OnFailure: pipeline.DeadLetter, DeadLetter: "dead",
			Batch: pipeline.BatchSettings{MaxRecords: maxRecords}},
		pipeline.SinkSpec{Name: "dead", Sink: dead})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	dl, _ := deadIDs(t, dead.Values())
	lost := 0
	for id := range n {
		if dl[id] != 1 {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d records not in exactly one dead letter", lost, n)
	}
	if c := src.Offsets().Get("gen/0"); c != n {
		t.Errorf("committed %d, want %d", c, n)
	}
	flushes, _ := sk.counts()
	groups := n / maxRecords
	log2 := bits.Len(uint(maxRecords - 1))
	// Per group: its retries (2 in fastSpec), then the parts: 2*log2+1
	// parts of several records fail in a row before the rest is given up
	// on, and at most one single record more than that is tried alone (a
	// binary tree walked in order has visited at most one leaf more than
	// inner nodes).
	bound := groups * (2 + 4*log2 + 3)
	if flushes > bound {
		t.Errorf("%d flushes for %d groups of %d failing records, want at most %d (bounded, about 4·log2 per group)", flushes, groups, maxRecords, bound)
	}
	t.Logf("%d flushes for %d groups (bound %d; one per record would be %d)", flushes, groups, bound, groups*(2*maxRecords))
}

// Guarantee: the retries come first. A group that fails once and then
// succeeds (a transient failure) is written whole by the retry: nothing
// goes to the dead letter sink.
func TestTransientFailureIsRetriedNotSplit(t *testing.T) {
	const n = 2000
	src := gen(t, n, 1, 100)
	dead := &conformance.MemSink{}
	mem := &conformance.MemSink{}
	var mu sync.Mutex
	calls := 0
	sk := &conformance.FaultSink{Sink: mem, OnFlush: func() error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls%2 == 1 {
			return fmt.Errorf("test sink: %w", syscall.EIO)
		}
		return nil
	}}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sk, OnFailure: pipeline.DeadLetter, DeadLetter: "dead",
			Batch: pipeline.BatchSettings{MaxRecords: 200}},
		pipeline.SinkSpec{Name: "dead", Sink: dead})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if d := len(dead.Values()); d != 0 {
		t.Errorf("%d dead letters for failures a retry fixed, want 0", d)
	}
	checkIsolated(t, n, nil, seen(t, mem.Values()), nil)
}

// poisonKeeper is a keeperSink whose commit fails for any group holding a
// marked record.
type poisonKeeper struct {
	keeperSink
	bad func(id int) bool
}

func (k *poisonKeeper) Flush(ctx context.Context) error {
	for _, r := range k.group {
		if k.bad(idOfString(r.value)) {
			return fmt.Errorf("test database: a row with a marked record: %w", syscall.EACCES)
		}
	}
	return k.keeperSink.Flush(ctx)
}

func idOfString(v string) int {
	var r struct{ ID int }
	_ = json.Unmarshal([]byte(v), &r)
	return r.ID
}

// Guarantee: an exactly-once sink (a PositionKeeper) keeps its promise when
// a record is dead-lettered alone: every good record is stored exactly once,
// and no stored position passes a record that is neither stored nor durable
// in the dead letter sink (a replay would skip it as stored, and it would be
// lost if its dead letter failed).
func TestFailingRecordIsDeadLetteredAloneExactlyOnce(t *testing.T) {
	const n = 3000
	bad := map[int]bool{5: true, 1200: true, 1201: true, 2998: true}
	db := newKeeperDB()
	dead := &conformance.MemSink{}
	db.deadLettered = func(key string, off int64) bool {
		for _, v := range dead.Values() {
			var env struct {
				Source    string `json:"source"`
				Partition string `json:"partition"`
				Offset    int64  `json:"offset"`
			}
			if json.Unmarshal(v, &env) == nil && env.Source+"/"+env.Partition == key && env.Offset == off {
				return true
			}
		}
		return false
	}
	k := &poisonKeeper{keeperSink: keeperSink{db: db}, bad: func(id int) bool { return bad[id] }}
	src := gen(t, n, 2, 100)
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: k, OnFailure: pipeline.DeadLetter, DeadLetter: "dead",
			Batch: pipeline.BatchSettings{MaxRecords: 150}},
		pipeline.SinkSpec{Name: "dead", Sink: dead})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	dl, _ := deadIDs(t, dead.Values())
	checkIsolated(t, n, bad, db.check(t), dl)
	if c := src.Offsets().Get("gen/0") + src.Offsets().Get("gen/1"); c != n {
		t.Errorf("committed %d, want %d", c, n)
	}
}

// Guarantee: the watermark stays contiguous while a group is written in
// parts: the source never commits past a record that is neither written nor
// durable in the dead letter sink, also when the dead letter sink fails for
// a while (its failure rewinds the partition, and the record is found and
// dead-lettered again). In the end every record is in one of the two sinks.
func TestIsolatedRecordHoldsTheWatermark(t *testing.T) {
	const n = 3000
	bad := map[int]bool{333: true, 1700: true}
	deadMem := &conformance.MemSink{}
	var mu sync.Mutex
	deadFlushes := 0
	dead := &conformance.FaultSink{Sink: deadMem, OnFlush: func() error {
		mu.Lock()
		defer mu.Unlock()
		if deadFlushes++; deadFlushes <= 6 {
			return fmt.Errorf("test dead letter sink: %w", syscall.EIO)
		}
		return nil
	}}
	sk := &poisonSink{bad: func(r *record.Record) bool {
		v, _ := r.Value()
		return bad[idOf(t, v)]
	}}
	src := gen(t, n, 1, 100)
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sk, OnFailure: pipeline.DeadLetter, DeadLetter: "dead",
			Batch: pipeline.BatchSettings{MaxRecords: 250}},
		pipeline.SinkSpec{Name: "dead", Sink: dead})
	var broken []string
	err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithCommitted(func(string) {
		committed := src.Offsets().Get("gen/0")
		dl, _ := deadIDs(t, deadMem.Values())
		got := seen(t, sk.Values())
		for id := range int(min(committed, n)) {
			if dl[id] == 0 && got[id] == 0 && len(broken) < 5 {
				broken = append(broken, fmt.Sprintf("committed %d past record %d, which is in neither sink", committed, id))
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
	dl, _ := deadIDs(t, deadMem.Values())
	got := seen(t, sk.Values())
	for id := range n {
		if bad[id] && (dl[id] == 0 || got[id] > 0) {
			t.Errorf("marked record %d: %d dead letters, written %d times; want dead-lettered, not written", id, dl[id], got[id])
		}
		if !bad[id] && (got[id] == 0 || dl[id] > 0) {
			t.Errorf("record %d: written %d times, %d dead letters; want written", id, got[id], dl[id])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if deadFlushes <= 6 {
		t.Errorf("the dead letter sink flushed %d times: its failures were not reached", deadFlushes)
	}
}

// flakySealer is a poisonSink that seals, whose Seal fails every sealEvery
// calls and whose Persist fails every persistEvery: failures a retry fixes.
type flakySealer struct {
	poisonSink
	sealEvery, persistEvery int
	seals, persists         int
}

func (f *flakySealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seals++; f.seals%f.sealEvery == 0 {
		return nil, fmt.Errorf("test sink: seal: %w", syscall.EIO)
	}
	f.maxGroup = max(f.maxGroup, f.pending)
	g := &flakyGroup{f: f, vals: f.group}
	f.group, f.pending = nil, 0
	return g, nil
}

type flakyGroup struct {
	f    *flakySealer
	vals [][]byte
}

func (g *flakyGroup) Persist(context.Context) error {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if g.f.persists++; g.f.persists%g.f.persistEvery == 0 {
		return fmt.Errorf("test sink: persist: %w", syscall.EIO)
	}
	g.f.flushed = append(g.f.flushed, g.vals...)
	return nil
}

func (g *flakyGroup) Discard(context.Context) error { return nil }

// Guarantee: failed Seals and Persists, with several sealed groups out, are
// retried group by group: every record is written, none is lost, and no
// group written, first time or again, holds more than batch.max_records.
func TestFailedSealedGroupsAreRetriedOneByOne(t *testing.T) {
	const n, maxRecords = 6000, 120
	src := gen(t, n, 3, 50)
	sk := &flakySealer{sealEvery: 7, persistEvery: 5}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sk,
		Batch: pipeline.BatchSettings{MaxRecords: maxRecords, Overlap: 3}})
	sp.Sinks[0].Retry.MaxAttempts = 3
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	got := seenIDs(t, sk.Values())
	missing := 0
	for id := range n {
		if got[id] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d records never written", missing, n)
	}
	if _, most := sk.counts(); most > maxRecords {
		t.Errorf("a group of %d records was written, want at most batch.max_records %d", most, maxRecords)
	}
	if c := src.Offsets().Get("gen/0") + src.Offsets().Get("gen/1") + src.Offsets().Get("gen/2"); c != n {
		t.Errorf("committed %d, want %d", c, n)
	}
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.seals < 7 || sk.persists < 5 {
		t.Errorf("%d seals and %d persists: the failures were not reached", sk.seals, sk.persists)
	}
}
