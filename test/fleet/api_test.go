//go:build e2e

package fleet_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// The pipelines API through a real HTTP client, on an address beyond
// loopback with a token: without the token a change is refused (and so is
// a read); with it, create, replace with a bad configuration (400 with the
// problems, the old one runs on), pause (nothing more read or committed
// past what was in flight), resume, reset while paused (read again from
// the start), delete (final commit). weir pipelines is the client.
func TestE2EPipelinesAPI(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	root := t.TempDir()
	data := filepath.Join(root, "p")
	mkdirs(t, filepath.Join(data, "in"), filepath.Join(root, "empty"))
	a := &appender{path: filepath.Join(data, "in", "a.ndjson")}
	a.add(t, 300)
	const token = "e2e-token-8d2f"
	addr := freeAddr(t, "0.0.0.0")
	w := start(t, bin, addr, []string{"WEIR_API_TOKEN=" + token}, "-d", filepath.Join(root, "empty"), "--api")

	// Refused without the token, before anything is done.
	if code, body := w.call(t, "PUT", "/api/v1/pipelines/p", "", tailYAML(data, "1")); code != 401 || strings.Contains(body, token) {
		t.Fatalf("a change without the token: %d %s", code, body)
	}
	if code, _ := w.call(t, "GET", "/api/v1/pipelines", "wrong", ""); code != 401 {
		t.Fatalf("a read with a wrong token: %d", code)
	}
	if len(w.pipelines(t, token)) != 0 {
		t.Fatal("a refused request created a pipeline")
	}

	code, body := w.call(t, "PUT", "/api/v1/pipelines/p", token, tailYAML(data, "1"))
	if code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	out := filepath.Join(data, "out")
	weirtest.WaitFor(t, "300 written", time.Minute, func() bool { c, _ := output(t, out); return len(c) == 300 })

	code, body = w.call(t, "PUT", "/api/v1/pipelines/p", token, strings.Replace(tailYAML(data, "2"), "type: file\n    paths", "type: fil\n    paths", 1))
	if code != 400 || !strings.Contains(body, `did you mean \"file\"`) {
		t.Fatalf("a bad configuration: %d %s", code, body)
	}
	if code, body := w.call(t, "GET", "/api/v1/pipelines/p", token, ""); code != 200 || !strings.Contains(body, "v: '1'") || !strings.Contains(body, `"state": "running"`) {
		t.Fatalf("after the bad configuration: %d %s", code, body)
	}
	a.add(t, 100)
	weirtest.WaitFor(t, "the old configuration to run on", time.Minute, func() bool { c, _ := output(t, out); return len(c) == 400 })

	// Pause: after the one Poll the tail source waits in, nothing more is
	// read, written or committed while lines come.
	client := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append([]string{"pipelines", "--addr", w.addr}, args...)...)
		cmd.Env = append(os.Environ(), "WEIR_API_TOKEN="+token)
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(b)
		}
		return 0, string(b)
	}
	if code, outp := client("pause", "p"); code != 0 || !strings.Contains(outp, `"paused"`) {
		t.Fatalf("weir pipelines pause: %d %s", code, outp)
	}
	a.add(t, 50) // ends the Poll in flight
	time.Sleep(time.Second)
	_, before := output(t, out)
	pos, _ := w.metricPrefix(t, `weir_partition_committed_position{pipeline="p",`)
	a.add(t, 200)
	// Nothing shows that nothing happens but time: two seconds in which a
	// running pipeline (poll_interval 5ms) would have read the lines.
	time.Sleep(2 * time.Second)
	if _, now := output(t, out); now != before {
		t.Fatalf("paused, %d more records were written", now-before)
	}
	if p, _ := w.metricPrefix(t, `weir_partition_committed_position{pipeline="p",`); p != pos {
		t.Fatalf("paused, the committed position moved from %v to %v", pos, p)
	}
	if code, outp := client("list"); code != 0 || !strings.Contains(outp, "paused") {
		t.Fatalf("weir pipelines list: %d %s", code, outp)
	}

	// Reset while paused: refused without the confirmation; then the source
	// reads again from its start once resumed.
	if code, outp := client("reset", "p", "in"); code != 2 || !strings.Contains(outp, "--yes") {
		t.Fatalf("reset without --yes: %d %s", code, outp)
	}
	if code, body := w.call(t, "POST", "/api/v1/pipelines/p/reset", token, `{"source":"in"}`); code != 400 {
		t.Fatalf("reset without confirm: %d %s", code, body)
	}
	if code, outp := client("reset", "p", "in", "--yes"); code != 0 {
		t.Fatalf("weir pipelines reset: %d %s", code, outp)
	}
	if code, outp := client("resume", "p"); code != 0 || !strings.Contains(outp, `"running"`) {
		t.Fatalf("weir pipelines resume: %d %s", code, outp)
	}
	weirtest.WaitFor(t, "every line, and the first 650 again after the reset", time.Minute, func() bool {
		c, _ := output(t, out)
		return len(c) == a.n && c[0] == 2 && c[int64(a.n-1)] >= 1
	})

	if code, outp := client("delete", "p"); code != 0 {
		t.Fatalf("weir pipelines delete: %d %s", code, outp)
	}
	if code, _ := w.call(t, "GET", "/api/v1/pipelines/p", token, ""); code != 404 {
		t.Fatalf("a deleted pipeline: %d", code)
	}
	if strings.Contains(w.stderr.String(), token) {
		t.Fatal("the token is in weir's log")
	}
}

// --api beyond loopback without a token does not start.
func TestE2EAPIBeyondLoopbackNeedsAToken(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--metrics-addr", freeAddr(t, "0.0.0.0"), "-d", dir, "--api")
	cmd.Env = append(os.Environ(), "WEIR_API_TOKEN=")
	b, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(b), "needs a token") {
		t.Fatalf("exit %d: %s", cmd.ProcessState.ExitCode(), b)
	}
}
