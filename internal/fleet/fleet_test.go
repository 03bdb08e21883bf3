package fleet_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/internal/fleet"
	"github.com/weir-etl/weir/pipeline"

	_ "github.com/weir-etl/weir/internal/builtin"
)

func load(name string, data []byte) (*pipeline.Spec, error) {
	return config.ParseWith(name, data, config.Options{})
}

func newFleet(t *testing.T, api fleet.APIOptions) *fleet.Fleet {
	t.Helper()
	f := fleet.New(fleet.Options{Load: load, API: api})
	t.Cleanup(f.Stop)
	return f
}

// waitFor polls cond until it holds, or fails t after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func info(t *testing.T, f *fleet.Fleet, name string) fleet.Info {
	t.Helper()
	for _, p := range f.Summary().Pipelines {
		if p.Name == name {
			return p.Info
		}
	}
	t.Fatalf("no pipeline %s", name)
	return fleet.Info{}
}

// tailConfig reads the ndjson files of in (tail mode) into out.
func tailConfig(in, state, out, extra string) string {
	return fmt.Sprintf(`sources:
  f:
    type: file
    paths: [%s/*.ndjson]
    format: ndjson
    mode: tail
    data_dir: %s
sinks:
  out:
    type: file
    inputs: [f]
    path: %s
    format: ndjson
    compression: none
    batch: { max_records: 500, max_age: 50ms }
%s`, in, state, out, extra)
}

func writeLines(t *testing.T, path string, from, n int) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(fh)
	for i := from; i < from+n; i++ {
		fmt.Fprintf(w, "{\"n\":%d}\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// outputLines counts the records under dir, and how many distinct ones.
func outputLines(t *testing.T, dir string) (all, distinct int) {
	t.Helper()
	seen := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				all++
				seen[l] = true
			}
		}
		return nil
	})
	return all, len(seen)
}

