package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
	"github.com/weir-etl/weir/source/generate"
	_ "github.com/weir-etl/weir/source/http" // type http_server
	"github.com/weir-etl/weir/transform"
)

// getStatus reads /api/v1/status from base with the given query.
func getStatus(t testing.TB, base, query string) (*pipeline.Status, string) {
	t.Helper()
	code, body := httpGet(t, base+"/api/v1/status"+query)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/status%s: %d %s", query, code, body)
	}
	var st pipeline.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/api/v1/status: %v: %s", err, body)
	}
	if st.Version != pipeline.StatusVersion {
		t.Fatalf("status version %d, want %d", st.Version, pipeline.StatusVersion)
	}
	return &st, body
}

// waitServed waits until base serves /api/v1/status: on an embedder's mux,
// Run registers it once it has started, some time after it was called.
func waitServed(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/status")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/api/v1/status never served: %v", base, err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the registration, with a deadline
	}
}

// waitStatus reads the status until check returns "" (satisfied), and fails
// with check's last complaint and the document after the deadline.
func waitStatus(t *testing.T, base, query string, check func(*pipeline.Status) string) *pipeline.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, body := getStatus(t, base, query)
		why := check(st)
		if why == "" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status never showed what it should: %s\n%s", why, body)
		}
		time.Sleep(50 * time.Millisecond) // polling an external view for a condition, with a deadline
	}
}

func node(st *pipeline.Status, name string) *pipeline.StatusNode {
	for i := range st.Nodes {
		if st.Nodes[i].Name == name {
			return &st.Nodes[i]
		}
	}
	return nil
}

func partition(src *pipeline.SourceStatus, name string) *pipeline.PartitionStatus {
	for i := range src.Partitions {
		if src.Partitions[i].Name == name {
			return &src.Partitions[i]
		}
	}
	return nil
}

func hasEvent(st *pipeline.Status, kind pipeline.EventKind, match func(pipeline.Event) bool) bool {
	return slices.ContainsFunc(st.Events, func(e pipeline.Event) bool { return e.Kind == kind && match(e) })
}

