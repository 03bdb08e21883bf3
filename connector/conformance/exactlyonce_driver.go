package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// The exactly-once suite's fake runtime: it hands a sink records of a few
// source partitions in groups and gives each group its positions, keeping
// the runtime's promises (connector.PositionKeeper) without package
// pipeline, so that what the suite checks is the sink's side alone.

// eosKey names a source partition.
type eosKey struct{ source, partition string }

func (k eosKey) String() string { return k.source + ":" + k.partition }

// eosPart is one source partition of a plan: the offsets of its records, in
// order, with gaps where a filter would have dropped records, and the
// position after its last record.
type eosPart struct {
	key  eosKey
	offs []int64
	end  connector.Position
}

// eosPlan is the input the suite writes, and the padding of each record.
type eosPlan struct {
	parts []eosPart
	rng   *rand.Rand
}

// newEOSPlan returns three partitions of two sources: a/0 with 30 records
// at 0..29, a/1 with a record dropped every four, and b/0 starting at 100
// with one dropped every five (positions say nothing of where a partition
// starts).
func newEOSPlan(seed int64) *eosPlan {
	p := &eosPlan{rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	add := func(src, part string, from, to int64, keep func(int64) bool) {
		ep := eosPart{key: eosKey{src, part}, end: connector.Position(to)}
		for o := from; o < to; o++ {
			if keep(o) {
				ep.offs = append(ep.offs, o)
			}
		}
		p.parts = append(p.parts, ep)
	}
	add("a", "a/0", 0, 30, func(int64) bool { return true })
	add("a", "a/1", 0, 30, func(o int64) bool { return o%4 != 3 })
	add("b", "b/0", 100, 130, func(o int64) bool { return o%5 != 0 })
	return p
}

// ends returns the positions after every record.
func (p *eosPlan) ends() map[eosKey]connector.Position {
	m := map[eosKey]connector.Position{}
	for _, ep := range p.parts {
		m[ep.key] = ep.end
	}
	return m
}

// eosValue is a record's value: its own origin, so that a reader of the
// destination can tell which record it is, and padding.
type eosValue struct {
	S   string `json:"s"`
	P   string `json:"p"`
	O   int64  `json:"o"`
	Pad string `json:"pad"`
}

func makeRecord(k eosKey, off int64, pad int) record.Record {
	v, _ := json.Marshal(eosValue{S: k.source, P: k.partition, O: off, Pad: strings.Repeat("x", pad)})
	r := record.New(v)
	r.Origin = record.Origin{Source: k.source, Partition: k.partition, Offset: off}
	return r
}

// eosGroup is a group the driver wrote: its records by partition and the
// positions it was given.
type eosGroup struct {
	recs map[eosKey][]record.Record
	pos  []connector.GroupPosition
}

// driver drives one instance of the sink under test.
type driver struct {
	t      *testing.T
	h      ExactlyOnceHarness
	s      connector.Sink
	k      connector.PositionKeeper
	sealer connector.Sealer
	p      *eosPlan
	// next is, per partition, where the next group starts; want the
	// positions the last durable group left; pending the positions of the
	// groups written or sealed and not yet durable, in order.
	next    map[eosKey]connector.Position
	want    map[eosKey]connector.Position
	pending []map[eosKey]connector.Position
	opened  bool
}

func newDriver(t *testing.T, h ExactlyOnceHarness, s connector.Sink, p *eosPlan) *driver {
	t.Helper()
	k, ok := s.(connector.PositionKeeper)
	if !ok {
		t.Fatalf("conformance: %T is not a connector.PositionKeeper", s)
	}
	sl, _ := s.(connector.Sealer)
	d := &driver{t: t, h: h, s: s, k: k, sealer: sl, p: p, next: map[eosKey]connector.Position{}, want: map[eosKey]connector.Position{}}
	for _, ep := range p.parts {
		if len(ep.offs) > 0 {
			d.next[ep.key] = connector.Position(ep.offs[0])
		}
	}
	return d
}

func (d *driver) open(ctx context.Context) {
	d.t.Helper()
	if err := d.s.Open(ctx); err != nil {
		d.t.Fatalf("Open: %v", err)
	}
	d.opened = true
	// A new instance is handed records from its stored positions on, as
	// the runtime does when the partitions are assigned.
	d.resume(d.stored(ctx))
}

func (d *driver) close(ctx context.Context) {
	d.t.Helper()
	if !d.opened {
		return
	}
	d.opened = false
	if err := d.s.Close(ctx); err != nil {
		d.t.Errorf("Close: %v", err)
	}
}

// resume makes the next groups start at the positions given (and at the
// first record of a partition with none).
func (d *driver) resume(stored map[eosKey]connector.Position) {
	for _, ep := range d.p.parts {
		if pos, ok := stored[ep.key]; ok {
			d.next[ep.key] = pos
		}
	}
	d.want = stored
}

// stored asks the sink for the positions of every partition of the plan,
// one call per source as the runtime makes them.
func (d *driver) stored(ctx context.Context) map[eosKey]connector.Position {
	d.t.Helper()
	bySource := map[string][]string{}
	var sources []string
	for _, ep := range d.p.parts {
		if _, ok := bySource[ep.key.source]; !ok {
			sources = append(sources, ep.key.source)
		}
		bySource[ep.key.source] = append(bySource[ep.key.source], ep.key.partition)
	}
	out := map[eosKey]connector.Position{}
	for _, src := range sources {
		got, err := d.k.StoredPositions(ctx, src, bySource[src])
		if err != nil {
			d.t.Fatalf("StoredPositions(%s): %v", src, err)
		}
		for part, pos := range got {
			if !slices.Contains(bySource[src], part) {
				d.t.Fatalf("StoredPositions(%s, %v) returned partition %s, which it was not asked for", src, bySource[src], part)
			}
			out[eosKey{src, part}] = pos
		}
	}
	return out
}

func (d *driver) done() bool {
	for _, ep := range d.p.parts {
		if d.next[ep.key] < ep.end {
			return false
		}
	}
	return true
}

// group writes the next group: n records of each partition (1 to 4 at
// random for n == 0) that has records left, a Write per partition's part
// like the runtime's chunks, then its positions.
func (d *driver) group(ctx context.Context, n int) *eosGroup {
	d.t.Helper()
	g := &eosGroup{recs: map[eosKey][]record.Record{}}
	for _, ep := range d.p.parts {
		from := d.next[ep.key]
		i, _ := slices.BinarySearch(ep.offs, int64(from))
		if i == len(ep.offs) {
			continue
		}
		take := n
		if take == 0 {
			take = 1 + d.p.rng.IntN(4)
		}
		j := min(i+take, len(ep.offs))
		for _, o := range ep.offs[i:j] {
			g.recs[ep.key] = append(g.recs[ep.key], makeRecord(ep.key, o, d.p.rng.IntN(200)))
		}
		// The position reaches the next record, past any dropped between.
		pos := ep.end
		if j < len(ep.offs) {
			pos = connector.Position(ep.offs[j])
		}
		g.pos = append(g.pos, connector.GroupPosition{Source: ep.key.source, Partition: ep.key.partition, Position: pos})
		d.next[ep.key] = pos
	}
	d.writeGroup(ctx, g)
	return g
}

// writeGroup writes g's records and gives its positions, as the runtime
// does for a group and again for a retry after Abort.
func (d *driver) writeGroup(ctx context.Context, g *eosGroup) {
	d.t.Helper()
	for _, ep := range d.p.parts {
		recs := g.recs[ep.key]
		if len(recs) == 0 {
			continue
		}
		// A copy per Write: the runtime's slices are its own.
		if err := d.s.Write(ctx, slices.Clone(recs)); err != nil {
			d.t.Fatalf("Write: %v", err)
		}
	}
	// The slice is the runtime's: it is overwritten once the call returns.
	ps := slices.Clone(g.pos)
	d.k.GroupPositions(ps)
	for i := range ps {
		ps[i] = connector.GroupPosition{Source: "reused", Partition: "reused", Position: -1}
	}
	m := map[eosKey]connector.Position{}
	for _, gp := range g.pos {
		m[eosKey{gp.Source, gp.Partition}] = gp.Position
	}
	d.pending = append(d.pending, m)
}

// durable notes that the oldest pending group is durable.
func (d *driver) durable() {
	m := d.pending[0]
	d.pending = d.pending[1:]
	want := map[eosKey]connector.Position{}
	for k, v := range d.want {
		want[k] = v
	}
	for k, v := range m {
		want[k] = max(want[k], v)
	}
	d.want = want
}

// seal seals the current group (the sink must be a Sealer).
func (d *driver) seal(ctx context.Context) (connector.SealedGroup, error) {
	g, err := d.sealer.Seal(ctx)
	if err != nil {
		return nil, fmt.Errorf("Seal: %w", err)
	}
	return g, nil
}

// flush flushes the current group.
func (d *driver) flush(ctx context.Context) error {
	if err := d.s.Flush(ctx); err != nil {
		return fmt.Errorf("Flush: %w", err)
	}
	d.durable()
	return nil
}

// commit makes the current group durable the way the runtime does: Seal and
// a Persist on another goroutine for a Sealer (Discard after a failed one),
// Flush otherwise.
func (d *driver) commit(ctx context.Context) error {
	if d.sealer == nil {
		return d.flush(ctx)
	}
	g, err := d.seal(ctx)
	if err != nil {
		return err
	}
	ch := make(chan error, 1)
	go func() { ch <- g.Persist(ctx) }()
	if err := <-ch; err != nil {
		if derr := g.Discard(ctx); derr != nil {
			d.t.Logf("Discard after a failed Persist: %v", derr)
		}
		return fmt.Errorf("Persist: %w", err)
	}
	d.durable()
	return nil
}

// agree checks that the reported positions and the records held agree: per
// partition, exactly the plan's records below the position, each once. With
// want non-nil, the positions must be want. It returns the positions.
func (d *driver) agree(ctx context.Context, when string, want map[eosKey]connector.Position) map[eosKey]connector.Position {
	d.t.Helper()
	got := d.stored(ctx)
	if want != nil && !equalPositions(got, want) {
		d.t.Fatalf("%s: stored positions %v, want %v", when, fmtPositions(got), fmtPositions(want))
	}
	held := parseHeld(d.t, d.h.Held(d.t, d.s))
	if dups := held.dups(); len(dups) > 0 {
		d.t.Fatalf("%s: records held twice: %s", when, strings.Join(dups, ", "))
	}
	for _, ep := range d.p.parts {
		pos := got[ep.key]
		var missing, extra []string
		for _, o := range ep.offs {
			n := held.count(ep.key, o)
			switch {
			case int64(o) < int64(pos) && n == 0:
				missing = append(missing, fmt.Sprint(o))
			case int64(o) >= int64(pos) && n > 0:
				extra = append(extra, fmt.Sprint(o))
			}
		}
		if len(missing) > 0 || len(extra) > 0 {
			d.t.Fatalf("%s: %s is stored at %d, but below it the destination lacks offsets [%s] and at or past it holds offsets [%s]: what the sink reports and what it holds must agree (a group and its positions are stored in one step)",
				when, ep.key, pos, strings.Join(missing, " "), strings.Join(extra, " "))
		}
	}
	if n := held.foreign; n > 0 {
		d.t.Fatalf("%s: the destination holds %d values that are not records the suite wrote", when, n)
	}
	return got
}

func fmtPositions(m map[eosKey]connector.Position) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// heldSet counts the records a destination holds, by partition and offset.
type heldSet struct {
	n       map[eosKey]map[int64]int
	foreign int
}

func parseHeld(t *testing.T, vals [][]byte) *heldSet {
	t.Helper()
	h := &heldSet{n: map[eosKey]map[int64]int{}}
	for _, v := range vals {
		var ev eosValue
		if err := json.Unmarshal(v, &ev); err != nil || ev.S == "" {
			h.foreign++
			continue
		}
		k := eosKey{ev.S, ev.P}
		if h.n[k] == nil {
			h.n[k] = map[int64]int{}
		}
		h.n[k][ev.O]++
	}
	return h
}

func (h *heldSet) count(k eosKey, o int64) int { return h.n[k][o] }

func (h *heldSet) dups() []string {
	var out []string
	for k, m := range h.n {
		for o, n := range m {
			if n > 1 {
				out = append(out, fmt.Sprintf("%s@%d (%d times)", k, o, n))
			}
		}
	}
	slices.Sort(out)
	return out
}
