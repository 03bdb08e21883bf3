package cli

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/generate"
)

// Guarantee: weir health exits 0 while a running weir is alive, and with
// -ready exits 3 and prints the reasons once a sink keeps failing: the
// container image's HEALTHCHECK and exec probes see what /healthz and
// /readyz say.
func TestHealthOfARunningPipeline(t *testing.T) {
	addr, done := runStuck(t)
	defer done()

	// The runtime registers its endpoints on the mux as it starts: poll.
	deadline := time.Now().Add(30 * time.Second)
	alive := false
	for {
		var stdout, stderr syncBuffer
		c := &command{stdout: &stdout, stderr: &stderr}
		if !alive {
			code := c.main([]string{"health", "-a", addr})
			alive = code == ExitOK && strings.Contains(stdout.String(), "/healthz: ok")
			if !alive && time.Now().After(deadline) {
				t.Fatalf("weir health: exit %d, stdout %q, stderr %q; want 0 and /healthz: ok", code, stdout.String(), stderr.String())
			}
		} else {
			code := c.main([]string{"health", "-a", addr, "-ready"})
			if code == ExitRuntime && strings.Contains(stderr.String(), "503") && strings.Contains(stderr.String(), "stuck") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("weir health -ready with a failing sink: exit %d, stderr %q; want 3 with the 503 and the sink's name", code, stderr.String())
			}
		}
		time.Sleep(50 * time.Millisecond) // polling a running pipeline's view, with a deadline
	}
}

// Guarantee: weir health maps every answer to its exit code: 200 is 0, any
// other status or no answer is 3 with what happened on stderr; bad flags
// are usage errors.
func TestHealthAnswers(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" && r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(r.URL.Path + " says so\n"))
	}))
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		args   []string
		status int
		code   int
		out    string // in stdout when 0, in stderr otherwise
	}{
		{[]string{"-a", addr}, 200, ExitOK, "/healthz: /healthz says so"},
		{[]string{"-a", "http://" + addr, "-ready"}, 200, ExitOK, "/readyz: /readyz says so"},
		{[]string{"-a", addr, "-ready"}, 503, ExitRuntime, "503 Service Unavailable: /readyz says so"},
		{[]string{"-a", addr}, 500, ExitRuntime, "/healthz answered 500"},
		{[]string{"-a", addr, "extra"}, 200, ExitUsage, `unexpected argument "extra"`},
		{[]string{"-a", addr, "-timeout", "0s"}, 200, ExitUsage, "timeout must be positive"},
	} {
		status = tc.status
		var stdout, stderr syncBuffer
		c := &command{stdout: &stdout, stderr: &stderr}
		code := c.main(append([]string{"health"}, tc.args...))
		out := stderr.String()
		if tc.code == ExitOK {
			out = stdout.String()
		}
		if code != tc.code || !strings.Contains(out, tc.out) {
			t.Errorf("weir health %v (server answers %d): exit %d, output %q; want %d and %q", tc.args, tc.status, code, out, tc.code, tc.out)
		}
	}
	srv.Close() // nothing listens there any more
	var stdout, stderr syncBuffer
	c := &command{stdout: &stdout, stderr: &stderr}
	if code := c.main([]string{"health", "-a", addr}); code != ExitRuntime || !strings.Contains(stderr.String(), "/healthz") {
		t.Errorf("weir health against nothing: exit %d, stderr %q; want 3 naming /healthz", code, stderr.String())
	}
}

// runStuck runs a pipeline whose one sink fails every flush ("disk on
// fire"), its endpoints on a test server, and returns the server's address
// and a function that stops the run and returns its error.
func runStuck(t *testing.T) (string, func() error) {
	t.Helper()
	src, err := generate.New("gen", generate.Config{Partitions: 1, BatchSize: 10, Rate: 1000, Template: generate.DefaultTemplate})
	if err != nil {
		t.Fatal(err)
	}
	stuck := &conformance.FaultSink{Sink: &conformance.MemSink{}, OnFlush: func() error { return errors.New("disk on fire") }}
	spec := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "gen", Source: src}},
		Sinks: []pipeline.SinkSpec{{Name: "stuck", Inputs: []string{"gen"}, Sink: stuck, GiveUpAfter: time.Hour,
			Batch: pipeline.BatchSettings{MaxAge: 5 * time.Millisecond},
			Retry: pipeline.RetrySettings{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond, StallWarning: 200 * time.Millisecond},
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, spec, pipeline.WithServeMux(mux), pipeline.WithLogger(slog.New(slog.DiscardHandler)))
	}()
	return strings.TrimPrefix(srv.URL, "http://"), func() error {
		cancel()
		err := <-done
		srv.Close()
		return err
	}
}
