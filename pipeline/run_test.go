package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/weir-etl/weir/sink/blackhole"
	"github.com/weir-etl/weir/source/generate"
	"go.uber.org/goleak"
)

var quiet = pipeline.WithLogger(slog.New(slog.DiscardHandler))

func gen(t testing.TB, count int64, parts, batch int) *generate.Source {
	t.Helper()
	s, err := generate.New("gen", generate.Config{Count: count, Partitions: parts, BatchSize: batch, Template: generate.DefaultTemplate})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fastSpec returns a spec whose timers are short, so tests finish quickly;
// no test waits on them for synchronisation.
func fastSpec(src connector.Source, sinks ...pipeline.SinkSpec) *pipeline.Spec {
	for i := range sinks {
		if sinks[i].Batch.MaxAge == 0 {
			sinks[i].Batch.MaxAge = 5 * time.Millisecond
		}
		sinks[i].Retry = pipeline.RetrySettings{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
	}
	return &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "gen", Source: src}},
		Sinks:      sinks,
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
}

func seqOf(t testing.TB, v []byte) int {
	t.Helper()
	i := bytes.Index(v, []byte(`"seq":`))
	if i < 0 {
		t.Fatalf("no seq in %s", v)
	}
	rest := v[i+6:]
	j := bytes.IndexAny(rest, ",}")
	n, err := strconv.Atoi(string(rest[:j]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// seen counts the values of a single-partition generate run by sequence.
func seen(t testing.TB, vals [][]byte) map[int]int {
	m := map[int]int{}
	for _, v := range vals {
		m[seqOf(t, v)]++
	}
	return m
}

func TestRunToEndCommitsEverything(t *testing.T) {
	src := gen(t, 10000, 3, 100)
	bh := blackhole.New()
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: bh})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if got := bh.Flushed(); got != 10000 {
		t.Errorf("flushed %d records, want 10000", got)
	}
	for i, want := range []int64{3334, 3333, 3333} {
		if got := src.Offsets().Get(fmt.Sprintf("gen/%d", i)); int64(got) != want {
			t.Errorf("partition %d committed %d, want %d", i, got, want)
		}
	}
}

// Guarantee: a failed write is never committed past; the partition rewinds to
// its watermark and the data arrives.
func TestRewindReplaysFailedData(t *testing.T) {
	src := gen(t, 1000, 1, 50)
	mem := &conformance.MemSink{}
	var failures atomic.Int32
	fs := &conformance.FaultSink{Sink: mem, OnWrite: func(recs []record.Record) error {
		for i := range recs {
			if recs[i].Origin.Offset == 420 && failures.Load() < 2 {
				failures.Add(1)
				return errors.New("disk on fire")
			}
		}
		return nil
	}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs, Batch: pipeline.BatchSettings{MaxRecords: 50}})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if failures.Load() != 2 {
		t.Fatalf("failures injected: %d, want 2 (one write and its retry)", failures.Load())
	}
	m := seen(t, mem.Values())
	for i := range 1000 {
		if m[i] == 0 {
			t.Fatalf("record %d never arrived", i)
		}
	}
	if m[420] < 1 || m[999] < 1 {
		t.Fatal("replay missing")
	}
	if got := src.Offsets().Get("gen/0"); got != 1000 {
		t.Errorf("committed %d, want 1000", got)
	}
	if _, _, aborts := fs.Counts(); aborts < 2 {
		t.Errorf("aborts %d, want at least 2", aborts)
	}
}

