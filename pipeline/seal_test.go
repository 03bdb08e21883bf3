package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
)

// The runtime flushes a sink that seals through Seal and Persist: while the
// first group's Persist is held, later groups are still written and sealed
// (up to Overlap of them out at once), and nothing is committed until the
// held group is durable.
func TestSealedGroupsOverlapAndCommitOnlyWhenDurable(t *testing.T) {
	for _, overlap := range []int{1, 3} {
		t.Run(fmt.Sprintf("overlap%d", overlap), func(t *testing.T) {
			mem := &conformance.MemSealer{}
			fs := conformance.NewFaultSealer(mem)
			release := make(chan struct{})
			reached := make(chan struct{})
			var once sync.Once
			first := true
			fs.OnPersist = func() error {
				if !first {
					return nil
				}
				first = false // the persister is one goroutine
				// Hold the first group until Overlap groups are out:
				// the sink goroutine kept writing while it waited.
				deadline := time.Now().Add(10 * time.Second)
				for {
					if seals, _, _, _ := fs.SealCounts(); seals >= overlap {
						break
					}
					if time.Now().After(deadline) {
						t.Errorf("only %v groups sealed while the first waited; want %d", sealsOf(fs), overlap)
						break
					}
					time.Sleep(time.Millisecond) // polling the sink goroutine's progress
				}
				once.Do(func() { close(reached) })
				<-release
				return nil
			}
			src := gen(t, 1000, 1, 10)
			var mu sync.Mutex
			var early []int64 // commits seen while the first group was held
			held := true
			armed, rounds := false, 0          // commit rounds once the group is held
			threeRounds := make(chan struct{}) // closed after three of them
			sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs,
				Batch: pipeline.BatchSettings{MaxRecords: 50, MaxAge: time.Hour, Overlap: overlap}})
			committed := pipeline.WithCommitted(func(string) {
				mu.Lock()
				defer mu.Unlock()
				if got := src.Offsets().Get("gen/0"); held && got > 0 {
					early = append(early, int64(got))
				}
				if armed {
					if rounds++; rounds == 3 {
						close(threeRounds)
					}
				}
			})
			errc := make(chan error, 1)
			go func() { errc <- pipeline.Run(context.Background(), sp, quiet, committed) }()
			<-reached
			mu.Lock()
			armed = true
			mu.Unlock()
			<-threeRounds // an early commit would show in these rounds
			mu.Lock()
			held = false
			mu.Unlock()
			if n := len(mem.Values()); n != 0 {
				t.Errorf("%d records readable before the first Persist returned", n)
			}
			close(release)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if len(early) > 0 {
				t.Fatalf("committed %v while the first group was not durable", early)
			}
			if got := src.Offsets().Get("gen/0"); got != 1000 {
				t.Fatalf("committed %d, want 1000", got)
			}
			if got := seen(t, mem.Values()); len(got) != 1000 {
				t.Fatalf("%d distinct records durable, want 1000", len(got))
			}
			seals, persists, discards, maxOut := fs.SealCounts()
			if maxOut != overlap {
				t.Fatalf("at most %d groups were out at once, want exactly Overlap = %d", maxOut, overlap)
			}
			if seals != persists || discards != 0 {
				t.Fatalf("%d seals, %d persists, %d discards", seals, persists, discards)
			}
		})
	}
}

func sealsOf(fs *conformance.FaultSealer) int {
	n, _, _, _ := fs.SealCounts()
	return n
}

// A failed Persist sends the group back: the runtime waits for the groups
// still out, writes the failed group's records again with the current group,
// and flushes them synchronously. Every record ends up durable and committed,
// and the failed group was discarded.
func TestFailedPersistIsWrittenAgain(t *testing.T) {
	mem := &conformance.MemSealer{}
	fs := conformance.NewFaultSealer(mem)
	var mu sync.Mutex
	calls := 0
	fs.OnPersist = func() error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls%4 == 2 { // every fourth group, starting with the second
			return errors.New("disk full")
		}
		return nil
	}
	src := gen(t, 2000, 2, 25)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs,
		Batch: pipeline.BatchSettings{MaxRecords: 100, Overlap: 2}})
	sp.Sinks[0].Retry.MaxAttempts = 5
	var rep *pipeline.Report
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"gen/0", "gen/1"} {
		if got := src.Offsets().Get(p); got != 1000 {
			t.Fatalf("%s committed %d, want 1000", p, got)
		}
	}
	_, _, discards, _ := fs.SealCounts()
	if discards == 0 {
		t.Fatal("no group was discarded: the failures never happened")
	}
	if got := len(mem.Values()); got < 2000 {
		t.Fatalf("%d records durable, want at least 2000", got)
	}
	distinct := map[string]bool{}
	for _, v := range mem.Values() {
		distinct[string(v)] = true
	}
	if len(distinct) != 2000 {
		t.Fatalf("%d distinct records durable, want 2000", len(distinct))
	}
	_, flushes, _ := fs.Counts()
	if flushes == 0 {
		t.Fatal("no synchronous Flush: the failed groups were not retried")
	}
	if w := rep.Sinks[0].Written; w < 2000 {
		t.Fatalf("report says %d written, want at least 2000", w)
	}
}

