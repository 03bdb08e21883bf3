package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// brokenSink fails every Flush with err: a disk that is full for good.
func brokenSink(err error) *conformance.FaultSink {
	return &conformance.FaultSink{Sink: &conformance.MemSink{}, OnFlush: func() error { return err }}
}

// countingLog counts log records by message.
type countingLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingLog) Enabled(context.Context, slog.Level) bool { return true }
func (c *countingLog) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Message]++
	return nil
}
func (c *countingLog) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *countingLog) WithGroup(string) slog.Handler      { return c }
func (c *countingLog) count(msg string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[msg]
}

// Guarantee: a sink that fails for good with on_failure rewind does not loop
// for ever: once it has failed for GiveUpAfter it halts the run, with an
// error naming the sink and its error; a finite job ends. Before, it rewound
// for ever and a once job never ended. Its failures are logged with backoff,
// not at every attempt.
func TestFailingSinkGivesUpAndHalts(t *testing.T) {
	src := gen(t, 2000, 2, 50)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: brokenSink(fmt.Errorf("write chunk: %w", syscall.EIO)),
		GiveUpAfter: 200 * time.Millisecond})
	logs := &countingLog{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(logs)))
	var he *pipeline.HaltError
	if !errors.As(err, &he) || he.Sink != "lake" || !strings.Contains(err.Error(), "gave up after failing for") || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Run = %v, want a HaltError naming sink lake, the give-up and the I/O error", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run did not end: the failing sink looped")
	}
	if got := src.Offsets().Get("gen/0"); got != 0 {
		t.Errorf("committed %d past data that was never written", got)
	}
	fails := logs.count("write failed")
	if fails == 0 || fails > 20 {
		t.Errorf("%d 'write failed' log lines, want a handful (logged with backoff)", fails)
	}
}