// Guarantee: dead-lettered records carry their error and count as delivered
// once the dead letter sink flushed them.
func TestDeadLetterReceivesRejectedRecords(t *testing.T) {
	src := gen(t, 500, 1, 50)
	mem, dl := &conformance.MemSink{}, &conformance.MemSink{}
	fs := &conformance.FaultSink{Sink: mem, OnWrite: func(recs []record.Record) error {
		for i := range recs {
			if recs[i].Origin.Offset%100 == 7 {
				return &connector.RejectError{Index: i, Err: errors.New("not encodable")}
			}
		}
		return nil
	}}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs, OnFailure: pipeline.DeadLetter, DeadLetter: "dlq"},
		pipeline.SinkSpec{Name: "dlq", Sink: dl})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	dead := dl.Values()
	if len(dead) != 5 {
		t.Fatalf("dead letters: %d, want 5: %q", len(dead), dead)
	}
	for _, d := range dead {
		if !bytes.Contains(d, []byte("not encodable")) || !bytes.Contains(d, []byte(`"sink":"out"`)) || !bytes.Contains(d, []byte(`"partition":"gen/0"`)) {
			t.Errorf("dead letter lacks error or origin: %s", d)
		}
	}
	if got := len(mem.Values()); got != 495 {
		t.Errorf("main sink has %d records, want 495", got)
	}
	if got := src.Offsets().Get("gen/0"); got != 500 {
		t.Errorf("committed %d, want 500", got)
	}
}

// Guarantee: a halt stops the pipeline with an error naming the sink, and
// nothing at or past the failed batch is committed.
func TestHaltCommitsNothingPastFailure(t *testing.T) {
	src := gen(t, 100000, 1, 100)
	mem := &conformance.MemSink{}
	fs := &conformance.FaultSink{Sink: mem, OnWrite: func(recs []record.Record) error {
		if recs[0].Origin.Offset >= 500 {
			return errors.New("quota exceeded")
		}
		return nil
	}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs, OnFailure: pipeline.Halt, Batch: pipeline.BatchSettings{MaxRecords: 100}})
	err := pipeline.Run(context.Background(), sp, quiet)
	var he *pipeline.HaltError
	if !errors.As(err, &he) {
		t.Fatalf("Run returned %v, want a *HaltError", err)
	}
	if he.Sink != "out" || he.Partition != "gen/0" || !strings.Contains(err.Error(), "quota exceeded") {
		t.Errorf("halt error does not name sink, partition and cause: %v", err)
	}
	if got := src.Offsets().Get("gen/0"); got > 500 {
		t.Errorf("committed %d, past the failure at 500", got)
	}
	m := seen(t, mem.Values())
	for i := range int(src.Offsets().Get("gen/0")) {
		if m[i] == 0 {
			t.Fatalf("committed past record %d, which was never written", i)
		}
	}
}

// Guarantee: a transform error is a rejection; it halts (replay cannot help)
// and names the transform.
func TestTransformErrorHalts(t *testing.T) {
	src := gen(t, 1000, 1, 10)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"bad"}, Sink: blackhole.New()})
	sp.Transforms = []pipeline.TransformSpec{{Name: "bad", Inputs: []string{"gen"}, Transform: failAt(55)}}
	err := pipeline.Run(context.Background(), sp, quiet)
	var he *pipeline.HaltError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "bad") || he.Batch.Seq != 5 {
		t.Fatalf("Run returned %v, want a halt naming transform bad at batch 5", err)
	}
	if got := src.Offsets().Get("gen/0"); got > 50 {
		t.Errorf("committed %d, past the rejected batch at 50", got)
	}
}

type failAt int64

func (f failAt) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	if in.Origin.Offset == int64(f) {
		return out, errors.New("field amount is not a number")
	}
	return append(out, *in), nil
}

// dropOdd drops records with odd offsets and duplicates the rest.
type dropOdd struct{}

func (dropOdd) Process(in *record.Record, out []record.Record) ([]record.Record, error) {
	if in.Origin.Offset%2 == 1 {
		return out, nil
	}
	return append(out, in.CloneData(), *in), nil
}