// One pipeline failing leaves the others running, and its failure is its
// own state.
func TestOneFailingPipelineLeavesTheOthers(t *testing.T) {
	f := newFleet(t, fleet.APIOptions{})
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	writeLines(t, filepath.Join(in, "a.ndjson"), 0, 100)
	good := tailConfig(in, filepath.Join(dir, "state"), filepath.Join(dir, "out"), "")
	// A map that fails on every record halts its pipeline (the default
	// failure policy) at its first batch.
	bad := `sources:
  g:
    type: generate
    count: 0
    template: '{"id":{{id}}}'
transforms:
  m:
    type: map
    inputs: [g]
    set:
      y: 'missing.field + 1'
sinks:
  bh:
    type: blackhole
    inputs: [m]
`
	if _, err := f.Apply("good", "good.yaml", []byte(good)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Apply("bad", "bad.yaml", []byte(bad)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bad pipeline to fail", func() bool { return info(t, f, "bad").State == fleet.Failed })
	waitFor(t, "the good pipeline to write its 100 records", func() bool { all, _ := outputLines(t, filepath.Join(dir, "out")); return all == 100 })
	writeLines(t, filepath.Join(in, "a.ndjson"), 100, 100)
	waitFor(t, "the good pipeline to go on after the other failed", func() bool { all, _ := outputLines(t, filepath.Join(dir, "out")); return all == 200 })
	if st := info(t, f, "good").State; st != fleet.Running {
		t.Fatalf("good is %s, want running", st)
	}
	if e := info(t, f, "bad").Error; e == "" {
		t.Fatal("the failed pipeline says no error")
	}
}

// tailPipe starts a tail pipeline called name over dir/in, and returns
// the input file and the output directory.
func tailPipe(t *testing.T, f *fleet.Fleet, name, dir string) (input, out string) {
	t.Helper()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	input, out = filepath.Join(in, "a.ndjson"), filepath.Join(dir, "out")
	writeLines(t, input, 0, 0)
	if _, err := f.Apply(name, name+".yaml", []byte(tailConfig(in, filepath.Join(dir, "state"), out, ""))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, name+" to run", func() bool { return info(t, f, name).State == fleet.Running })
	return input, out
}

func metricValue(t *testing.T, h http.Handler, series string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var x float64
			fmt.Sscan(v, &x)
			return x
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return 0
}

// The counters of a pipeline are those since the process started: 20
// reloads later they equal the records there were, in the API, the
// summary and /metrics, with the reloads counted.
func TestCountersSurviveReloads(t *testing.T) {
	f := newFleet(t, fleet.APIOptions{})
	dir := t.TempDir()
	input, out := tailPipe(t, f, "p", dir)
	in := filepath.Dir(input)
	const reloads, per = 20, 300
	for i := 0; i < reloads; i++ {
		writeLines(t, input, i*per, per)
		cfg := tailConfig(in, filepath.Join(dir, "state"), out, fmt.Sprintf("# edit %d\n", i))
		if _, err := f.Apply("p", "p.yaml", []byte(cfg)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the reload to start its run", func() bool { in := info(t, f, "p"); return in.Reloads == i+1 && in.State == fleet.Running })
	}
	total := reloads * per
	waitFor(t, "every record written", func() bool { _, d := outputLines(t, out); return d == total })
	waitFor(t, "the counts to reach the output", func() bool { return info(t, f, "p").Counts.Written >= int64(total) })
	all, distinct := outputLines(t, out)
	c := info(t, f, "p").Counts
	if c.Read != int64(all) || c.Written != int64(all) {
		t.Errorf("counts read %d, written %d; the output holds %d records (%d distinct)", c.Read, c.Written, all, distinct)
	}
	h := f.Handler(false)
	if v := metricValue(t, h, `weir_records_out_total{pipeline="p",component="f"}`); v != float64(all) {
		t.Errorf("/metrics: source f emitted %v, want %d", v, all)
	}
	if v := metricValue(t, h, `weir_pipeline_reloads_total{pipeline="p"}`); v != reloads {
		t.Errorf("/metrics: %v reloads, want %d", v, reloads)
	}
	f.Stop()
	rep := f.Summary().Pipelines[0].Report
	if rep == nil || rep.Sources[0].Read != int64(all) || rep.Sinks[0].Written != int64(all) {
		t.Errorf("the summary over %d runs: %+v, want %d read and written", reloads+1, rep, all)
	}
	t.Logf("%d records, %d in the output (%d distinct) after %d reloads", total, all, distinct, reloads)
}

// Paused, a pipeline reads nothing new past the one Poll each source may
// have been waiting in; resumed, it reads what came.
func TestPauseAndResume(t *testing.T) {
	f := newFleet(t, fleet.APIOptions{})
	input, out := tailPipe(t, f, "p", t.TempDir())
	writeLines(t, input, 0, 100)
	waitFor(t, "100 written", func() bool { all, _ := outputLines(t, out); return all == 100 })
	if err := f.Pause("p"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "paused", func() bool { return info(t, f, "p").State == fleet.Paused })
	// The tail source's poller waits inside a Poll for data: the first
	// lines after the pause end that Poll (one batch, delivered and
	// committed like anything in flight); then it waits on the pause.
	writeLines(t, input, 100, 100)
	time.Sleep(time.Second)
	first := info(t, f, "p").Counts.Read
	writeLines(t, input, 200, 100)
	// Nothing shows that nothing happens but time: a second, on a busy
	// machine, in which the tail source would have read the lines.
	time.Sleep(time.Second)
	if got := info(t, f, "p").Counts.Read; got != first {
		t.Fatalf("paused, the pipeline read %d records more after its Poll in flight", got-first)
	}
	if err := f.Resume("p"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "300 written after the resume", func() bool { all, _ := outputLines(t, out); return all == 300 })
}

type recordingBody struct {
	read bool
	r    io.Reader
}

func (b *recordingBody) Read(p []byte) (int, error) { b.read = true; return b.r.Read(p) }

func do(t *testing.T, h http.Handler, method, path, token string, body io.Reader) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The API: a bad configuration is 400 with every problem and the running
// one goes on; changes need --api; beyond loopback, the token, checked
// before the body is read; the token never in an answer.
func TestAPIRules(t *testing.T) {
	const token = "s3cret-token-value"
	f := newFleet(t, fleet.APIOptions{Mutate: true, Token: token})
	tailPipe(t, f, "p", t.TempDir())
	h := f.Handler(true)

	rec := do(t, h, "PUT", "/api/v1/pipelines/p", token, strings.NewReader("sources:\n  g:\n    type: generat\n"))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("a bad configuration: %d %s", rec.Code, rec.Body)
	}
	var e struct {
		Error    string   `json:"error"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e.Problems) < 2 || !strings.Contains(strings.Join(e.Problems, "\n"), `did you mean "generate"`) {
		t.Fatalf("the problems of a bad configuration: %s", rec.Body)
	}
	_, verr := load("api", []byte("sources:\n  g:\n    type: generat\n"))
	if want := verr.Error(); !strings.Contains(want, e.Problems[0]) {
		t.Errorf("the API's problems are not weir validate's:\n%s\nvs\n%s", strings.Join(e.Problems, "\n"), want)
	}
	if st := info(t, f, "p"); st.State != fleet.Running || st.Reloads != 0 {
		t.Fatalf("after a refused configuration the pipeline is %s with %d reloads", st.State, st.Reloads)
	}

	for _, tok := range []string{"", "wrong"} {
		body := &recordingBody{r: strings.NewReader("x")}
		rec := do(t, h, "PUT", "/api/v1/pipelines/p", tok, body)
		if rec.Code != http.StatusUnauthorized || body.read {
			t.Errorf("token %q: %d (body read: %v), want 401 before the body is read", tok, rec.Code, body.read)
		}
		if strings.Contains(rec.Body.String(), token) {
			t.Errorf("the refusal shows the token: %s", rec.Body)
		}
		if rec := do(t, h, "GET", "/api/v1/pipelines", tok, nil); rec.Code != http.StatusUnauthorized {
			t.Errorf("token %q: reading the pipelines: %d, want 401", tok, rec.Code)
		}
	}
	if rec := do(t, h, "GET", "/api/v1/pipelines/p", token, nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "mode: tail") {
		t.Errorf("get with the token: %d %s", rec.Code, rec.Body)
	}

	// Without a token, beyond loopback: nothing that reads configurations.
	open := newFleet(t, fleet.APIOptions{})
	if rec := do(t, open.Handler(true), "GET", "/api/v1/pipelines", "", nil); rec.Code != http.StatusForbidden {
		t.Errorf("no token, beyond loopback: %d, want 403", rec.Code)
	}
	// Without --api, on loopback: reads, does not change.
	lh := open.Handler(false)
	if rec := do(t, lh, "GET", "/api/v1/pipelines", "", nil); rec.Code != http.StatusOK {
		t.Errorf("read on loopback: %d", rec.Code)
	}
	body := &recordingBody{r: strings.NewReader("x")}
	if rec := do(t, lh, "PUT", "/api/v1/pipelines/q", "", body); rec.Code != http.StatusForbidden || body.read {
		t.Errorf("a change without --api: %d (body read %v), want 403", rec.Code, body.read)
	}
}

// A reset needs the pipeline paused and the source's name confirmed; it
// then reads the source again from its start.
func TestResetWhilePaused(t *testing.T) {
	f := newFleet(t, fleet.APIOptions{Mutate: true})
	input, out := tailPipe(t, f, "p", t.TempDir())
	h := f.Handler(false)
	writeLines(t, input, 0, 50)
	waitFor(t, "50 written", func() bool { all, _ := outputLines(t, out); return all == 50 })
	reset := func(body string) *httptest.ResponseRecorder {
		return do(t, h, "POST", "/api/v1/pipelines/p/reset", "", strings.NewReader(body))
	}
	if rec := reset(`{"source":"f","confirm":"f"}`); rec.Code != http.StatusConflict {
		t.Fatalf("reset while running: %d %s, want 409", rec.Code, rec.Body)
	}
	if rec := do(t, h, "POST", "/api/v1/pipelines/p/pause", "", nil); rec.Code != http.StatusOK {
		t.Fatal(rec.Body)
	}
	waitFor(t, "paused", func() bool { return info(t, f, "p").State == fleet.Paused })
	if rec := reset(`{"source":"f"}`); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "confirm") {
		t.Fatalf("reset without confirm: %d %s", rec.Code, rec.Body)
	}
	if rec := reset(`{"source":"nope","confirm":"nope"}`); rec.Code != http.StatusBadRequest {
		t.Fatalf("reset of an unknown source: %d %s", rec.Code, rec.Body)
	}
	if rec := reset(`{"source":"f","confirm":"f"}`); rec.Code != http.StatusOK {
		t.Fatalf("reset: %d %s", rec.Code, rec.Body)
	}
	waitFor(t, "paused again after the reset", func() bool { return info(t, f, "p").State == fleet.Paused })
	if all, _ := outputLines(t, out); all != 50 {
		t.Fatalf("the reset pipeline read while paused: %d records", all)
	}
	if rec := do(t, h, "POST", "/api/v1/pipelines/p/resume", "", nil); rec.Code != http.StatusOK {
		t.Fatal(rec.Body)
	}
	waitFor(t, "the input read again from its start", func() bool { all, d := outputLines(t, out); return all == 100 && d == 50 })
	if rec := do(t, h, "DELETE", "/api/v1/pipelines/p", "", nil); rec.Code != http.StatusOK {
		t.Fatal(rec.Body)
	}
	if rec := do(t, h, "GET", "/api/v1/pipelines/p", "", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("a deleted pipeline: %d", rec.Code)
	}
}

// The OpenAPI document parses, and lists exactly the routes of the mux.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	f := newFleet(t, fleet.APIOptions{Mutate: true})
	h := f.Handler(false)
	rec := do(t, h, "GET", "/api/v1/openapi.json", "", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("the document does not parse as OpenAPI 3: %v (%q)", err, doc.OpenAPI)
	}
	inDoc := map[string]bool{}
	for path, ops := range doc.Paths {
		for m, op := range ops {
			inDoc[strings.ToUpper(m)+" "+path] = true
			var o struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || len(o.Responses) == 0 {
				t.Errorf("%s %s: no responses (%v)", m, path, err)
			}
		}
	}
	inMux := map[string]bool{}
	for _, r := range fleet.Routes() {
		inMux[r[0]+" "+r[1]] = true
		if !inDoc[r[0]+" "+r[1]] {
			t.Errorf("route %s %s is not in the OpenAPI document", r[0], r[1])
		}
	}
	for r := range inDoc {
		if !inMux[r] {
			t.Errorf("the OpenAPI document lists %s, which the mux does not serve", r)
		}
		method, path, _ := strings.Cut(r, " ")
		path = strings.ReplaceAll(path, "{name}", "nosuch")
		rec := do(t, h, method, path, "", strings.NewReader("{}"))
		if rec.Code == http.StatusMethodNotAllowed || rec.Code == http.StatusNotFound && !strings.Contains(rec.Body.String(), "no such pipeline") {
			t.Errorf("%s: the mux answers %d %s", r, rec.Code, rec.Body)
		}
	}
}

var _ = context.Background

// A pipeline's own endpoints are under /pipelines/NAME/: its status page
// (which lists the fleet's pipelines), its status document and its run's
// metrics; / lists every pipeline with its state.
func TestPipelineEndpoints(t *testing.T) {
	f := newFleet(t, fleet.APIOptions{})
	tailPipe(t, f, "p", t.TempDir())
	h := f.Handler(false)
	waitFor(t, "the run's endpoints", func() bool { return do(t, h, "GET", "/pipelines/p/healthz", "", nil).Code == http.StatusOK })
	if rec := do(t, h, "GET", "/pipelines/p/", "", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `id="pipelines"`) {
		t.Errorf("the status page: %d %.200s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", "/pipelines/p/api/v1/status", "", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"sources"`) {
		t.Errorf("the status document: %d %.200s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", "/", "", nil); !strings.Contains(rec.Body.String(), `href="pipelines/p/"`) || !strings.Contains(rec.Body.String(), "running") {
		t.Errorf("/: %s", rec.Body)
	}
	// Beyond loopback without a token, the records stay in.
	if rec := do(t, f.Handler(true), "GET", "/pipelines/p/api/v1/status", "", nil); rec.Code != http.StatusForbidden {
		t.Errorf("the status beyond loopback without a token: %d", rec.Code)
	}
}
