package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// fakeHost is a connector.Host that numbers partitions as the runtime does:
// from 0, in the order they are first assigned, one id per name for good. It
// records the Revoke and Lost calls, and calls onRevoke inside Revoke, where
// the runtime would make the partitions' final commit.
type fakeHost struct {
	ids      map[string]checkpoint.Partition
	owned    map[checkpoint.Partition]bool
	revokes  [][]checkpoint.Partition
	losts    [][]checkpoint.Partition
	misuse   []string
	onRevoke func(ps []checkpoint.Partition)
}

func newFakeHost() *fakeHost {
	return &fakeHost{ids: map[string]checkpoint.Partition{}, owned: map[checkpoint.Partition]bool{}}
}

func (h *fakeHost) Assign(name string, _ checkpoint.Position) checkpoint.Partition {
	id, ok := h.ids[name]
	if !ok {
		id = checkpoint.Partition(len(h.ids))
		h.ids[name] = id
	}
	h.owned[id] = true
	return id
}

func (h *fakeHost) give(op string, ps []checkpoint.Partition) {
	for _, p := range ps {
		if !h.owned[p] {
			h.misuse = append(h.misuse, fmt.Sprintf("%s of partition %d, not held", op, p))
		}
		delete(h.owned, p)
	}
}

func (h *fakeHost) Revoke(_ context.Context, ps ...checkpoint.Partition) error {
	h.revokes = append(h.revokes, slices.Clone(ps))
	if h.onRevoke != nil {
		h.onRevoke(ps)
	}
	h.give("Revoke", ps)
	return nil
}

func (h *fakeHost) Lost(ps ...checkpoint.Partition) {
	h.losts = append(h.losts, slices.Clone(ps))
	h.give("Lost", ps)
}

func (*fakeHost) Skip(string, int64)   {}
func (*fakeHost) Unread(string, int64) {}
func (*fakeHost) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// bookModel is the naive reference: the partitions the member holds, whether
// each was handed out, and the next offset to hand out.
type bookModel struct {
	src   *Source
	host  *fakeHost
	held  map[int32]*heldPart
	parts int32
}

type heldPart struct {
	handed bool
	next   int64
}

func (m *bookModel) name(p int32) string { return fmt.Sprintf("t/%d", p) }

// handedIDs returns the runtime ids of the held partitions among ps that
// were handed out, sorted.
func (m *bookModel) handedIDs(ps []int32) []checkpoint.Partition {
	var out []checkpoint.Partition
	for _, p := range ps {
		if h := m.held[p]; h != nil && h.handed {
			out = append(out, m.host.ids[m.name(p)])
		}
	}
	slices.Sort(out)
	return out
}

// drawHeld draws a non-empty set of held partitions, or skips the action.
func (m *bookModel) drawHeld(t *rapid.T) []int32 {
	keys := slices.Sorted(maps.Keys(m.held))
	if len(keys) == 0 {
		t.Skip("nothing held")
	}
	return rapid.SliceOfNDistinct(rapid.SampledFrom(keys), 1, len(keys), func(p int32) int32 { return p }).Draw(t, "ps")
}

func (m *bookModel) assign(t *rapid.T) {
	p := rapid.Int32Range(0, m.parts-1).Draw(t, "p")
	start := rapid.Int64Range(0, 5).Draw(t, "start")
	// A partition still held is assigned again only by an eager rebalance
	// that did not revoke it first; the source must cope with that too.
	_, _ = m.src.adjustOffsets(context.Background(), map[string]map[int32]kgo.Offset{"t": {p: kgo.NewOffset().At(start)}})
	m.held[p] = &heldPart{next: start}
}

func (m *bookModel) handOut(t *rapid.T) {
	ps := m.drawHeld(t)
	p := ps[0]
	h := m.held[p]
	n := rapid.Int64Range(1, 3).Draw(t, "n")
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "t", Partition: p, Offset: h.next + int64(i)}
	}
	m.src.queue = append(m.src.queue, fetched{tp{"t", p}, recs})
	var b connector.Batch
	if !m.src.pop(&b) {
		t.Fatalf("pop of %s returned nothing", m.name(p))
	}
	if want := m.host.ids[m.name(p)]; b.Partition != want || b.End != checkpoint.Position(h.next+n) {
		t.Fatalf("batch of %s: partition %d end %d, want %d and %d", m.name(p), b.Partition, b.End, want, h.next+n)
	}
	h.handed, h.next = true, h.next+n
}

func (m *bookModel) revoke(t *rapid.T) {
	ps := m.drawHeld(t)
	want := m.handedIDs(ps)
	calls := len(m.host.revokes)
	m.host.onRevoke = func(ids []checkpoint.Partition) {
		// Inside Revoke the runtime commits the final watermarks: the
		// commit must reach every partition being revoked.
		var cs []connector.Commit
		for _, p := range ps {
			if h := m.held[p]; h.handed {
				cs = append(cs, connector.Commit{Partition: m.host.ids[m.name(p)], Position: checkpoint.Position(h.next)})
			}
		}
		m.checkPlan(t, cs, "the final commit of a revoke")
	}
	m.src.onRevoked(context.Background(), nil, map[string][]int32{"t": ps})
	m.host.onRevoke = nil
	checkCall(t, "Revoke", m.host.revokes[calls:], want)
	for _, p := range ps {
		delete(m.held, p)
	}
}

