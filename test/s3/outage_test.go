//go:build integration

package s3

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/weir-etl/weir/internal/testkit/s3test"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
	"github.com/weir-etl/weir/pipeline"
)

// privateServer starts a versitygw of the test's own, on a port and
// directory of its own, with the credentials of the environment: the test
// stops it with SIGSTOP, which the shared server must never see. It returns
// its endpoint and process.
func privateServer(t *testing.T) (string, *os.Process) {
	t.Helper()
	s3test.Endpoint(t) // skips without a server: the binary comes with it
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "versitygw")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no versitygw at %s (bash .ci/s3.sh install)", bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", addr, "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+os.Getenv("AWS_ACCESS_KEY_ID"), "ROOT_SECRET_KEY="+os.Getenv("AWS_SECRET_ACCESS_KEY"))
	logf, _ := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		<-done
	})
	ep := "http://" + addr
	weirtest.WaitFor(t, "the private S3 server answers", time.Minute, func() bool {
		resp, err := http.Get(ep + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return ep, cmd.Process
}

const outageYAML = `
sources:
  files:
    type: file
    paths: [%[1]s/input/*.ndjson]
    mode: tail
    poll_interval: 50ms
    data_dir: %[1]s/state
  objects:
    type: s3
    bucket: %[2]s
    endpoint: %[3]s
    prefix: in/
    mode: watch
    scan_interval: 200ms
    request_timeout: 2s
    data_dir: %[1]s/state
sinks:
  lake:
    type: s3
    inputs: [files]
    bucket: %[2]s
    endpoint: %[3]s
    prefix: out/
    request_timeout: 2s
    batch: { max_age: 100ms }
    retry: { max_backoff: 1s }
    give_up_after: 10m
  copy:
    type: file
    inputs: [objects]
    path: %[1]s/copy
    batch: { max_age: 100ms }
checkpoint:
  commit_interval: 100ms
  stall_warning: 2s
metrics: { address: "%[4]s" }
`

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v: %s", url, err, b)
	}
	return resp.StatusCode
}

// lakeLines counts the lines of the lake's objects.
func lakeLines(t *testing.T, cl *s3.Client, bucket string) (int, map[string]int) {
	seen := map[string]int{}
	n := 0
	for _, k := range s3test.Keys(t, cl, bucket, "out/") {
		if strings.HasPrefix(k, "out/_weir/") {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(s3test.Get(t, cl, bucket, k)))
		for sc.Scan() {
			seen[sc.Text()]++
			n++
		}
	}
	return n, seen
}

// The server stops answering mid-run (SIGSTOP of a server of the test's
// own): weir waits, /readyz and the status say so within stall_warning,
// and when the server answers again weir goes on by itself: every line
// reaches the bucket once, every object the output.
func TestOutage(t *testing.T) {
	outage := 10 * time.Second
	if full() {
		outage = 30 * time.Second
	}
	ep, server := privateServer(t)
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "input"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	metrics := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "weir.yaml")
	writeFile(t, cfg, fmt.Sprintf(outageYAML, dir, bucket, ep, metrics))
	in, err := os.Create(filepath.Join(dir, "input", "a.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	lines := 0
	appendLines := func(n int) {
		for range n {
			fmt.Fprintf(in, "{\"line\":%d}\n", lines)
			lines++
		}
	}
	objects := 0
	putObject := func() {
		s3test.Put(t, cl, bucket, fmt.Sprintf("in/%04d.ndjson", objects), fmt.Appendf(nil, "{\"object\":%d}\n", objects))
		objects++
	}
	appendLines(100)
	putObject()
	p := startWeir(t, bins.Build(t, ""), cfg)
	base := "http://" + metrics
	copied := func() int { return len(outputIDsOf(t, filepath.Join(dir, "copy"), `"object"`)) }
	weirtest.WaitFor(t, "the first lines and object through", time.Minute, func() bool {
		n, _ := lakeLines(t, cl, bucket)
		return n == lines && copied() == objects
	})
	var ready pipeline.Readiness
	if code := getJSON(t, base+"/readyz", &ready); code != 200 {
		t.Fatalf("/readyz %d %+v before the outage", code, ready)
	}

	// The outage: the server stops; more lines arrive for the sink meanwhile.
	stopped := time.Now()
	if err := server.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	appendLines(100)
	var seen time.Duration
	var srcReason, sinkReason bool
	weirtest.WaitFor(t, "/readyz to name the source and the sink's stall", outage, func() bool {
		code := getJSON(t, base+"/readyz", &ready)
		srcReason, sinkReason = false, false
		for _, r := range ready.Reasons {
			srcReason = srcReason || (r.Kind == "source" && r.Source == "objects")
			sinkReason = sinkReason || (r.Kind == "sink" && r.Sink == "lake") || (r.Kind == "partition" && r.Source == "files")
		}
		seen = time.Since(stopped)
		return code == 503 && srcReason && sinkReason
	})
	t.Logf("/readyz said so %v after the server stopped (stall_warning 2s, request_timeout 2s): %+v", seen.Round(100*time.Millisecond), ready.Reasons)
	var st pipeline.Status
	getJSON(t, base+"/api/v1/status", &st)
	states := map[string]string{}
	for _, n := range st.Nodes {
		states[n.Name] = n.State
	}
	if states["objects"] != "failing" || (states["lake"] != "failing" && states["lake"] != "retrying" && states["files"] != "stalled") {
		t.Errorf("status nodes %v during the outage: want objects failing and lake failing, retrying or files stalled", states)
	}
	for _, s := range st.Sources {
		if s.Name == "objects" && (s.Failing == nil || s.Failing.Error == "") {
			t.Errorf("status of source objects %+v: want its failure", s)
		}
	}
	time.Sleep(time.Until(stopped.Add(outage)))
	if err := server.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("the server answers again after %v", time.Since(stopped).Round(100*time.Millisecond))

	// Back by itself: the lines written during the outage reach the bucket,
	// new objects the output, and /readyz is 200 again.
	appendLines(100)
	putObject()
	weirtest.WaitFor(t, "every line and object through after the outage", 2*time.Minute, func() bool {
		n, _ := lakeLines(t, cl, bucket)
		return n >= lines && copied() == objects
	})
	weirtest.WaitFor(t, "/readyz 200 after the outage", time.Minute, func() bool {
		return getJSON(t, base+"/readyz", &ready) == 200
	})
	n, seenLines := lakeLines(t, cl, bucket)
	if n != lines || len(seenLines) != lines {
		t.Errorf("the lake holds %d lines, %d distinct; want %d, each once", n, len(seenLines), lines)
	}
	if err := p.Stop(t, 2*time.Minute); err != nil {
		t.Fatalf("weir exited with %v:\n%s", err, weirtest.Tail(p.Log, 30))
	}
	secretIn(t, p.Log)
	b, _ := os.ReadFile(p.Log)
	for _, want := range []string{"s3: a request failed; retrying", "s3: the server answers again; going on"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the log has no %q", want)
		}
	}
}

// outputIDsOf returns the distinct lines holding key in the file sink's
// visible chunks under dir.
func outputIDsOf(t *testing.T, dir, key string) map[string]bool {
	out := map[string]bool{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasPrefix(info.Name(), ".") || !strings.HasSuffix(p, ".ndjson") {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, key) {
				out[l] = true
			}
		}
		return nil
	})
	return out
}
