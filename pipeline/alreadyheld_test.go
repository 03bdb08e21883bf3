package pipeline_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
	"github.com/weir-etl/weir/source/generate"
)

// Guarantee: an operator sees, per exactly-once sink, how many records it
// already held and was not given again, and the same number in the summary,
// the metric weir_sink_already_held_total and /api/v1/status; a sink that is
// not exactly-once has no such metric and is not shown as exactly-once.
func TestAlreadyHeldIsShown(t *testing.T) {
	const n = 6000
	db := newKeeperDB()
	first, err := generate.New("gen", generate.Config{Count: n, Partitions: 2, BatchSize: 40, Template: generate.DefaultTemplate})
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
	if err := pipeline.Run(ctx, sp, quiet); err != nil {
		t.Fatal(err)
	}
	// The second run reads everything again: what the first stored is held.
	var addr atomic.Value
	var once sync.Once
	var metrics, status string
	k2 := &keeperSink{db: db}
	k2.onFlush = func() error {
		// The last group's records, about to be committed, are the end: every
		// skip came before them.
		db.mu.Lock()
		all := len(db.rows)+len(k2.group) >= n
		db.mu.Unlock()
		if all {
			once.Do(func() {
				base := "http://" + addr.Load().(string)
				_, metrics = httpGet(t, base+"/metrics")
				_, status = httpGet(t, base+"/api/v1/status")
			})
		}
		return nil
	}
	sp = fastSpec(gen(t, n, 2, 40),
		pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: k2, Batch: pipeline.BatchSettings{MaxRecords: 100}},
		pipeline.SinkSpec{Name: "bh", Inputs: []string{"gen"}, Sink: blackhole.New()})
	sp.Metrics.Address = "127.0.0.1:0"
	var rep *pipeline.Report
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithListening(func(a string) { addr.Store(a) }),
		pipeline.WithReport(func(r *pipeline.Report) { rep = r })); err != nil {
		t.Fatal(err)
	}
	held := rep.Sinks[0].Skipped
	if !rep.Sinks[0].ExactlyOnce || rep.Sinks[1].ExactlyOnce || held < 1000 {
		t.Fatalf("report: %+v; want db exactly-once with at least 1000 records already held, bh not exactly-once", rep.Sinks)
	}
	if want := fmt.Sprintf("exactly once, %d already held, not written again", held); !strings.Contains(rep.String(), want) {
		t.Errorf("the summary does not say %q:\n%s", want, rep)
	}
	m := regexp.MustCompile(`(?m)^weir_sink_already_held_total\{sink="db"\} (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no weir_sink_already_held_total for db in /metrics:\n%s", metrics)
	}
	if got, _ := strconv.ParseInt(m[1], 10, 64); got != held {
		t.Errorf("weir_sink_already_held_total{sink=\"db\"} = %d, want %d (the summary's)", got, held)
	}
	if strings.Contains(metrics, `weir_sink_already_held_total{sink="bh"}`) {
		t.Errorf("a sink that is not exactly-once has weir_sink_already_held_total")
	}
	if want := fmt.Sprintf(`"exactly_once":true,"already_held":%d`, held); !strings.Contains(status, want) {
		t.Errorf("/api/v1/status does not show db with %s:\n%s", want, status)
	}
}

// Guarantee: an exactly-once sink with acknowledgements off is refused, with
// the field and the fix: the runtime would never read or give its
// positions, and it would write every replay again.
func TestExactlyOnceNeedsAcknowledgements(t *testing.T) {
	sp := fastSpec(gen(t, 10, 1, 10), pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: &keeperSink{db: newKeeperDB()}, NoAcknowledgements: true})
	ps := pipeline.Validate(sp)
	if len(ps) != 1 || ps[0].Name != "db" || ps[0].Field != "acknowledgements" || !strings.Contains(ps[0].Msg, "exactly-once") {
		t.Fatalf("Validate of an exactly-once sink without acknowledgements: %v, want one problem naming acknowledgements", ps)
	}
	sp.Sinks[0].NoAcknowledgements = false
	if ps := pipeline.Validate(sp); len(ps) != 0 {
		t.Fatalf("Validate with acknowledgements on: %v", ps)
	}
}
