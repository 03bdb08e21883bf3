//go:build integration

package iceberg_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// restServer runs an Apache Iceberg REST catalog of the test's own (the one
// .ci/iceberg-rest.sh serves, on another port and directory), so that the
// test can stop and start it.
type restServer struct {
	t        *testing.T
	port     string
	dir, uri string
}

func (r *restServer) script(cmd string) {
	r.t.Helper()
	c := exec.Command("bash", "../../.ci/iceberg-rest.sh", cmd)
	c.Env = append(os.Environ(), "WEIR_ICEBERG_REST_PORT="+r.port, "WEIR_ICEBERG_REST_DIR="+r.dir)
	if out, err := c.CombinedOutput(); err != nil {
		r.t.Fatalf("iceberg-rest.sh %s: %v\n%s", cmd, err, out)
	}
}

func newRESTServer(t *testing.T) *restServer {
	if os.Getenv("WEIR_ICEBERG_REST_URI") == "" {
		t.Skip("no REST catalog set up: bash .ci/iceberg-rest.sh start && eval \"$(bash .ci/iceberg-rest.sh env)\"")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	r := &restServer{t: t, port: port, dir: t.TempDir()}
	if d := os.Getenv("WEIR_ICEBERG_KEEP"); d != "" {
		r.dir = d + "-rest"
		os.RemoveAll(r.dir)
	}
	r.uri = "http://127.0.0.1:" + port
	r.script("start")
	t.Cleanup(func() { r.script("stop") })
	return r
}

// table returns the table's metadata location and current snapshot, from
// the REST server's loadTable answer.
func (r *restServer) table(ns, name string) (location string, snapshot *int64) {
	resp, err := http.Get(r.uri + "/v1/namespaces/" + ns + "/tables/" + name)
	if err != nil {
		return "", nil
	}
	defer resp.Body.Close()
	var body struct {
		Location string `json:"metadata-location"`
		Metadata struct {
			Current *int64 `json:"current-snapshot-id"`
		} `json:"metadata"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return "", nil
	}
	return body.Location, body.Metadata.Current
}

// A catalog that goes away while weir runs: the sink's flushes fail and are
// retried with backoff; within stall_warning /readyz answers 503 naming the
// sink and the unreachable catalog; once the server is back the run goes
// on and finishes, and DuckDB counts every kept line once.
func TestCatalogOutageAtRunTimeIsVisible(t *testing.T) {
	rs := newRESTServer(t)
	dir := t.TempDir()
	if d := os.Getenv("WEIR_ICEBERG_KEEP"); d != "" {
		dir = d
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
	}
	const files, lines = 2, 50_000
	writeLines(t, filepath.Join(dir, "input"), files, lines)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "weir.yaml")
	yaml := fmt.Sprintf(`
sources:
  in: { type: file, paths: [%[1]s/input/*.ndjson], format: ndjson, mode: once, data_dir: %[1]s/state }
sinks:
  lake:
    type: iceberg
    inputs: [in]
    catalog: { type: rest, uri: %[2]s, name: rest }
    namespace: outage
    table: ev
    create_table: true
    cleanup_min_age: 0s
    columns: [{ name: id, type: long, required: true }]
    batch: { max_records: 500, max_age: 20ms }
    retry: { initial_backoff: 100ms, max_backoff: 1s }
checkpoint: { commit_interval: 100ms, stall_warning: 2s }
metrics: { address: %[3]s }
`, dir, rs.uri, metrics)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWeir(t, bins.Build(t, ""), cfg, "weir", nil)
	weirtest.WaitFor(t, "a first snapshot", time.Minute, func() bool {
		_, snap := rs.table("outage", "ev")
		return snap != nil
	})
	rs.script("stop")
	stopped := time.Now()
	var reason, last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("/readyz last answered: %s\nweir's log:\n%s", last, weirtest.Tail(p.Log, 40))
		}
	})
	weirtest.WaitFor(t, "/readyz to answer 503 naming the sink", time.Minute, func() bool {
		select {
		case <-p.Done:
			t.Fatalf("weir ended (%v) while the catalog was down:\n%s", p.Err, weirtest.Tail(p.Log, 20))
		default:
		}
		resp, err := http.Get("http://" + metrics + "/readyz")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "lake") && strings.Contains(string(body), "connection refused") {
			reason = string(body)
			return true
		}
		return false
	})
	t.Logf("/readyz 503 %v after the catalog stopped: %s", time.Since(stopped).Round(100*time.Millisecond), strings.TrimSpace(reason))
	rs.script("start")
	select {
	case <-p.Done:
	case <-time.After(3 * time.Minute):
		t.Fatal("weir did not finish once the catalog was back")
	}
	if p.Err != nil {
		t.Fatalf("weir exited with %v:\n%s", p.Err, weirtest.Tail(p.Log, 20))
	}
	if log, _ := os.ReadFile(p.Log); !strings.Contains(string(log), "stalled") {
		t.Errorf("no stall warning in the log:\n%s", weirtest.Tail(p.Log, 20))
	}
	loc, _ := rs.table("outage", "ev")
	n, d := readCount(t, "duckdb", "count", loc)
	if want := int64(files * lines); n != want || d != want {
		t.Fatalf("DuckDB counts %d rows, %d distinct in %s; want %d of each\n%s", n, d, loc, want, weirtest.Tail(p.Log, 40))
	}
}
