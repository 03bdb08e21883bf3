//go:build e2e

// Package failure runs the real weir binary through failures that persist
// and through signals: a failure must show from outside (readiness, stall
// warnings, exit code, summary) and end, and a stop must be graceful.
package failure

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

	"github.com/weir-etl/weir/internal/testkit/weirtest"
	"golang.org/x/sys/unix"
)

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const genConfig = `
sources:
  gen: { type: generate, rate: 2000, batch_size: 50, partitions: 2 }
sinks:
  out: { type: file, inputs: [gen], path: %s, format: ndjson, max_age: 100ms }
checkpoint: { commit_interval: 100ms }
metrics: { address: "off" }
`

// Guarantee: a single SIGTERM is always a graceful stop, also when it is
// delivered twice at once, as coreutils timeout does (to the command and to
// its process group). Before, some runs under timeout exited 130 without
// their final commit.
func TestTimeoutStopsGracefully(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(genConfig, filepath.Join(dir, "out")))
	for i := range 20 {
		var stderr bytes.Buffer
		cmd := exec.Command("timeout", "--preserve-status", "-s", "TERM", "0.7", bin, "run", "-c", cfg)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err != nil || !strings.Contains(stderr.String(), "run summary") || strings.Contains(stderr.String(), "second interrupt") {
			t.Fatalf("run %d under timeout: %v (want exit 0 after a graceful stop with its summary)\n%s", i+1, err, stderr.String())
		}
	}
}

// Guarantee: SIGHUP neither kills weir nor goes unnoticed: it reloads the
// configuration (the running pipeline stops gracefully and the new one
// starts from the committed positions), weir goes on writing, and a SIGTERM
// afterwards stops it gracefully. Before, SIGHUP killed weir at once (exit
// 129, no summary, the lock file left).
func TestSIGHUPReloads(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(genConfig, out))
	cmd, stderr, done := startRun(t, bin, cfg)
	t.Cleanup(func() {
		// A failed check leaves weir running: stop it before the
		// temporary directory goes.
		_ = cmd.Process.Kill()
		<-done
	})
	chunks := func() int {
		m, _ := filepath.Glob(filepath.Join(out, "*", "*"))
		return len(m)
	}
	weirtest.WaitFor(t, "the pipeline writes", 30*time.Second, func() bool { return chunks() > 0 })
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	weirtest.WaitFor(t, "the reload logged", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "cause=SIGHUP") && strings.Contains(stderr.String(), "starting the new one")
	})
	after := chunks()
	weirtest.WaitFor(t, "the reloaded pipeline writes", 30*time.Second, func() bool { return chunks() > after })
	select {
	case err := <-done:
		t.Fatalf("weir exited after SIGHUP: %v\n%s", err, stderr)
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !strings.Contains(stderr.String(), "run summary") {
		t.Fatalf("after SIGTERM: %v, want exit 0 with a summary\n%s", err, stderr)
	}
	done <- nil // for the cleanup
}

// Guarantee: a second interrupt, a second or more after the first, exits
// at once with 130, even while a sink holds the graceful stop up.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(`
sources:
  gen: { type: generate, rate: 500, batch_size: 50 }
sinks:
  out:
    type: file
    inputs: [gen]
    path: %s/out
    format: ndjson
    max_age: 100ms
    retry: { max_attempts: 1000, initial_backoff: 100ms, max_backoff: 200ms, max_elapsed: 1h }
checkpoint: { commit_interval: 100ms, shutdown_timeout: 1m }
metrics: { address: "off" }
`, dir))
	cmd, stderr, done := startRun(t, bin, cfg)
	// Once it wrote, the directory vanishes: a file takes its place, and
	// every write fails from then on.
	out := filepath.Join(dir, "out")
	weirtest.WaitFor(t, "the pipeline writes", 30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(out, "*", "*.ndjson"))
		return len(m) > 0
	})
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	write(t, out, "a file where the sink wants a directory")
	weirtest.WaitFor(t, "the sink fails", 30*time.Second, func() bool { return strings.Contains(stderr.String(), "write failed") })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	weirtest.WaitFor(t, "the first interrupt handled", 10*time.Second, func() bool { return strings.Contains(stderr.String(), "shutting down gracefully") })
	time.Sleep(1200 * time.Millisecond) // a person pressing Ctrl-C again: past the one-second window
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("exit %v after a second interrupt, want 130\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("weir did not exit after a second interrupt\n%s", stderr)
	}
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// input writes n NDJSON lines of about 100 bytes, ids 0..n-1.
func input(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":%d,"pad":"%s"}`+"\n", i, strings.Repeat("x", 80))
	}
	write(t, path, b.String())
}

