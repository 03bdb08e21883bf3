package conformance_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/record"
)

// eosMem is an in-memory exactly-once sink: a commit appends the group's
// values and stores its positions in one step under the destination's lock,
// leaving out records that positions already stored cover (its fence), as
// a database sink does in one transaction. Its destination outlives it. mode
// breaks it in one way (see eosBroken); sealing makes it a Sealer.
type eosMem struct {
	mode    string
	dest    *eosDest
	cached  map[[2]string]connector.Position // for mode cached-positions
	group   []record.Record
	gpos    []connector.GroupPosition
	step    func(string)
	stepsMu sync.Mutex
}

type eosDest struct {
	mu   sync.Mutex
	vals [][]byte
	pos  map[[2]string]connector.Position
}

func (k *eosMem) Open(ctx context.Context) error {
	if k.mode == "cached-positions" {
		k.dest.mu.Lock()
		k.cached = map[[2]string]connector.Position{}
		for p, v := range k.dest.pos {
			k.cached[p] = v
		}
		k.dest.mu.Unlock()
	}
	return nil
}

func (k *eosMem) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		r := recs[i]
		v, _ := r.Value()
		r = record.New(slices.Clone(v))
		r.Origin = recs[i].Origin
		k.group = append(k.group, r)
	}
	return nil
}

func (k *eosMem) GroupPositions(ps []connector.GroupPosition) {
	k.gpos = append(k.gpos[:0], ps...)
}

func (k *eosMem) at(name string) {
	k.stepsMu.Lock()
	step := k.step
	k.stepsMu.Unlock()
	if step != nil && k.mode != "no-steps" {
		step(name)
	}
}

// commit stores recs and ps the way mode says, calling the crash points.
func (k *eosMem) commit(recs []record.Record, ps []connector.GroupPosition) error {
	d := k.dest
	// The fence compares with the positions stored before this commit.
	d.mu.Lock()
	base := maps.Clone(d.pos)
	d.mu.Unlock()
	data := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.dataLocked(k.mode, recs, base)
	}
	positions := func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.positionsLocked(k.mode, ps)
	}
	k.at("prepared")
	switch k.mode {
	case "positions-after-data":
		data()
		k.at("data")
		positions()
	case "positions-before-data":
		positions()
		k.at("positions")
		data()
	case "partitions-apart", "own-positions":
		// Each partition's records and position in one step of its own,
		// as the S3 sink's position object per partition: right with
		// PartitionsApart, and the suite must say so without it.
		for _, p := range ps {
			var part []record.Record
			for _, r := range recs {
				if r.Origin.Source == p.Source && r.Origin.Partition == p.Partition {
					part = append(part, r)
				}
			}
			if k.mode == "own-positions" && len(part) > 0 {
				// Broken: the position after its last record, not the one
				// given, which may lie past records a filter dropped.
				p.Position = connector.Position(part[len(part)-1].Origin.Offset + 1)
			}
			d.mu.Lock()
			d.dataLocked(k.mode, part, d.pos)
			d.positionsLocked(k.mode, []connector.GroupPosition{p})
			d.mu.Unlock()
			k.at("partition")
		}
	default:
		// One step: a reader sees both or neither (the lock is held over
		// both, as a transaction would be).
		d.mu.Lock()
		d.dataLocked(k.mode, recs, d.pos)
		d.positionsLocked(k.mode, ps)
		d.mu.Unlock()
	}
	if k.cached != nil {
		// The broken mode remembers what it stored itself, and nothing of
		// what other instances stored after it opened.
		for _, p := range ps {
			key := [2]string{p.Source, p.Partition}
			k.cached[key] = max(k.cached[key], p.Position)
		}
	}
	k.at("committed")
	return nil
}

// dataLocked appends the values of recs, leaving out those that the stored
// positions base cover (the fence) unless mode says otherwise.
func (d *eosDest) dataLocked(mode string, recs []record.Record, base map[[2]string]connector.Position) {
	for i := range recs {
		o := recs[i].Origin
		if mode != "no-fence" && o.Offset < int64(base[[2]string{o.Source, o.Partition}]) {
			continue // held already: another writer's positions cover it
		}
		v, _ := recs[i].Value()
		d.vals = append(d.vals, v)
	}
}

