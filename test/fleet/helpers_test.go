//go:build e2e || integration

package fleet_test

import (
	"bufio"
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

// weir is one running weir run -d.
type weir struct {
	cmd    *exec.Cmd
	addr   string
	stderr *weirtest.SyncBuffer
	done   chan struct{}
	err    error
}

func freeAddr(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// start runs bin with args and waits for its /healthz on addr.
func start(t *testing.T, bin, addr string, env []string, args ...string) *weir {
	t.Helper()
	w := &weir{addr: addr, stderr: &weirtest.SyncBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(bin, append([]string{"run", "--metrics-addr", addr}, args...)...)
	w.cmd.Env = append(os.Environ(), env...)
	w.cmd.Stdout, w.cmd.Stderr = io.Discard, w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.err = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() {
			t.Logf("weir's stderr:\n%s", weirtest.Last(w.stderr.String(), 40))
		}
	})
	host := strings.Replace(addr, "0.0.0.0", "127.0.0.1", 1)
	w.addr = host
	weirtest.WaitFor(t, "weir's /healthz", time.Minute, func() bool {
		select {
		case <-w.done:
			t.Fatalf("weir exited: %v\n%s", w.err, w.stderr)
		default:
		}
		resp, err := http.Get("http://" + host + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return w
}

// call sends a request to the API and returns the status and body.
func (w *weir) call(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+w.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pipeInfo is what the API says of a pipeline.
type pipeInfo struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Runs    int    `json:"runs"`
	Reloads int    `json:"reloads"`
	Error   string `json:"error"`
	Counts  struct {
		Read, Written int64
	} `json:"counts"`
}

func (w *weir) pipelines(t *testing.T, token string) map[string]pipeInfo {
	t.Helper()
	code, body := w.call(t, "GET", "/api/v1/pipelines", token, "")
	if code != 200 {
		t.Fatalf("GET /api/v1/pipelines: %d %s", code, body)
	}
	var l struct{ Pipelines []pipeInfo }
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	out := map[string]pipeInfo{}
	for _, p := range l.Pipelines {
		out[p.Name] = p
	}
	return out
}

// metric returns the value of one series of /metrics, and whether it is there.
func (w *weir) metric(t *testing.T, series string) (float64, bool) {
	t.Helper()
	_, body := w.call(t, "GET", "/metrics", "", "")
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var x float64
			fmt.Sscan(v, &x)
			return x, true
		}
	}
	return 0, false
}

// appender appends numbered ndjson lines to a file.
type appender struct {
	path string
	n    int
}

func (a *appender) add(t *testing.T, k int) {
	t.Helper()
	fh, err := os.OpenFile(a.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(fh)
	for range k {
		fmt.Fprintf(bw, "{\"n\":%d}\n", a.n)
		a.n++
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
}

// output counts the records of a file sink's directory, by n.
func output(t *testing.T, dir string) (map[int64]int, int) {
	t.Helper()
	count := map[int64]int{}
	all := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || !strings.HasSuffix(d.Name(), ".ndjson") {
			return nil
		}
		fh, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var r struct{ N int64 }
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				count[r.N]++
				all++
			}
		}
		return nil
	})
	return count, all
}

// tailYAML is a file source tailing DIR/in into the file sink DIR/out.
func tailYAML(dir, extra string) string {
	return fmt.Sprintf(`sources:
  in:
    type: file
    paths: [%[1]s/in/*.ndjson]
    format: ndjson
    mode: tail
    poll_interval: 5ms
    batch_size: 50
    data_dir: %[1]s/state
transforms:
  tag: { type: map, inputs: [in], set: { v: '%[2]s' } }
sinks:
  out:
    type: file
    inputs: [tag]
    path: %[1]s/out
    format: ndjson
    compression: none
    batch: { max_records: 100, max_age: 20ms }
checkpoint: { commit_interval: 10ms, max_in_flight_batches: 4 }
`, dir, extra)
}

const generateYAML = `sources:
  g:
    type: generate
    count: 0
    batch_size: 100
    template: '{"id":{{id}}}'
sinks:
  bh:
    type: blackhole
    inputs: [g]
`

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	// Written aside and renamed, as an editor does: weir never reads half a file.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// checkDelivered fails t unless every line of a reached dir/out, with at
// most bound duplicates.
func checkDelivered(t *testing.T, name string, a *appender, out string, bound int) {
	t.Helper()
	weirtest.WaitFor(t, name+": every line written", 2*time.Minute, func() bool {
		c, _ := output(t, out)
		return len(c) == a.n
	})
	c, all := output(t, out)
	for i := range int64(a.n) {
		if c[i] == 0 {
			t.Errorf("%s: line %d lost", name, i)
		}
	}
	if dups := all - len(c); dups > bound {
		t.Errorf("%s: %d duplicates, more than the %d that can be in flight", name, dups, bound)
	} else {
		t.Logf("%s: %d lines, %d records written, %d duplicates (bound %d)", name, a.n, all, dups, bound)
	}
}

// metricPrefix returns the value of the first series of /metrics that
// begins with prefix.
func (w *weir) metricPrefix(t *testing.T, prefix string) (float64, bool) {
	t.Helper()
	_, body := w.call(t, "GET", "/metrics", "", "")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			var x float64
			fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &x)
			return x, true
		}
	}
	return 0, false
}