const fullDiskConfig = `
sources:
  in: { type: file, paths: [%[1]s/in/*.ndjson], mode: once, data_dir: %[1]s/state }
sinks:
  lake:
    type: file
    inputs: [in]
    path: %[2]s/lake
    format: ndjson
    give_up_after: 3s
    retry: { max_attempts: 2, initial_backoff: 50ms, max_backoff: 100ms, max_elapsed: 1s }
    %[3]s
%[4]s
checkpoint: { commit_interval: 100ms, stall_warning: 1s }
metrics: { address: %[5]s }
`

// Guarantee: a sink that fails for good (its disk is full) is visible from
// outside and ends: the stall age grows past stall_warning, /readyz turns
// 503 naming the sink and its error, the stall warning is logged once, and
// give_up_after halts the once job with exit code 3 and a summary naming the
// sink. Before, it rewound for ever behind a green /healthz.
func TestFullDiskHaltsVisibly(t *testing.T) {
	small, _ := weirtest.Tmpfs(t, "64k")
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	input(t, filepath.Join(dir, "in", "a.ndjson"), 5000)
	addr := freePort(t)
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(fullDiskConfig, dir, small, "", "", addr))
	_, stderr, done := startRun(t, bin, cfg)
	var ready struct {
		Ready   bool `json:"ready"`
		Reasons []struct {
			Kind, Sink, Partition, Message string
		} `json:"reasons"`
	}
	sawNotReady := false
	for !sawNotReady {
		select {
		case err := <-done:
			t.Fatalf("weir ended (%v) before /readyz turned 503\n%s", err, stderr)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && json.Unmarshal(body, &ready) == nil {
				for _, r := range ready.Reasons {
					sawNotReady = sawNotReady || (r.Kind == "sink" && r.Sink == "lake" && strings.Contains(r.Message, "no space left on device"))
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	err := <-done
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3 (gave up)\n%s", err, stderr)
	}
	out := stderr.String()
	if !strings.Contains(out, "sink lake") || !strings.Contains(out, "gave up after failing for") || !strings.Contains(out, "no space left on device") {
		t.Errorf("the end does not name the sink, the give-up and the error:\n%s", out)
	}
	if !strings.Contains(out, "run summary") {
		t.Errorf("no summary:\n%s", out)
	}
	if n := strings.Count(out, "partition stalled"); n != 1 {
		t.Errorf("%d stall warnings for one stall, want 1:\n%s", n, out)
	}
}

// Guarantee: with on_give_up dead_letter, a sink that fails for good sends
// what it cannot write to its dead letter sink and the job ends: every
// input record is in the sink or the dead letter sink, none missing.
func TestFullDiskGivesUpToDeadLetter(t *testing.T) {
	small, _ := weirtest.Tmpfs(t, "64k")
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	const n = 5000
	input(t, filepath.Join(dir, "in", "a.ndjson"), n)
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(fullDiskConfig, dir, small,
		"on_give_up: dead_letter\n    dead_letter: dead",
		fmt.Sprintf("  dead: { type: file, path: %s/dead, format: ndjson }", dir), `"off"`))
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v, want exit 0 (what could not be written went to the dead letter sink)\n%s", err, stderr.String())
	}
	seen := map[int]int{}
	count := func(root string, envelope bool) {
		files, _ := filepath.Glob(filepath.Join(root, "*", "*.ndjson"))
		more, _ := filepath.Glob(filepath.Join(root, "*.ndjson"))
		for _, f := range append(files, more...) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if envelope {
					var env struct {
						Value json.RawMessage `json:"value"`
					}
					if err := json.Unmarshal(line, &env); err != nil {
						t.Fatalf("dead letter %s: %v", line, err)
					}
					line = env.Value
				}
				var r struct{ ID int }
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("%s: %s: %v", f, line, err)
				}
				seen[r.ID]++
			}
		}
	}
	count(filepath.Join(small, "lake"), false)
	count(filepath.Join(dir, "dead"), true)
	missing := 0
	for i := range n {
		if seen[i] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d records in neither the sink nor the dead letter sink\n%s", missing, n, stderr.String())
	}
}