// positionsLocked stores ps, never lowering one unless mode says otherwise.
func (d *eosDest) positionsLocked(mode string, ps []connector.GroupPosition) {
	for _, p := range ps {
		key := [2]string{p.Source, p.Partition}
		if mode == "lowers-positions" || p.Position > d.pos[key] {
			d.pos[key] = p.Position
		}
	}
}

func (k *eosMem) Flush(ctx context.Context) error {
	recs, ps := k.group, slices.Clone(k.gpos)
	k.group, k.gpos = nil, k.gpos[:0]
	return k.commit(recs, ps)
}

func (k *eosMem) Abort(ctx context.Context) error {
	k.group, k.gpos = nil, k.gpos[:0]
	return nil
}

func (k *eosMem) Close(ctx context.Context) error { return nil }

func (k *eosMem) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	k.dest.mu.Lock()
	defer k.dest.mu.Unlock()
	from := k.dest.pos
	if k.cached != nil {
		from = k.cached
	}
	out := map[string]connector.Position{}
	for _, p := range partitions {
		if pos, ok := from[[2]string{source, p}]; ok {
			out[p] = pos
		}
	}
	return out, nil
}

func (k *eosMem) held() [][]byte {
	k.dest.mu.Lock()
	defer k.dest.mu.Unlock()
	return slices.Clone(k.dest.vals)
}

// eosMemSealer is eosMem as a Sealer: Seal hands the group over and its
// Persist commits it.
type eosMemSealer struct{ eosMem }

type eosMemGroup struct {
	k    *eosMemSealer
	recs []record.Record
	ps   []connector.GroupPosition
}

func (k *eosMemSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g := &eosMemGroup{k: k, recs: k.group, ps: slices.Clone(k.gpos)}
	k.group, k.gpos = nil, k.gpos[:0]
	if k.mode == "commits-at-seal" {
		// Broken: the group is durable before its Persist, so a group
		// sealed behind a Persist that crashes is there too.
		k.dest.mu.Lock()
		k.dest.dataLocked(k.mode, g.recs, k.dest.pos)
		k.dest.positionsLocked(k.mode, g.ps)
		k.dest.mu.Unlock()
		g.recs, g.ps = nil, nil
	}
	return g, nil
}

func (g *eosMemGroup) Persist(ctx context.Context) error { return g.k.commit(g.recs, g.ps) }
func (g *eosMemGroup) Discard(ctx context.Context) error { return nil }

// memOf returns the eosMem of either kind.
func memOf(s connector.Sink) *eosMem {
	if sl, ok := s.(*eosMemSealer); ok {
		return &sl.eosMem
	}
	return s.(*eosMem)
}

func eosHarness(mode string, sealing bool) conformance.ExactlyOnceHarness {
	build := func(dest *eosDest) connector.Sink {
		if sealing {
			return &eosMemSealer{eosMem: eosMem{mode: mode, dest: dest}}
		}
		return &eosMem{mode: mode, dest: dest}
	}
	return conformance.ExactlyOnceHarness{
		New: func(t *testing.T) connector.Sink {
			return build(&eosDest{pos: map[[2]string]connector.Position{}})
		},
		Reopen:  func(t *testing.T, s connector.Sink) connector.Sink { return build(memOf(s).dest) },
		Another: func(t *testing.T, s connector.Sink) connector.Sink { return build(memOf(s).dest) },
		Held:    func(t *testing.T, s connector.Sink) [][]byte { return memOf(s).held() },
		CrashPoints: func(s connector.Sink, step func(string)) {
			k := memOf(s)
			k.stepsMu.Lock()
			k.step = step
			k.stepsMu.Unlock()
		},
		PartitionsApart: mode == "own-positions",
	}
}

// A correct in-memory exactly-once sink passes the suite, flushing and
// sealing.
func TestExactlyOnceMemConforms(t *testing.T) {
	t.Run("Flush", func(t *testing.T) { conformance.TestExactlyOnce(t, eosHarness("", false)) })
	t.Run("Sealer", func(t *testing.T) { conformance.TestExactlyOnce(t, eosHarness("", true)) })
	for _, sealing := range []bool{false, true} {
		t.Run(map[bool]string{false: "Flush", true: "Sealer"}[sealing]+"/PartitionsApart", func(t *testing.T) {
			h := eosHarness("partitions-apart", sealing)
			h.PartitionsApart = true
			conformance.TestExactlyOnce(t, h)
		})
	}
}