// Guarantee: while a sink fails for good, /api/v1/status shows it failing
// since when, with its error, and names the partition it holds; that
// partition is listed first, stalled, explained in words naming the sink and
// its error; the other partition, routed to a healthy sink, is not stalled
// and its records flow at a non-zero rate; the graph has every component and
// the route's output names on its edges; the sink's failures and the
// partition's rewinds are among the events.
func TestStatusShowsStalledSinkErrorAndThePartitionItHolds(t *testing.T) {
	src, err := generate.New("gen", generate.Config{Partitions: 2, BatchSize: 10, Rate: 2000, Template: generate.DefaultTemplate})
	if err != nil {
		t.Fatal(err)
	}
	split, err := transform.NewRoute([]transform.RouteOutput{
		{Name: "held", Condition: `@origin.partition == "gen/0"`},
		{Name: "flowing", Condition: `@origin.partition != "gen/0"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "stuck", Inputs: []string{"split.held"}, Sink: brokenSink(errors.New("disk on fire")), GiveUpAfter: time.Hour},
		pipeline.SinkSpec{Name: "fine", Inputs: []string{"split.flowing"}, Sink: blackhole.New()})
	sp.Transforms = []pipeline.TransformSpec{{Name: "split", Inputs: []string{"gen"}, Router: split}}
	sp.Checkpoint.StallWarning = 200 * time.Millisecond
	sp.Metrics.Address = "127.0.0.1:0"
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, quiet, pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr

	st := waitStatus(t, base, "", func(st *pipeline.Status) string {
		stuck, fine, gen := node(st, "stuck"), node(st, "fine"), node(st, "gen")
		switch {
		case stuck == nil || fine == nil || gen == nil || node(st, "split") == nil:
			return fmt.Sprintf("nodes %+v: want gen, split, stuck and fine", st.Nodes)
		case stuck.State != "failing" || stuck.Since == nil || !strings.Contains(stuck.Error, "disk on fire"):
			return fmt.Sprintf("sink stuck: state %q since %v error %q, want failing since a time with its error", stuck.State, stuck.Since, stuck.Error)
		case !slices.Contains(stuck.Holding, pipeline.PartitionRef{Source: "gen", Partition: "gen/0"}):
			return fmt.Sprintf("sink stuck holds %v, want gen/0", stuck.Holding)
		case fine.State != "ok" || fine.OutPerSec <= 0 || fine.InPerSec <= 0 || gen.OutPerSec <= 0:
			return fmt.Sprintf("flowing path: fine %q in %.1f/s out %.1f/s, gen %.1f/s: want ok and non-zero rates", fine.State, fine.InPerSec, fine.OutPerSec, gen.OutPerSec)
		case len(st.Sources) != 1 || len(st.Sources[0].Partitions) != 2:
			return fmt.Sprintf("sources %+v: want gen with its 2 partitions", st.Sources)
		}
		src := &st.Sources[0]
		p0, p1 := partition(src, "gen/0"), partition(src, "gen/1")
		switch {
		case src.Partitions[0].Name != "gen/0" || !p0.Stalled || src.StalledCount != 1:
			return fmt.Sprintf("partitions %+v: want gen/0 first and the only one stalled", src.Partitions)
		case !slices.ContainsFunc(p0.FailingSinks, func(f pipeline.SinkFailure) bool {
			return f.Sink == "stuck" && strings.Contains(f.Error, "disk on fire")
		}):
			return fmt.Sprintf("gen/0 failing sinks %+v: want stuck with its error", p0.FailingSinks)
		case !strings.Contains(p0.Explanation, "Sink stuck") || !strings.Contains(p0.Explanation, "disk on fire"):
			return fmt.Sprintf("gen/0 explanation %q: want it to name sink stuck and its error", p0.Explanation)
		case p0.Rewinds == 0:
			return "gen/0 was not rewound yet"
		case p1.Stalled || p1.Watermark == 0:
			return fmt.Sprintf("gen/1 %+v: want it moving, not stalled", *p1)
		case !hasEvent(st, pipeline.EventSinkFailing, func(e pipeline.Event) bool { return e.Sink == "stuck" && strings.Contains(e.Message, "disk on fire") }):
			return "no sink_failing event for stuck"
		case !hasEvent(st, pipeline.EventRewind, func(e pipeline.Event) bool { return e.Source == "gen" && slices.Equal(e.Partitions, []string{"gen/0"}) }):
			return "no rewind event for gen/0"
		}
		return ""
	})
	if st.State != "running" || st.Ready || !slices.ContainsFunc(st.Reasons, func(r pipeline.Reason) bool { return r.Sink == "stuck" }) {
		t.Errorf("run state %q ready %v reasons %+v: want running, not ready because of sink stuck", st.State, st.Ready, st.Reasons)
	}
	if n := node(st, "split"); n.Kind != "transform" || n.Type != "route" || !slices.Equal(n.Outputs, []string{"held", "flowing"}) {
		t.Errorf("split node %+v: want a route transform with outputs held, flowing", *n)
	}
	if n := node(st, "stuck"); n.Kind != "sink" || n.Type != "conformance" {
		t.Errorf("stuck node kind %q type %q: want sink, conformance (its connector's package)", n.Kind, n.Type)
	}
	wantEdges := []pipeline.StatusEdge{{From: "gen", To: "split"}, {From: "split", To: "stuck", Output: "held"}, {From: "split", To: "fine", Output: "flowing"}}
	if !slices.Equal(st.Edges, wantEdges) {
		t.Errorf("edges %+v, want %+v", st.Edges, wantEdges)
	}
	cancel()
	// Stopped with the stuck sink still failing: the run says so.
	var ie *pipeline.IncompleteError
	if err := <-done; !errors.As(err, &ie) {
		t.Fatalf("Run = %v, want an IncompleteError (the stuck sink never wrote)", err)
	}
}

// quietSource assigns n partitions and never has data. On its first Poll it
// revokes the first partition and loses the second. It reports every
// partition's end (LagReporter): partition i ends at i.
type quietSource struct {
	n    int
	h    connector.Host
	ids  []checkpoint.Partition
	ends map[string]connector.Position
	once sync.Once
}

func newQuietSource(n int) *quietSource {
	s := &quietSource{n: n, ends: map[string]connector.Position{}}
	for i := range n {
		s.ends[quietName(i)] = connector.Position(i)
	}
	return s
}

func quietName(i int) string { return fmt.Sprintf("p%05d", i) }

func (s *quietSource) Open(ctx context.Context, h connector.Host) error {
	s.h = h
	for i := range s.n {
		s.ids = append(s.ids, h.Assign(quietName(i), 0))
	}
	return nil
}

func (s *quietSource) Poll(ctx context.Context, b *connector.Batch) error {
	var err error
	s.once.Do(func() {
		err = s.h.Revoke(ctx, s.ids[0])
		s.h.Lost(s.ids[1])
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *quietSource) Commit(context.Context, []connector.Commit) error { return nil }
func (s *quietSource) Seek(context.Context, checkpoint.Partition, connector.Position) error {
	return nil
}
func (s *quietSource) Close(context.Context) error { return nil }

// Ends implements pipeline.LagReporter; the map is never written after
// newQuietSource, so concurrent reads are safe.
func (s *quietSource) Ends() map[string]connector.Position { return s.ends }

// Guarantee: a source with 10,000 partitions is summarised, not dumped: the
// status counts them all and sums their lag, lists only the worst (100 by
// default, as many as asked up to a limit), largest lag first when none is
// stalled, each with its end and lag; a bad limit is refused. The 10,000
// assignments are one merged event, not 10,000; a revoke and a loss are
// events too. Nothing flows, so every rate is 0.
func TestStatusSummarisesTenThousandPartitions(t *testing.T) {
	const n = 10000
	src := newQuietSource(n)
	sp := &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "idle", Source: src}},
		Sinks:      []pipeline.SinkSpec{{Name: "out", Inputs: []string{"idle"}, Sink: blackhole.New()}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "127.0.0.1:0"},
	}
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithListening(func(a string) { addr <- a })) }()
	base := "http://" + <-addr

	st := waitStatus(t, base, "", func(st *pipeline.Status) string {
		if c := st.Sources[0].PartitionCount; c != n-2 {
			return fmt.Sprintf("%d partitions, want %d (all but the revoked and the lost one)", c, n-2)
		}
		if !hasEvent(st, pipeline.EventRevoked, func(e pipeline.Event) bool { return slices.Equal(e.Partitions, []string{quietName(0)}) }) {
			return "no revoked event yet"
		}
		return ""
	})
	ss := st.Sources[0]
	var wantLag int64
	for i := 2; i < n; i++ {
		wantLag += int64(i)
	}
	if ss.Lag == nil || *ss.Lag != wantLag || ss.StalledCount != 0 || len(ss.Partitions) != pipeline.DefaultStatusPartitions ||
		ss.PartitionsOmitted != n-2-pipeline.DefaultStatusPartitions {
		t.Errorf("summary: lag %v stalled %d listed %d omitted %d; want lag %d, 0 stalled, %d listed, %d omitted",
			ss.Lag, ss.StalledCount, len(ss.Partitions), ss.PartitionsOmitted, wantLag, pipeline.DefaultStatusPartitions, n-2-pipeline.DefaultStatusPartitions)
	}
	for k, p := range ss.Partitions {
		want := n - 1 - k // largest lag first
		if p.Name != quietName(want) || p.End == nil || *p.End != int64(want) || p.Lag == nil || *p.Lag != int64(want) || p.Committed != 0 || p.Status != "ok" {
			t.Fatalf("partition %d: %+v, want %s with end and lag %d, committed 0, ok", k, p, quietName(want), want)
		}
	}
	for _, nd := range st.Nodes {
		if nd.InPerSec != 0 || nd.OutPerSec != 0 {
			t.Errorf("node %s: %.2f/s in, %.2f/s out while nothing flows", nd.Name, nd.InPerSec, nd.OutPerSec)
		}
	}
	assigned := 0
	for _, e := range st.Events {
		if e.Kind == pipeline.EventAssigned {
			assigned += e.Count
			if len(e.Partitions) > 8 {
				t.Errorf("an assigned event names %d partitions, want at most 8", len(e.Partitions))
			}
		}
	}
	if assigned != n || len(st.Events) > 20 {
		t.Errorf("%d assignments in %d events, want %d merged into a few", assigned, len(st.Events), n)
	}
	for _, k := range []pipeline.EventKind{pipeline.EventRevoking, pipeline.EventRevoked} {
		if !hasEvent(st, k, func(e pipeline.Event) bool { return slices.Equal(e.Partitions, []string{quietName(0)}) }) {
			t.Errorf("no %s event for %s: %+v", k, quietName(0), st.Events)
		}
	}
	if !hasEvent(st, pipeline.EventLost, func(e pipeline.Event) bool { return slices.Equal(e.Partitions, []string{quietName(1)}) }) {
		t.Errorf("no lost event for %s: %+v", quietName(1), st.Events)
	}

	// Other limits.
	st, _ = getStatus(t, base, "?partitions=5")
	if got := len(st.Sources[0].Partitions); got != 5 || st.Sources[0].Partitions[0].Name != quietName(n-1) {
		t.Errorf("?partitions=5 listed %d, first %q; want 5, the largest lag first", got, st.Sources[0].Partitions[0].Name)
	}
	st, body := getStatus(t, base, "?partitions=0")
	if got := len(st.Sources[0].Partitions); got != 0 || st.Sources[0].PartitionCount != n-2 || len(body) > 16<<10 {
		t.Errorf("?partitions=0 listed %d of %d in %d bytes; want none of %d, a short document", got, st.Sources[0].PartitionCount, len(body), n-2)
	}
	for _, q := range []string{"?partitions=-1", "?partitions=lots", fmt.Sprintf("?partitions=%d", pipeline.MaxStatusPartitions+1)} {
		if code, body := httpGet(t, base+"/api/v1/status"+q); code != http.StatusBadRequest || !strings.Contains(body, "partitions=") {
			t.Errorf("GET %s: %d %q, want 400 naming the parameter", q, code, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func serve(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	resp := rec.Result()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// Guarantee: on an embedder's mux, the status page and /api/v1/status are
// served with the other endpoints; after Run returned, the status says the
// run stopped and why, and the page's assets are there, under a policy that
// lets it load nothing from elsewhere.
func TestStatusOnEmbeddersMuxAfterTheRunStopped(t *testing.T) {
	mux := http.NewServeMux()
	sp := fastSpec(gen(t, 1000, 2, 100), pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()})
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithServeMux(mux)); err != nil {
		t.Fatal(err)
	}
	resp, body := serve(t, mux, "/api/v1/status")
	var st pipeline.Status
	if err := json.Unmarshal([]byte(body), &st); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("/api/v1/status: %d %v %s", resp.StatusCode, err, body)
	}
	if st.State != "stopped" || node(&st, "gen").State != "finished" || node(&st, "gen").Out != 1000 || node(&st, "out").Out != 1000 {
		t.Errorf("after the run: state %q, gen %+v, out %+v; want stopped, gen finished having read 1000, out having written 1000", st.State, node(&st, "gen"), node(&st, "out"))
	}
	if !hasEvent(&st, pipeline.EventStopping, func(e pipeline.Event) bool { return strings.Contains(e.Message, "all input read and committed") }) {
		t.Errorf("events %+v: want the stop and its reason", st.Events)
	}
	if got := st.Sources[0].Partitions; len(got) != 2 || got[0].Committed != 500 || got[1].Committed != 500 {
		t.Errorf("partitions %+v: want both committed at 500", got)
	}

	resp, body = serve(t, mux, "/")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `src="weir/status.js"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("GET /: %d %q CSP %q: want the page, loading its script relatively, under a strict policy", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
	}
	for _, a := range []string{"/weir/status.js", "/weir/status.css"} {
		if resp, body := serve(t, mux, a); resp.StatusCode != http.StatusOK || len(body) < 1000 {
			t.Errorf("GET %s: %d, %d bytes", a, resp.StatusCode, len(body))
		}
	}
	if resp, _ := serve(t, mux, "/elsewhere"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /elsewhere: %d, want 404 (the page is at / only)", resp.StatusCode)
	}
}

// Guarantee: an embedder's mux that serves / itself keeps it; the status
// document is still served, and the run goes on.
func TestStatusPageLeavesAnEmbeddersRootAlone(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "the embedder's home") })
	sp := fastSpec(gen(t, 100, 1, 10), pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()})
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithServeMux(mux)); err != nil {
		t.Fatal(err)
	}
	if _, body := serve(t, mux, "/"); body != "the embedder's home" {
		t.Errorf("GET / = %q, want the embedder's own page", body)
	}
	if resp, _ := serve(t, mux, "/api/v1/status"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/status: %d, want 200", resp.StatusCode)
	}
}

