package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/source/kafka"
)

// handoverRun is one run of a pipeline from a Kafka source into a sink that
// shares mem's store.
type handoverRun struct {
	src    *kafka.Source
	cancel context.CancelFunc
	done   chan error
}

func newHandoverSource(t *testing.T, brokers []string) *kafka.Source {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Group = "g"
	cfg.Topics = []string{"t"}
	cfg.SessionTimeout = 6 * time.Second
	cfg.RebalanceTimeout = 30 * time.Second
	src, err := kafka.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func startHandoverRun(ctx context.Context, t *testing.T, src *kafka.Source, mem *conformance.MemSink, onWrite func([]record.Record) error, h *pipeline.Handover) *handoverRun {
	t.Helper()
	r := &handoverRun{src: src, done: make(chan error, 1)}
	spec := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "in", Source: src, MaxInFlightBatches: 1}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"in"},
			Sink:  &conformance.FaultSink{Sink: mem.Reopen(), OnWrite: onWrite},
			Batch: pipeline.BatchSettings{MaxRecords: 100, MaxAge: 5 * time.Millisecond}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	runCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() {
		r.done <- pipeline.Run(runCtx, spec, pipeline.WithLogger(testLogger()), pipeline.WithHandover(h))
	}()
	t.Cleanup(func() { cancel(); <-r.done; r.done <- nil })
	return r
}

func (r *handoverRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	r.done <- nil // for the cleanup
}

func waitMember(ctx context.Context, t *testing.T, src *kafka.Source) (string, int32) {
	t.Helper()
	for {
		if id, gen := kafka.GroupMember(src); id != "" && gen > 0 {
			return id, gen
		}
		select {
		case <-ctx.Done():
			t.Fatal("the member did not join its group")
		case <-time.After(5 * time.Millisecond): // polling the client's state
		}
	}
}

// Guarantee: a reload that keeps the Kafka source keeps the member in its
// group: the next run goes on with the same member id and generation (no
// rebalance), from the committed offsets, with nothing lost. The first run
// stops while the source holds fetched records it has not handed out (one
// batch in flight at most, the sink holding it), so Detach must give them
// back to be fetched again. A run that does not keep the source rejoins as a
// new member: the check tells the two apart.
func TestHandoverKeepsTheMember(t *testing.T) {
	ctx := testCtx(t)
	const parts, perPart = 4, 500
	c := newKafkaCluster(t, parts)
	for p := range int32(parts) {
		produceSeq(ctx, t, c.cl, "t", p, 0, perPart)
	}
	mem := &conformance.MemSink{}
	h := pipeline.NewHandover()

	g := newGate(true, false)
	src := newHandoverSource(t, c.addrs)
	first := startHandoverRun(ctx, t, src, mem, g.onWrite, h)
	waitClosed(ctx, t, "the first write to be held", g.held)
	id, gen := waitMember(ctx, t, src)
	h.Keep("in")
	first.cancel()
	g.Release()
	first.stop(t)
	if kept := h.Kept(); len(kept) != 1 {
		t.Fatalf("kept %v after the first run, want [in]", kept)
	}

	second := startHandoverRun(ctx, t, newHandoverSource(t, c.addrs), mem, nil, h)
	waitAll := func(what string) map[string]map[int64]int {
		t.Helper()
		for {
			w := written(mem)
			n := 0
			for _, offs := range w {
				n += len(offs)
			}
			if n == parts*perPart {
				return w
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %d of %d records written", what, n, parts*perPart)
			case <-time.After(5 * time.Millisecond): // polling the sink's store
			}
		}
	}
	w := waitAll("after the hand-over")
	if id2, gen2 := kafka.GroupMember(src); id2 != id || gen2 != gen {
		t.Errorf("member %s generation %d after the hand-over, was %s generation %d: the group rebalanced", id2, gen2, id, gen)
	}
	dups := 0
	for p := range parts {
		for o := range int64(perPart) {
			switch n := w[fmt.Sprintf("t/%d", p)][o]; {
			case n == 0:
				t.Errorf("t/%d@%d lost", p, o)
			case n > 1:
				dups += n - 1
			}
		}
	}
	// One batch at most was in flight when the first run stopped, and it
	// was written and committed before the hand-over.
	if dups > 0 {
		t.Errorf("%d records written twice; the first run committed everything it wrote", dups)
	}
	second.stop(t) // nothing kept: the member leaves its group

	// Produced so that the third run has something to write: its client is
	// looked at once a write shows that it joined.
	produceSeq(ctx, t, c.cl, "t", 0, perPart, 1)
	g3 := newGate(true, false)
	third := newHandoverSource(t, c.addrs)
	startHandoverRun(ctx, t, third, mem, g3.onWrite, h)
	waitClosed(ctx, t, "the third run's first write", g3.held)
	defer g3.Release()
	if id3, _ := waitMember(ctx, t, third); id3 == id {
		t.Errorf("a run that did not keep the source joined as the same member %s", id)
	}
}