// eosBroken are the in-memory sink's broken modes and what the suite must
// say of each.
var eosBroken = []struct {
	mode        string
	sealingOnly bool
	run         conformance.BrokenRun
}{
	{"positions-after-data", false, conformance.BrokenRun{
		// A crash between the two steps leaves records the positions do
		// not cover: the replay writes them twice.
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/data"},
		Says:  "what the sink reports and what it holds must agree"}},
	{"positions-before-data", false, conformance.BrokenRun{
		// A crash between them leaves positions past records that are not
		// there: they are never written.
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/positions"},
		Says:  "the destination lacks offsets"}},
	{"commits-at-seal", true, conformance.BrokenRun{
		// The group sealed behind the crashed Persist is durable: the
		// positions are past the group being committed.
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/prepared", "CrashAtEveryStep/committed"},
		Says:  "and nothing in between"}},
	{"partitions-apart", false, conformance.BrokenRun{
		// Committed partition by partition without PartitionsApart: a
		// crash between two partitions leaves a part of the group.
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/partition", "CrashAtEveryStep/partition#2"},
		Says:  "and nothing in between: a group and its positions are stored in one step"}},
	{"own-positions", false, conformance.BrokenRun{
		// Committed partition by partition, with PartitionsApart, but
		// each partition at the position after its last record rather
		// than the one given: short of the records a filter dropped.
		Fails: []string{"StoredPositionsMatchWhatIsHeld", "AbortedGroupStoresNothing", "CrashAtEveryStep",
			"CrashAtEveryStep/prepared", "CrashAtEveryStep/partition", "CrashAtEveryStep/partition#2", "CrashAtEveryStep/partition#3",
			"CrashAtEveryStep/committed", "CrashAtEveryStep/after-commit"},
		Says: "a partition's share of a group and its position are stored in one step"}},
	{"no-steps", false, conformance.BrokenRun{
		Fails: []string{"CrashAtEveryStep"},
		Says:  "the sink reported no commit steps"}},
	{"no-fence", false, conformance.BrokenRun{
		Fails: []string{"FenceOfConcurrentWriters", "FenceOfConcurrentWriters/ZombieCommitsLast", "FenceOfConcurrentWriters/ZombieCommitsFirst"},
		Says:  "a group must not become durable with records that another instance's stored positions cover"}},
	{"cached-positions", false, conformance.BrokenRun{
		Fails: []string{"StoredPositionsReadTheDestination"},
		Says:  "StoredPositions must read the destination"}},
	{"lowers-positions", false, conformance.BrokenRun{
		Fails: []string{"FenceOfConcurrentWriters", "FenceOfConcurrentWriters/ZombieCommitsLast"},
		Says:  "want a/0 at 10 at least"}},
}

// TestExactlyOnceBrokenMem runs the suite against a broken in-memory sink;
// it fails by design, so it runs only in the child processes of
// TestExactlyOnceCatchesBrokenSinks.
func TestExactlyOnceBrokenMem(t *testing.T) {
	mode := os.Getenv("WEIR_CONFORMANCE_EOS_BROKEN")
	if mode == "" {
		t.Skip("run by TestExactlyOnceCatchesBrokenSinks")
	}
	conformance.TestExactlyOnce(t, eosHarness(mode, os.Getenv("WEIR_CONFORMANCE_EOS_SEALING") == "1"))
}

// Each check of the exactly-once suite fails on a sink broken in the way it
// is for, and only that check: flushing and sealing.
func TestExactlyOnceCatchesBrokenSinks(t *testing.T) {
	for _, c := range eosBroken {
		for _, sealing := range []string{"0", "1"} {
			if c.sealingOnly && sealing == "0" {
				continue
			}
			t.Run(c.mode+map[string]string{"0": "", "1": "/sealing"}[sealing], func(t *testing.T) {
				r := c.run
				r.Test = "TestExactlyOnceBrokenMem"
				r.Env = []string{"WEIR_CONFORMANCE_EOS_BROKEN=" + c.mode, "WEIR_CONFORMANCE_EOS_SEALING=" + sealing}
				conformance.ExpectBroken(t, r)
			})
		}
	}
}
