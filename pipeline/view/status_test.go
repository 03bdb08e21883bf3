package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// model is a source feeding a sink, with three partitions: one stalled for
// a minute whose batch the sink holds, one behind its end, one caught up.
func model(t0 time.Time) *Model {
	return &Model{
		At: t0, Started: t0.Add(-time.Hour), State: "running", StallWarning: 30 * time.Second,
		Readiness: Readiness{Reasons: []Reason{{Kind: "partition", Source: "in", Partition: "p0", Message: "stalled"}}},
		Nodes: []StatusNode{
			{Name: "in", Kind: "source", Type: "kafka", State: "ok", In: 10, Out: 10},
			{Name: "out", Kind: "sink", Type: "s3", State: "ok", In: 10, Out: 0},
		},
		Edges: []StatusEdge{{From: "in", To: "out"}},
		Sources: []Source{{Name: "in", AsOf: t0, Partitions: []Partition{
			{Name: "p2", Committed: 5, Watermark: 5, Status: "ok", End: ptr(int64(5))},
			{Name: "p1", Committed: 5, Watermark: 5, Status: "ok", End: ptr(int64(105))},
			{Name: "p0", Committed: 7, Watermark: 7, Status: "pending", Batch: "p0/1/8", StalledSince: t0.Add(-time.Minute), HeldBy: []string{"out"}},
		}}},
		Stalls: []Stall{},
		Events: []Event{{Time: t0, Kind: "assigned", Source: "in", Count: 1, Message: "3 partitions"}},
	}
}

// TestRenderRanksAndDerives pins what Render derives from the model: the
// worst partitions first (stalled, then behind, then by name) cut at the
// limit, the source's lag summed over the partitions whose end is known,
// the source stalled since its oldest stall, the sink holding the stalled
// partition, and the explanation in words.
func TestRenderRanksAndDerives(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := Render(model(t0), 2)
	src := st.Sources[0]
	if got := []string{src.Partitions[0].Name, src.Partitions[1].Name}; got[0] != "p0" || got[1] != "p1" || len(src.Partitions) != 2 || src.PartitionsOmitted != 1 {
		t.Fatalf("partitions %v (omitted %d), want p0, p1 and one omitted", got, src.PartitionsOmitted)
	}
	if src.Lag == nil || *src.Lag != 100 || src.StalledCount != 1 {
		t.Fatalf("lag %v stalled %d, want 100 and 1", src.Lag, src.StalledCount)
	}
	p0 := src.Partitions[0]
	if !p0.Stalled || p0.StallMillis != 60000 || !strings.Contains(p0.Explanation, "Sink out holds it") {
		t.Fatalf("p0 = %+v", p0)
	}
	if n := st.Nodes[0]; n.State != "stalled" || n.Since == nil || !n.Since.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("source node %+v, want stalled since a minute ago", n)
	}
	if n := st.Nodes[1]; n.StalledPartitions != 1 || len(n.Holding) != 1 || n.Holding[0] != (PartitionRef{"in", "p0"}) {
		t.Fatalf("sink node %+v, want it holding in/p0", n)
	}
	if st.Ready || len(st.Reasons) != 1 || st.Version != StatusVersion || len(st.Events) != 1 {
		t.Fatalf("status %+v", st)
	}
}

// TestRenderLeavesModel pins that rendering never changes the model it
// reads: a published model is shared by every reader.
func TestRenderLeavesModel(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := model(t0)
	before, _ := json.Marshal(m)
	st := Render(m, 1)
	st.Nodes[0].Name, st.Sources[0].Partitions[0].HeldBy[0] = "changed", "changed"
	_ = Render(m, 100)
	if after, _ := json.Marshal(m); string(after) != string(before) {
		t.Fatalf("the model changed:\n%s\n%s", before, after)
	}
}

// TestRenderIdle pins that a healthy sink moving nothing behind a source
// waiting on a failing sink is idle, waiting on that sink, and that the
// failing sink itself is not.
func TestRenderIdle(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &Model{At: t0, StallWarning: time.Second,
		Nodes: []StatusNode{
			{Name: "in", Kind: "source", State: "ok"},
			{Name: "a", Kind: "sink", State: "ok"},
			{Name: "b", Kind: "sink", State: "failing"},
		},
		Edges:   []StatusEdge{{From: "in", To: "a"}, {From: "in", To: "b"}},
		Sources: []Source{{Name: "in", AtLimit: true, FailingSinks: []SinkFailure{{Sink: "b", Failures: 3}}}},
	}
	st := Render(m, 10)
	if a := st.Nodes[1]; a.State != "idle" || len(a.WaitingOn) != 1 || a.WaitingOn[0] != "b" {
		t.Fatalf("sink a %+v, want idle waiting on b", a)
	}
	if b := st.Nodes[2]; b.State != "failing" || b.WaitingOn != nil {
		t.Fatalf("sink b %+v, want failing", b)
	}
}