// BenchmarkStatusTenThousandPartitions measures a read of /api/v1/status,
// the worst 100 of 10,000 partitions listed, through HTTP. Snapshots are
// taken at most every 200 ms, so most reads reuse one; a read that takes
// one is reported as snapshot-read-ms.
func BenchmarkStatusTenThousandPartitions(b *testing.B) {
	sp := &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "idle", Source: newQuietSource(10000)}},
		Sinks:      []pipeline.SinkSpec{{Name: "out", Inputs: []string{"idle"}, Sink: blackhole.New()}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: time.Second},
		Metrics:    pipeline.MetricsSettings{Address: "127.0.0.1:0"},
	}
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithListening(func(a string) { addr <- a })) }()
	base := "http://" + <-addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if st, _ := getStatus(b, base, ""); st.Sources[0].PartitionCount == 10000-2 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the partitions were never all assigned")
		}
	}
	time.Sleep(300 * time.Millisecond) // past the snapshot interval: the next read takes one
	t0 := time.Now()
	_, body := getStatus(b, base, "")
	snapshotRead := time.Since(t0)
	b.ResetTimer()
	for b.Loop() {
		if code, _ := httpGet(b, base+"/api/v1/status"); code != http.StatusOK {
			b.Fatal(code)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(snapshotRead.Microseconds())/1000, "snapshot-read-ms")
	b.ReportMetric(float64(len(body)), "bytes")
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// Guarantee: the status names a source and a sink by the type the pipeline
// file gave them (connector.RegisterSource and RegisterSink), not by the Go
// package that implements them: the HTTP source, in package http, is
// http_server.
func TestStatusNamesConnectorsByTheirRegisteredType(t *testing.T) {
	sp, err := config.Parse("typed.yaml", []byte(`
sources:
  inbox:
    type: http_server
    address: 127.0.0.1:0
    paths: [/in]
sinks:
  out:
    type: blackhole
    inputs: [inbox]
`))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Sources[0].Type != "http_server" || sp.Sinks[0].Type != "blackhole" {
		t.Fatalf("the loaded spec's types are %q and %q, want http_server and blackhole", sp.Sources[0].Type, sp.Sinks[0].Type)
	}
	mux := http.NewServeMux()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithServeMux(mux)) }()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	waitServed(t, srv.URL)
	st := waitStatus(t, srv.URL, "", func(st *pipeline.Status) string {
		if st.State != "running" {
			return "state " + st.State
		}
		return ""
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := node(st, "inbox"); n == nil || n.Type != "http_server" {
		t.Errorf("source node %+v: want type http_server, its type in the pipeline file", n)
	}
	if n := node(st, "out"); n == nil || n.Type != "blackhole" {
		t.Errorf("sink node %+v: want type blackhole", n)
	}
}

// Guarantee: a healthy sink that writes nothing because its sibling holds
// back the source they share is not shown "ok": it is "idle", waiting on
// that sibling; the transform before it, which passes the replays on, and
// the failing sibling are not idle. A dead letter sink that receives
// nothing stays ok (TestStatusShowsStalledSinkErrorAndThePartitionItHolds:
// a sink that moves records stays ok beside a failing one).
func TestStatusSaysWhatAnIdleSinkWaitsOn(t *testing.T) {
	src, err := generate.New("gen", generate.Config{Partitions: 1, BatchSize: 10, Rate: 2000, Template: generate.DefaultTemplate})
	if err != nil {
		t.Fatal(err)
	}
	pass, err := transform.NewFilter(`true`)
	if err != nil {
		t.Fatal(err)
	}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "stuck", Inputs: []string{"gen"}, Sink: brokenSink(errors.New("disk on fire")), GiveUpAfter: time.Hour},
		pipeline.SinkSpec{Name: "healthy", Inputs: []string{"pass"}, Sink: blackhole.New()})
	sp.Transforms = []pipeline.TransformSpec{{Name: "pass", Inputs: []string{"gen"}, Transform: pass}}
	sp.Sources[0].MaxInFlightBatches = 4
	sp.Checkpoint.StallWarning = 200 * time.Millisecond
	mux := http.NewServeMux()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithServeMux(mux)) }()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	waitServed(t, srv.URL)
	waitStatus(t, srv.URL, "", func(st *pipeline.Status) string {
		healthy, pass, stuck, gen := node(st, "healthy"), node(st, "pass"), node(st, "stuck"), node(st, "gen")
		switch {
		case healthy == nil || pass == nil || stuck == nil || gen == nil:
			return fmt.Sprintf("nodes %+v", st.Nodes)
		case stuck.State != "failing" || gen.State != "stalled":
			return fmt.Sprintf("stuck %q, gen %q: want failing and stalled", stuck.State, gen.State)
		case healthy.State != "idle" || !slices.Equal(healthy.WaitingOn, []string{"stuck"}):
			return fmt.Sprintf("healthy %q waiting on %v, writing %.1f/s: want idle, waiting on stuck", healthy.State, healthy.WaitingOn, healthy.OutPerSec)
		case pass.State != "ok" || pass.InPerSec == 0:
			return fmt.Sprintf("pass %q given %.1f/s: want ok, given the replays of gen/0", pass.State, pass.InPerSec)
		case len(stuck.WaitingOn) != 0:
			return fmt.Sprintf("stuck waits on %v: it is what the others wait on", stuck.WaitingOn)
		}
		return ""
	})
	cancel()
	<-done
}
