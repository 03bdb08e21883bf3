package pipeline_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/blackhole"
)

func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// waitReason polls /readyz at base until it answers 503 with a reason that
// match accepts, for up to 30 s, and returns the body; want says what is
// waited for, in the failure.
func waitReason(t testing.TB, base, want string, match func(pipeline.Reason) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGet(t, base+"/readyz")
		var ready pipeline.Readiness
		if err := json.Unmarshal([]byte(body), &ready); err != nil {
			t.Fatalf("/readyz: %v: %s", err, body)
		}
		if code == 503 && slices.ContainsFunc(ready.Reasons, match) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d %s: want 503 naming %s", code, body, want)
		}
		time.Sleep(20 * time.Millisecond) // polling an external view
	}
}

var seriesRE = regexp.MustCompile(`^(\w+)(?:\{(.*)\})? (\S+)$`)
var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// metric returns the value of the series name{labels} in a Prometheus text
// exposition, and whether it is there.
func metric(body, name string, labels ...string) (float64, bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, line := range strings.Split(body, "\n") {
		m := seriesRE.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		got := map[string]string{}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			got[l[1]] = l[2]
		}
		if len(got) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			v, err := strconv.ParseFloat(m[3], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// probeSink asks /healthz and /readyz when the runtime closes it, which it
// does after shutdown began and before the endpoint stops.
type probeSink struct {
	*blackhole.Sink
	addr        func() string
	status      atomic.Int32
	readyStatus atomic.Int32
	readyBody   atomic.Value
}

func (p *probeSink) Close(ctx context.Context) error {
	resp, err := http.Get("http://" + p.addr() + "/healthz")
	if err == nil {
		p.status.Store(int32(resp.StatusCode))
		resp.Body.Close()
	}
	resp, err = http.Get("http://" + p.addr() + "/readyz")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		p.readyStatus.Store(int32(resp.StatusCode))
		p.readyBody.Store(string(b))
		resp.Body.Close()
	}
	return p.Sink.Close(ctx)
}

// Guarantee: /metrics exposes records in and out per component, batches
// resolved by status, and each partition's watermark and committed position
// (the committed gauge is what the source was last asked to commit), every
// counter from the start, the build and the Go runtime; /healthz answers 200
// while the process serves (shutting down included) and /readyz 200 while
// running and 503, saying why, once shutdown began.
func TestMetricsAndHealthEndpoints(t *testing.T) {
	src := gen(t, 0, 2, 100)
	var addr atomic.Value
	addrOf := func() string { return addr.Load().(string) }
	sink := &probeSink{Sink: blackhole.New(), addr: addrOf}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"even"}, Sink: sink})
	sp.Transforms = []pipeline.TransformSpec{{Name: "even", Inputs: []string{"gen"}, Transform: keepEven{}}}
	sp.Metrics.Address = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		once                   sync.Once
		body, health, ready    string
		healthCode, readyCode  int
		committed0, committed1 checkpoint.Position
	)
	// The hook runs in the checkpointer goroutine, after the gauges are
	// updated: the offsets the source holds now are the gauges' values.
	hook := pipeline.WithCommitted(func(string) {
		c0, c1 := src.Offsets().Get("gen/0"), src.Offsets().Get("gen/1")
		if c0 < 1000 || c1 < 1000 {
			return
		}
		once.Do(func() {
			committed0, committed1 = c0, c1
			_, body = httpGet(t, "http://"+addrOf()+"/metrics")
			healthCode, health = httpGet(t, "http://"+addrOf()+"/healthz")
			readyCode, ready = httpGet(t, "http://"+addrOf()+"/readyz")
			cancel()
		})
	})
	listening := pipeline.WithListening(func(a string) { addr.Store(a) })
	if err := pipeline.Run(ctx, sp, quiet, hook, listening); err != nil {
		t.Fatal(err)
	}
	if healthCode != http.StatusOK || strings.TrimSpace(health) != "ok" {
		t.Errorf("/healthz while running: %d %q, want 200 ok", healthCode, health)
	}
	if readyCode != http.StatusOK || !strings.Contains(ready, `"ready":true`) {
		t.Errorf("/readyz while running: %d %q, want 200 and ready", readyCode, ready)
	}
	if got := sink.status.Load(); got != http.StatusOK {
		t.Errorf("/healthz during shutdown: %d, want 200 (the process still works)", got)
	}
	if got, body := sink.readyStatus.Load(), sink.readyBody.Load(); got != http.StatusServiceUnavailable || !strings.Contains(body.(string), `"kind":"stopping"`) {
		t.Errorf("/readyz during shutdown: %d %v, want 503 saying it is stopping", got, body)
	}
	positive := []struct {
		name   string
		labels []string
	}{
		{"weir_records_out_total", []string{"component", "gen"}},
		{"weir_records_in_total", []string{"component", "even"}},
		{"weir_records_out_total", []string{"component", "even"}},
		{"weir_records_in_total", []string{"component", "out"}},
		{"weir_records_out_total", []string{"component", "out"}},
		{"weir_batches_issued_total", []string{"source", "gen"}},
		{"weir_batches_resolved_total", []string{"source", "gen", "status", "delivered"}},
		{"weir_sink_flush_duration_seconds_count", []string{"sink", "out"}},
	}
	for _, s := range positive {
		if v, ok := metric(body, s.name, s.labels...); !ok || v <= 0 {
			t.Errorf("%s%v = %v (present %v), want > 0", s.name, s.labels, v, ok)
		}
	}
	zero := []struct {
		name   string
		labels []string
	}{
		{"weir_records_rejected_total", []string{"component", "out"}},
		{"weir_sink_errors_total", []string{"sink", "out"}},
		{"weir_sink_consecutive_failures", []string{"sink", "out"}},
		{"weir_rewinds_total", []string{"source", "gen"}},
		{"weir_batches_resolved_total", []string{"source", "gen", "status", "failed"}},
	}
	for _, s := range zero {
		if v, ok := metric(body, s.name, s.labels...); !ok || v != 0 {
			t.Errorf("%s%v = %v (present %v), want present at 0", s.name, s.labels, v, ok)
		}
	}
	for _, prefix := range []string{"weir_build_info{", "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(body, "\n"+prefix) {
			t.Errorf("metrics lack %s", prefix)
		}
	}
	for p, want := range map[string]checkpoint.Position{"gen/0": committed0, "gen/1": committed1} {
		c, ok := metric(body, "weir_partition_committed_position", "source", "gen", "partition", p)
		if !ok || c != float64(want) {
			t.Errorf("weir_partition_committed_position %s = %v (present %v), want %d, the source's committed offset", p, c, ok, want)
		}
		w, ok := metric(body, "weir_partition_watermark_position", "source", "gen", "partition", p)
		if !ok || w < c {
			t.Errorf("weir_partition_watermark_position %s = %v (present %v), want at least the committed %v", p, w, ok, c)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// logCapture is a slog handler that sends the messages of warnings to a
// channel and counts them.
type logCapture struct {
	warns chan string
	n     *atomic.Int32
}

func (h logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h logCapture) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "partition stalled") {
		h.n.Add(1)
		select {
		case h.warns <- r.Message:
		default:
		}
	}
	return nil
}
func (h logCapture) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logCapture) WithGroup(string) slog.Handler      { return h }