// Guarantee: drops and fan-out release their references, so the run still
// commits to the end; routing to two sinks gives each every record.
func TestDropFanOutAndTwoSinks(t *testing.T) {
	src := gen(t, 1000, 2, 25)
	a, b := &conformance.MemSink{}, &conformance.MemSink{}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "a", Inputs: []string{"evens"}, Sink: a},
		pipeline.SinkSpec{Name: "b", Inputs: []string{"evens"}, Sink: b})
	sp.Transforms = []pipeline.TransformSpec{{Name: "evens", Inputs: []string{"gen"}, Transform: dropOdd{}}}
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if len(a.Values()) != 1000 || len(b.Values()) != 1000 {
		t.Errorf("sinks got %d and %d records, want 1000 each", len(a.Values()), len(b.Values()))
	}
	for _, p := range []string{"gen/0", "gen/1"} {
		if got := src.Offsets().Get(p); got != 500 {
			t.Errorf("%s committed %d, want 500", p, got)
		}
	}
}

// Guarantee: graceful shutdown commits the final watermark, and nothing that
// was not flushed.
func TestShutdownCommitsFinalWatermark(t *testing.T) {
	src := gen(t, 0, 1, 100)
	mem := &conformance.MemSink{}
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	fs := &conformance.FaultSink{Sink: mem, OnFlush: func() error {
		if len(mem.Values()) >= 1000 {
			once.Do(cancel)
		}
		return nil
	}}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs, Batch: pipeline.BatchSettings{MaxRecords: 100}})
	sp.Checkpoint.CommitInterval = time.Hour // only the final commit can commit
	if err := pipeline.Run(ctx, sp, quiet); err != nil {
		t.Fatal(err)
	}
	got := int(src.Offsets().Get("gen/0"))
	m := seen(t, mem.Values())
	if got < 1000 {
		t.Errorf("final commit at %d, want at least the 1000 flushed before the stop", got)
	}
	for i := range got {
		if m[i] == 0 {
			t.Fatalf("committed %d but record %d was never flushed", got, i)
		}
	}
}

// gateSink blocks every Write until release is closed: a stalled sink.
type gateSink struct {
	blackhole.Sink
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gateSink) Write(ctx context.Context, recs []record.Record) error {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Sink.Write(ctx, recs)
}

// countSource counts the batches it returns.
type countSource struct {
	connector.Source
	polled atomic.Int64
}

func (c *countSource) Poll(ctx context.Context, b *connector.Batch) error {
	err := c.Source.Poll(ctx, b)
	if err == nil {
		c.polled.Add(1)
	}
	return err
}

// Guarantee: a stalled sink keeps memory flat: polling stops at the in-flight
// limits instead of reading on.
func TestStalledSinkBoundsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name         string
		batches      int
		bytes        int64
		wantMaxPolls int64
	}{
		{"batches", 8, 0, 8},
		// A record of the default template is 20-odd bytes plus its
		// struct's 200 (record.Overhead), about 2,240 a batch of 10: the
		// limit is reached with the fifth batch, and polling stops there.
		{"bytes", 0, 10000, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countSource{Source: gen(t, 0, 1, 10)}
			gs := &gateSink{entered: make(chan struct{}), release: make(chan struct{})}
			sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: gs})
			sp.Sources[0].MaxInFlightBatches = tc.batches
			sp.Sources[0].MaxInFlightBytes = tc.bytes
			ctx, cancel := context.WithCancel(context.Background())
			paused := make(chan struct{}, 1)
			pause := pipeline.WithPauseHook(func(_ string, batches, bytes int64) {
				if tc.batches > 0 && batches > int64(tc.batches) {
					t.Errorf("in flight %d batches, limit %d", batches, tc.batches)
				}
				select {
				case paused <- struct{}{}:
				default:
				}
			})
			done := make(chan error, 1)
			go func() { done <- pipeline.Run(ctx, sp, quiet, pause) }()
			<-gs.entered
			<-paused
			if got := src.polled.Load(); got > tc.wantMaxPolls {
				t.Errorf("polled %d batches while the sink stalled, limit %d", got, tc.wantMaxPolls)
			}
			cancel()
			close(gs.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestInvalidSpecNamesTheField(t *testing.T) {
	sp := fastSpec(gen(t, 1, 1, 1), pipeline.SinkSpec{Name: "out", Inputs: []string{"nope"}, Sink: blackhole.New()})
	err := pipeline.Run(context.Background(), sp, quiet)
	if !errors.Is(err, pipeline.ErrSpec) || !strings.Contains(err.Error(), `sink "out": inputs[0]: "nope" names no source`) {
		t.Fatalf("got %v", err)
	}
}

// flushGate holds every Flush until the test opens its gate.
type flushGate struct {
	conformance.MemSink
	gate chan struct{}
}

func (g *flushGate) Flush(ctx context.Context) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.MemSink.Flush(ctx)
}