// Guarantee: a rewind caused by one sink replays only to that sink. Two file
// sinks read the same input; one's directory is taken away for a while
// (every write fails, and the partition is rewound again and again), then
// given back. The healthy sink ends with every record exactly once, the
// other with every record at least once. Before, every rewind replayed to
// both: a 25-second outage of one sink made the healthy one write 705,460
// records for 195,180 lines.
func TestRewindReplaysOnlyToTheFailingSink(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	const n = 200000
	input(t, filepath.Join(dir, "in", "a.ndjson"), n)
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(`
sources:
  in: { type: file, paths: [%[1]s/in/*.ndjson], mode: once, data_dir: %[1]s/state, batch_size: 500 }
sinks:
  healthy: { type: file, inputs: [in], path: %[1]s/healthy, format: ndjson }
  flaky:
    type: file
    inputs: [in]
    path: %[1]s/flaky
    format: ndjson
    retry: { max_attempts: 2, initial_backoff: 20ms, max_backoff: 50ms, max_elapsed: 1s }
checkpoint: { commit_interval: 100ms }
metrics: { address: "off" }
`, dir))
	cmd, stderr, done := startRun(t, bin, cfg)
	flaky, saved := filepath.Join(dir, "flaky"), filepath.Join(dir, "flaky.saved")
	weirtest.WaitFor(t, "the flaky sink writes", 30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(flaky, "*", "*.ndjson"))
		return len(m) > 0
	})
	// The outage: the directory is moved aside (what it holds is kept) and a
	// file takes its place until the runtime has rewound a few times.
	if err := os.Rename(flaky, saved); err != nil {
		t.Fatal(err)
	}
	write(t, flaky, "not a directory")
	weirtest.WaitFor(t, "rewinds", 60*time.Second, func() bool {
		return strings.Count(stderr.String(), "rewinding partition") >= 3 || strings.Contains(stderr.String(), "rewinds=4")
	})
	// The outage ends in one step: the directory and the file swap places
	// (a remove and then a rename lost to the sink's retry, which made the
	// directory again in between).
	if err := unix.Renameat2(unix.AT_FDCWD, saved, unix.AT_FDCWD, flaky, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(saved); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, stderr)
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the run did not end\n%s", stderr)
	}
	healthy := ids(t, filepath.Join(dir, "healthy"))
	failing := ids(t, flaky)
	dups, missing := 0, 0
	for i := range n {
		if healthy[i] > 1 {
			dups += healthy[i] - 1
		}
		if healthy[i] == 0 || failing[i] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d records missing from a sink", missing)
	}
	if dups > 0 {
		t.Errorf("the healthy sink holds %d duplicates, want 0: the other sink's rewinds were replayed to it", dups)
	}
	if !strings.Contains(stderr.String(), "already held, not written again") {
		t.Errorf("the summary does not say the healthy sink skipped what it held:\n%s", stderr)
	}
}

// ids counts the records of every NDJSON chunk under root by id.
func ids(t *testing.T, root string) map[int]int {
	t.Helper()
	seen := map[int]int{}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.ndjson"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			var r struct{ ID int }
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %s: %v", f, line, err)
			}
			seen[r.ID]++
		}
	}
	return seen
}

// startRun starts `weir run -c cfg` with its stderr captured; done receives
// what Wait returns (it has room for one more value).
func startRun(t *testing.T, bin, cfg string) (*exec.Cmd, *weirtest.SyncBuffer, chan error) {
	t.Helper()
	stderr := &weirtest.SyncBuffer{}
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, stderr, done
}