// writeSignal signals after its nth Write: by then the records of every earlier
// Write are in the runtime's current group.
type writeSignal struct {
	*blackhole.Sink
	n      int
	writes int
	done   chan struct{}
}

func (w *writeSignal) Write(ctx context.Context, recs []record.Record) error {
	w.writes++
	if w.writes == w.n {
		close(w.done)
	}
	return w.Sink.Write(ctx, recs)
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// Guarantee: a partition whose oldest batch waits longer than StallWarning is
// reported on /debug/stalls, naming the partition, the batch and the sink
// whose current group holds it, and is logged once per batch.
func TestStallReportNamesPartitionBatchAndSink(t *testing.T) {
	src := idleAfter(2)
	sink := &writeSignal{Sink: blackhole.New(), n: 2, done: make(chan struct{})}
	// The group is never flushed by size or age: the sink holds the batches.
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
	sp.Checkpoint.StallWarning = time.Minute
	sp.Metrics.Address = "127.0.0.1:0"
	clock := newFakeClock()
	ticks := make(chan time.Time)
	var warned atomic.Int32
	logs := logCapture{warns: make(chan string, 1), n: &warned}
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(logs)), pipeline.WithClock(clock.now, ticks),
			pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	<-sink.done // both batches issued; the first is in the sink's group

	// Younger than StallWarning: listed, not logged.
	clock.add(10 * time.Second)
	ticks <- clock.now()
	ticks <- clock.now() // received only once the previous refresh finished
	var list []pipeline.Stall
	_, body := httpGet(t, base+"/debug/stalls")
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("/debug/stalls: %v: %s", err, body)
	}
	if len(list) != 1 || list[0].AgeMillis != 10_000 || warned.Load() != 0 {
		t.Fatalf("after 10s: stalls %+v, %d warnings; want one entry aged 10s and no warning", list, warned.Load())
	}

	clock.add(2 * time.Minute)
	ticks <- clock.now()
	<-logs.warns
	_, body = httpGet(t, base+"/debug/stalls")
	list = nil
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("/debug/stalls: %v: %s", err, body)
	}
	if len(list) != 1 {
		t.Fatalf("/debug/stalls lists %d partitions, want 1: %s", len(list), body)
	}
	st := list[0]
	if st.Source != "gen" || st.Partition != "p" || !strings.HasSuffix(st.Batch, "/s0") || st.Status != "pending" ||
		st.AgeMillis != (130*time.Second).Milliseconds() || len(st.HeldBy) != 1 || st.HeldBy[0] != "out" {
		t.Errorf("stall report %+v: want partition p, batch s0, pending, 130s old, held by out", st)
	}
	// Further refreshes do not log the same batch again.
	ticks <- clock.now()
	ticks <- clock.now()
	if n := warned.Load(); n != 1 {
		t.Errorf("%d stall warnings for one batch, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