// Guarantee: the zero SinkSpec holds the watermark. Acknowledgements are on
// unless a field turns them off; before, the zero value turned them off and a
// sink built in Go released every record as delivered on arrival.
func TestZeroSinkSpecHoldsTheWatermark(t *testing.T) {
	offsets := new(generate.Offsets)
	src, err := generate.New("gen", generate.Config{Count: 500, Partitions: 1, BatchSize: 50, Template: generate.DefaultTemplate, Offsets: offsets})
	if err != nil {
		t.Fatal(err)
	}
	sink := &flushGate{gate: make(chan struct{})}
	sp := &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "gen", Source: src}},
		Sinks:      []pipeline.SinkSpec{{Name: "out", Inputs: []string{"gen"}, Sink: sink}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: time.Millisecond},
	}
	var rounds atomic.Int64
	var early atomic.Int64
	err = pipeline.Run(context.Background(), sp, quiet, pipeline.WithCommitted(func(string) {
		if n := rounds.Add(1); n < 20 {
			if c := offsets.Get("gen/0"); c > 0 {
				early.Store(int64(c))
			}
		} else if n == 20 {
			close(sink.gate)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c := early.Load(); c > 0 {
		t.Fatalf("committed %d while the sink had made nothing durable: the zero SinkSpec does not hold the watermark", c)
	}
	if got := len(sink.Values()); got != 500 {
		t.Fatalf("%d records written, want 500", got)
	}
}

// Guarantee: a zero Spec opens no port, so two pipelines run side by side in
// one process. Before, the zero Metrics.Address meant 127.0.0.1:9464 and the
// second pipeline failed to listen.
func TestZeroSpecOpensNoPort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	started := make(chan struct{}, 2)
	for range 2 {
		src := gen(t, 0, 1, 10) // never ends
		sp := &pipeline.Spec{
			Sources: []pipeline.SourceSpec{{Name: "gen", Source: src}},
			Sinks:   []pipeline.SinkSpec{{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()}},
			// Only the commit interval is set: it paces the test.
			Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		}
		var once sync.Once
		go func() {
			errs <- pipeline.Run(ctx, sp, quiet, pipeline.WithCommitted(func(string) { once.Do(func() { started <- struct{}{} }) }))
		}()
	}
	for range 2 {
		select {
		case <-started:
		case err := <-errs:
			cancel()
			t.Fatalf("a pipeline stopped at start: %v", err)
		}
	}
	cancel()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Guarantee: a run ended by cancelling its context leaves no goroutine
// behind, even on a source that never ends. Before, a watcher waiting for
// every source to finish outlived each such run and kept the runtime
// reachable.
func TestCancelledRunsLeaveNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for range 5 {
		src := gen(t, 0, 2, 10) // never ends
		sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()})
		ctx, cancel := context.WithCancel(context.Background())
		var once sync.Once
		err := pipeline.Run(ctx, sp, quiet, pipeline.WithCommitted(func(string) { once.Do(cancel) }))
		if err != nil {
			t.Fatal(err)
		}
	}
}
