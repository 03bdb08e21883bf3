package cli

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var listenRE = regexp.MustCompile(`msg="metrics listening" address=(\S+)`)

// startRun starts weir run on cfg with injected signals and returns them,
// the exit code's channel, stderr, and the address its endpoints listen on
// (empty when they are off).
func startRun(t *testing.T, cfg string, extra ...string) (chan os.Signal, chan int, *syncBuffer, string) {
	t.Helper()
	sigs, code, stderr := make(chan os.Signal, 1), make(chan int, 1), &syncBuffer{}
	c := &command{stdin: strings.NewReader(""), stdout: &syncBuffer{}, stderr: stderr, signals: sigs}
	go func() { code <- c.main(append([]string{"run", "-c", cfg}, extra...)) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := listenRE.FindStringSubmatch(stderr.String()); m != nil {
			return sigs, code, stderr, m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endpoints never listened:\n%s", stderr)
		}
		time.Sleep(time.Millisecond) // polling another goroutine's output
	}
}

// Guarantee: weir tap prints, as NDJSON on stdout, the records leaving a
// component of a running weir, as many as -n says, then says on stderr
// how it ended; a component that does not exist is refused with the names
// there are.
func TestTapCommand(t *testing.T) {
	cfg := writeConfig(t, `
sources:
  in: { type: generate, partitions: 2, batch_size: 10 }
transforms:
  even: { type: filter, inputs: [in], condition: 'seq % 2 == 0' }
sinks:
  out: { type: blackhole, inputs: [even] }
`)
	sigs, code, runErr, addr := startRun(t, cfg, "--metrics-addr", "127.0.0.1:0")
	c, stdout, stderr := runCLI("tap", "even", "-a", addr, "-n", "3", "-rate", "1000")
	if c != ExitOK {
		t.Errorf("tap: exit %d\n%s", c, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), stdout)
	}
	for _, l := range lines {
		var r struct {
			Component, Kind, Source string
			Value                   struct{ Seq int64 }
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Component != "even" || r.Kind != "transform" || r.Source != "in" || r.Value.Seq%2 != 0 {
			t.Errorf("line %s: %+v %v", l, r, err)
		}
	}
	if !strings.Contains(stderr, "weir: tap ended (count reached): 3 records") {
		t.Errorf("stderr: %s", stderr)
	}
	c, _, stderr = runCLI("tap", "evn", "-a", addr)
	if c != ExitRuntime || !strings.Contains(stderr, `no component "evn" to tap; there are: in, even, out`) {
		t.Errorf("an unknown component: exit %d\n%s", c, stderr)
	}
	sigs <- syscall.SIGTERM
	if c := <-code; c != ExitOK {
		t.Errorf("run: exit %d\n%s", c, runErr)
	}
}

// Guarantee: a weir whose metrics.token_env is set serves its taps and
// status only to clients that send the token: weir tap and weir top send
// it from WEIR_METRICS_TOKEN; without it they are refused with what to do.
func TestTapAndTopSendTheToken(t *testing.T) {
	t.Setenv("WEIR_TEST_TOKEN", "tap-token-1")
	cfg := writeConfig(t, `
sources:
  in: { type: generate, partitions: 1, batch_size: 10 }
sinks:
  out: { type: blackhole, inputs: [in] }
metrics:
  token_env: WEIR_TEST_TOKEN
`)
	sigs, code, runErr, addr := startRun(t, cfg, "--metrics-addr", "127.0.0.1:0")
	t.Setenv("WEIR_METRICS_TOKEN", "")
	if c, _, stderr := runCLI("tap", "in", "-a", addr, "-n", "1"); c != ExitRuntime || !strings.Contains(stderr, "401 Unauthorized") || !strings.Contains(stderr, "WEIR_METRICS_TOKEN") {
		t.Errorf("tap without the token: exit %d\n%s", c, stderr)
	}
	t.Setenv("WEIR_METRICS_TOKEN", "tap-token-1")
	if c, stdout, stderr := runCLI("tap", "in", "-a", addr, "-n", "1"); c != ExitOK || strings.Count(stdout, "\n") != 1 {
		t.Errorf("tap with the token: exit %d\n%s\n%s", c, stdout, stderr)
	}
	if c, stdout, stderr := runCLI("top", "-a", addr, "-once"); c != ExitOK || !strings.Contains(stdout, "out") {
		t.Errorf("top with the token: exit %d\n%s\n%s", c, stdout, stderr)
	}
	if strings.Contains(runErr.String(), "tap-token-1") {
		t.Errorf("the token reached the log:\n%s", runErr)
	}
	sigs <- syscall.SIGTERM
	if c := <-code; c != ExitOK {
		t.Errorf("run: exit %d\n%s", c, runErr)
	}
}