// A sink that seals has its flushes timed from Seal to the end of Persist:
// weir_sink_flush_duration_seconds counts one observation per durable group.
func TestSealedFlushesAreTimed(t *testing.T) {
	mem := &conformance.MemSealer{}
	fs := conformance.NewFaultSealer(mem)
	src := gen(t, 0, 1, 10) // endless, so that the metrics can be read while it runs
	var addr atomic.Value
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs,
		Batch: pipeline.BatchSettings{MaxRecords: 100}})
	sp.Metrics.Address = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var body string
	var persisted int
	hook := pipeline.WithCommitted(func(string) {
		if src.Offsets().Get("gen/0") < 1000 {
			return
		}
		once.Do(func() {
			// Observed after its Persist returned: read the metric first.
			_, body = httpGet(t, "http://"+addr.Load().(string)+"/metrics")
			_, persisted, _, _ = fs.SealCounts()
			cancel()
		})
	})
	listening := pipeline.WithListening(func(a string) { addr.Store(a) })
	if err := pipeline.Run(ctx, sp, quiet, hook, listening); err != nil {
		t.Fatal(err)
	}
	n, ok := metric(body, "weir_sink_flush_duration_seconds_count", "sink", "out")
	if !ok || n < 10 || int(n) > persisted {
		t.Fatalf("weir_sink_flush_duration_seconds_count = %v (present %v), want between 10 (1000 records committed in groups of 100) and %d (the groups persisted by then)", n, ok, persisted)
	}
}

// /debug/stalls names a sink whose sealed group, waiting for its Persist,
// holds the oldest unresolved batch.
func TestStallReportNamesASealedGroup(t *testing.T) {
	mem := &conformance.MemSealer{}
	fs := conformance.NewFaultSealer(mem)
	release := make(chan struct{})
	held := make(chan struct{})
	var once sync.Once
	fs.OnPersist = func() error {
		once.Do(func() { close(held) })
		<-release
		return nil
	}
	src := gen(t, 0, 1, 10)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs,
		Batch: pipeline.BatchSettings{MaxRecords: 10, MaxAge: time.Hour}})
	sp.Sources[0].MaxInFlightBatches = 4
	sp.Metrics.Address = "127.0.0.1:0"
	clock := newFakeClock()
	ticks := make(chan time.Time)
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, quiet, pipeline.WithClock(clock.now, ticks),
			pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	<-held // the first group, batch s0, waits in Persist
	clock.add(10 * time.Second)
	ticks <- clock.now()
	ticks <- clock.now() // received only once the previous refresh finished
	_, body := httpGet(t, base+"/debug/stalls")
	var list []pipeline.Stall
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("/debug/stalls: %v: %s", err, body)
	}
	close(release)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || !strings.HasSuffix(list[0].Batch, "/s0") || len(list[0].HeldBy) != 1 || list[0].HeldBy[0] != "out" {
		t.Fatalf("stall report %s: want batch s0 held by out (its sealed group)", body)
	}
}

// A sealed group whose Persist keeps failing goes, once its retries ran out,
// to the failure policy like a flushed one: here to a dead letter sink, and
// every record is then committed, none of it in the failing sink.
func TestPersistFailingForGoodGoesToDeadLetter(t *testing.T) {
	mem := &conformance.MemSealer{}
	fs := conformance.NewFaultSealer(mem)
	fs.OnPersist = func() error { return errors.New("disk gone") }
	fs.OnFlush = fs.OnPersist // the retries flush synchronously
	dl := &conformance.MemSink{}
	src := gen(t, 500, 1, 25)
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: fs, OnFailure: pipeline.DeadLetter, DeadLetter: "dl",
			Batch: pipeline.BatchSettings{MaxRecords: 100}},
		pipeline.SinkSpec{Name: "dl", Sink: dl})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if got := src.Offsets().Get("gen/0"); got != 500 {
		t.Fatalf("committed %d, want 500", got)
	}
	if n := len(mem.Values()); n != 0 {
		t.Fatalf("%d records durable in the failing sink, want 0", n)
	}
	seqs := map[int]bool{}
	for _, v := range dl.Values() {
		var env struct {
			Sink  string          `json:"sink"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(v, &env); err != nil || env.Sink != "out" {
			t.Fatalf("dead letter %s: %v, want one from sink out", v, err)
		}
		seqs[seqOf(t, env.Value)] = true
	}
	if len(seqs) != 500 {
		t.Fatalf("%d distinct records in the dead letter sink, want 500", len(seqs))
	}
}