func (m *bookModel) lose(t *rapid.T) {
	ps := m.drawHeld(t)
	want := m.handedIDs(ps)
	calls := len(m.host.losts)
	m.src.onLost(context.Background(), nil, map[string][]int32{"t": ps})
	checkCall(t, "Lost", m.host.losts[calls:], want)
	for _, p := range ps {
		delete(m.held, p)
	}
}

// checkCall checks that a rebalance made one Host call naming exactly want,
// or none when want is empty.
func checkCall(t *rapid.T, op string, calls [][]checkpoint.Partition, want []checkpoint.Partition) {
	if len(want) == 0 {
		if len(calls) != 0 {
			t.Fatalf("%s calls %v for partitions never handed out", op, calls)
		}
		return
	}
	if len(calls) != 1 {
		t.Fatalf("%d %s calls %v, want one naming %v", len(calls), op, calls, want)
	}
	if got := slices.Sorted(slices.Values(calls[0])); !slices.Equal(got, want) {
		t.Fatalf("%s named %v, want %v", op, got, want)
	}
}

// checkPlan checks that a Commit of cs would send every one of them, with
// no error.
func (m *bookModel) checkPlan(t *rapid.T, cs []connector.Commit, what string) {
	m.src.mu.Lock()
	plan := m.src.planCommit(cs)
	m.src.mu.Unlock()
	if len(plan.errs) != 0 {
		t.Fatalf("%s: %v", what, plan.errs)
	}
	for _, c := range cs {
		found := false
		for t2, x := range plan.sent {
			if x.st.id.p == c.Partition && int64(c.Position) == x.pos && plan.offsets[t2.topic][t2.part].Offset == x.pos {
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: partition %d@%d is not sent; plan %v", what, c.Partition, c.Position, plan.offsets)
		}
	}
}

// check is the invariant: a commit reaches every partition the member holds
// and handed out, and a commit of any other partition the runtime knows is
// an error, never skipped silently.
func (m *bookModel) check(t *rapid.T) {
	var cs []connector.Commit
	holds := map[checkpoint.Partition]bool{}
	for p, h := range m.held {
		if h.handed {
			id := m.host.ids[m.name(p)]
			holds[id] = true
			cs = append(cs, connector.Commit{Partition: id, Position: checkpoint.Position(h.next)})
		}
	}
	m.checkPlan(t, cs, "a commit of every partition held")
	for name, id := range m.host.ids {
		if holds[id] {
			continue
		}
		m.src.mu.Lock()
		plan := m.src.planCommit([]connector.Commit{{Partition: id, Position: 1}})
		m.src.mu.Unlock()
		if len(plan.errs) != 1 || len(plan.sent) != 0 {
			t.Fatalf("a commit of %s (partition %d), not held, gave errors %v and sent %v", name, id, plan.errs, plan.offsets)
		}
	}
	if len(m.host.misuse) != 0 {
		t.Fatalf("Host misused: %v", m.host.misuse)
	}
}

// Any sequence of assignments, hand-outs, revokes and losses keeps the
// source's bookkeeping right: a commit reaches every partition the member
// holds (including the one the runtime numbered 0, whatever else was
// revoked), the final commit inside a revoke reaches the partitions revoked,
// Revoke and Lost are called once per rebalance with exactly the partitions
// handed out, and a commit of a partition not held is an error.
func TestBookkeepingSequences(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		host := newFakeHost()
		src := &Source{name: "in", parts: newOwned(), seeks: map[tp]int64{}, host: host, log: host.Logger()}
		m := &bookModel{src: src, host: host, held: map[int32]*heldPart{}, parts: rapid.Int32Range(1, 6).Draw(t, "partitions")}
		t.Repeat(map[string]func(*rapid.T){
			"assign":  m.assign,
			"handOut": m.handOut,
			"revoke":  m.revoke,
			"lose":    m.lose,
			"":        m.check,
		})
	})
}

// The sequence of issue 18, spelled out: t/0 and t/1 are handed out (ids 0
// and 1), t/2 is assigned but never handed out, and is revoked. t/0 must
// still commit and seek.
func TestRevokeOfUnreadPartitionKeepsPartitionZero(t *testing.T) {
	host := newFakeHost()
	src := &Source{name: "in", parts: newOwned(), seeks: map[tp]int64{}, host: host, log: host.Logger()}
	_, _ = src.adjustOffsets(context.Background(), map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0), 2: kgo.NewOffset().At(0)}})
	for p := range int32(2) {
		src.queue = append(src.queue, fetched{tp{"t", p}, []*kgo.Record{{Topic: "t", Partition: p, Offset: 0}}})
		var b connector.Batch
		if !src.pop(&b) || b.Partition != checkpoint.Partition(p) {
			t.Fatalf("t/%d handed out as partition %d", p, b.Partition)
		}
	}
	src.onRevoked(context.Background(), nil, map[string][]int32{"t": {2}})
	if len(host.revokes) != 0 {
		t.Fatalf("Revoke calls %v for a partition never handed out", host.revokes)
	}
	src.mu.Lock()
	plan := src.planCommit([]connector.Commit{{Partition: 0, Position: 1}, {Partition: 1, Position: 1}})
	src.mu.Unlock()
	if len(plan.errs) != 0 || len(plan.sent) != 2 {
		t.Fatalf("commit of t/0 and t/1: errors %v, sent %v", plan.errs, plan.offsets)
	}
	if err := src.Seek(context.Background(), 0, 0); err != nil {
		t.Fatalf("seek of t/0: %v", err)
	}
}