// Guarantee: with on_give_up dead_letter, what keeps failing goes to the dead
// letter sink once the sink gave up, and the run goes on: every record ends
// up in the sink or the dead letter sink.
func TestFailingSinkGivesUpToDeadLetter(t *testing.T) {
	const n = 2000
	src := gen(t, n, 2, 50)
	dead := &conformance.MemSink{}
	var mu sync.Mutex
	broken := true
	good := &conformance.MemSink{}
	flaky := &conformance.FaultSink{Sink: good, OnFlush: func() error {
		mu.Lock()
		defer mu.Unlock()
		if broken {
			return fmt.Errorf("write chunk: %w", syscall.EIO)
		}
		return nil
	}}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: flaky, GiveUpAfter: 100 * time.Millisecond,
			OnGiveUp: pipeline.GiveUpDeadLetter, DeadLetter: "dead"},
		pipeline.SinkSpec{Name: "dead", Sink: dead})
	var gaveUp atomic.Int32
	logs := &countingLog{}
	err := pipeline.Run(context.Background(), sp, pipeline.WithLogger(slog.New(logs)), pipeline.WithCommitted(func(string) {
		// Once something went to the dead letter sink, the disk is fixed.
		if len(dead.Values()) > 0 && gaveUp.Add(1) == 1 {
			mu.Lock()
			broken = false
			mu.Unlock()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, v := range good.Values() {
		got[idOf(t, v)]++
	}
	deadN := 0
	for _, v := range dead.Values() {
		var env struct {
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(v, &env); err != nil {
			t.Fatalf("dead letter %s: %v", v, err)
		}
		got[idOf(t, env.Value)]++
		deadN++
	}
	if deadN == 0 {
		t.Fatal("nothing went to the dead letter sink")
	}
	for id := range n {
		if got[id] == 0 {
			t.Errorf("record %d is in neither the sink nor the dead letter sink", id)
		}
	}
	if got := src.Offsets().Get("gen/0") + src.Offsets().Get("gen/1"); got != n {
		t.Errorf("committed %d, want %d", got, n)
	}
}

// Guarantee: a failure that persists shows from outside within StallWarning:
// /readyz turns 503 naming the failing sink and its error, /debug/stalls
// names the sink, its error and the partition's rewinds, and the stall age
// grows across rewinds instead of restarting with each.
func TestPersistentFailureIsVisible(t *testing.T) {
	src := gen(t, 0, 1, 20)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: brokenSink(errors.New("disk quota exceeded")),
		GiveUpAfter: -1})
	sp.Checkpoint.StallWarning = 300 * time.Millisecond
	sp.Metrics.Address = "127.0.0.1:0"
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs := &countingLog{}
	go func() {
		done <- pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(logs)), pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	deadline := time.Now().Add(30 * time.Second)
	var ready pipeline.Readiness
	for {
		code, body := httpGet(t, base+"/readyz")
		if err := json.Unmarshal([]byte(body), &ready); err != nil {
			t.Fatalf("/readyz: %v: %s", err, body)
		}
		if code == 503 && len(ready.Reasons) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %s after 30s of a failing sink", code, body)
		}
		time.Sleep(20 * time.Millisecond) // polling an external view
	}
	var sinkReason, partReason bool
	for _, r := range ready.Reasons {
		sinkReason = sinkReason || (r.Kind == "sink" && r.Sink == "lake" && strings.Contains(r.Message, "disk quota exceeded"))
		partReason = partReason || (r.Kind == "partition" && r.Partition == "gen/0")
	}
	if !sinkReason || !partReason {
		t.Errorf("/readyz reasons %+v: want the sink lake with its error and the stalled partition gen/0", ready.Reasons)
	}
	var stalls []pipeline.Stall
	for {
		_, body := httpGet(t, base+"/debug/stalls")
		if err := json.Unmarshal([]byte(body), &stalls); err != nil {
			t.Fatalf("/debug/stalls: %v: %s", err, body)
		}
		if len(stalls) == 1 && stalls[0].Rewinds >= 2 && stalls[0].AgeMillis >= 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/debug/stalls %s: want one partition, rewound at least twice, older than the rewinds", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := stalls[0]
	if len(st.FailingSinks) != 1 || st.FailingSinks[0].Sink != "lake" || st.FailingSinks[0].Error != "disk quota exceeded" || st.FailingSinks[0].Failures < 2 {
		t.Errorf("stall %+v: want the failing sink lake named with its error and its failures", st)
	}
	cancel()
	// Stopped while the sink fails: the run says what it left behind.
	var ie *pipeline.IncompleteError
	if err := <-done; !errors.As(err, &ie) || len(ie.Partitions) != 1 || ie.Partitions[0] != (pipeline.PartitionRef{Source: "gen", Partition: "gen/0"}) || len(ie.Failing) != 1 || ie.Failing[0].Sink != "lake" {
		t.Fatalf("Run = %v, want an IncompleteError naming partition gen/0 of source gen and the failing sink lake", err)
	}
	if n := logs.count("partition stalled: its watermark has not moved"); n != 1 {
		t.Errorf("%d stall warnings for one stall, want 1", n)
	}
}

// tooLargeSink fails any flush of a group larger than limit records with a
// full disk, as a file system with little space left does for a large chunk.
type tooLargeSink struct {
	conformance.MemSink
	limit   int
	pending int
}

func (s *tooLargeSink) Write(ctx context.Context, recs []record.Record) error {
	s.pending += len(recs)
	return s.MemSink.Write(ctx, recs)
}

func (s *tooLargeSink) Flush(ctx context.Context) error {
	n := s.pending
	s.pending = 0
	if n > s.limit {
		return fmt.Errorf("write chunk of %d records: %w", n, syscall.ENOSPC)
	}
	return s.MemSink.Flush(ctx)
}

func (s *tooLargeSink) Abort(ctx context.Context) error {
	s.pending = 0
	return s.MemSink.Abort(ctx)
}

var _ connector.Sink = (*tooLargeSink)(nil)

// Guarantee: a group too large for what is left is written again in smaller
// parts, down to one record, before it counts as a failure. Before, the same
// group was retried whole for ever.
func TestTooLargeGroupIsSplit(t *testing.T) {
	const n = 1000
	src := gen(t, n, 1, 100)
	sink := &tooLargeSink{limit: 30}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: sink, Batch: pipeline.BatchSettings{MaxRecords: 400}})
	sp.Sinks[0].Retry.MaxAttempts = 1         // no retry of the whole group: only splitting gets it through
	sp.Sinks[0].GiveUpAfter = 5 * time.Second // without splitting, the run halts
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	got := seen(t, sink.Values())
	for i := range n {
		if got[i] == 0 {
			t.Errorf("record %d never written", i)
		}
	}
	if got := src.Offsets().Get("gen/0"); got != n {
		t.Errorf("committed %d, want %d", got, n)
	}
}
