package cli

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
)

// Guarantee: weir top -once prints, from a running weir's status, every
// component with its state, the failing sink's error, and the stalled
// partition with why it waits.
func TestTopShowsFailingSinkAndStalledPartition(t *testing.T) {
	addr, stop := runStuck(t)
	defer func() {
		// Stopped with the sink still failing: the run says so.
		var ie *pipeline.IncompleteError
		if err := stop(); !errors.As(err, &ie) {
			t.Errorf("Run = %v, want an IncompleteError (the sink never wrote)", err)
		}
	}()
	want := []string{"weir running, not ready", "stuck", "failing since", "stuck: disk on fire", "gen: 1 partition, 1 stalled",
		"gen/0", "The watermark has not moved", "recent events:", "sink_failing"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var stdout, stderr syncBuffer
		c := &command{stdout: &stdout, stderr: &stderr}
		code := c.main([]string{"top", "-a", addr, "-once"})
		out := stdout.String()
		missing := ""
		for _, w := range want {
			if !strings.Contains(out, w) {
				missing = w
				break
			}
		}
		if code == ExitOK && missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("weir top: exit %d, output lacks %q:\n%s%s", code, missing, out, stderr.String())
		}
		time.Sleep(50 * time.Millisecond) // polling a running pipeline's view, with a deadline
	}
}

// Guarantee: weir top says what went wrong when it cannot read a status (exit
// code 3), and refuses a bad interval as a usage error.
func TestTopErrors(t *testing.T) {
	var stdout, stderr syncBuffer
	c := &command{stdout: &stdout, stderr: &stderr}
	ln := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(ln.URL, "http://")
	ln.Close() // nothing listens there any more
	if code := c.main([]string{"top", "-a", addr, "-once"}); code != ExitRuntime || !strings.Contains(stderr.String(), "is weir running") {
		t.Errorf("top against nothing: exit %d, stderr %q; want 3 and a hint", code, stderr.String())
	}
	stderr = syncBuffer{}
	if code := c.main([]string{"top", "-n", "0s", "-once"}); code != ExitUsage || !strings.Contains(stderr.String(), "interval must be positive") {
		t.Errorf("top -n 0s: exit %d, stderr %q; want 2 naming the interval", code, stderr.String())
	}
}
