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

// Guarantee: weir top -once prints, from a running weir's status, every
// component with its state, the failing sink's error, and the stalled
// partition with why it waits.
func TestTopShowsFailingSinkAndStalledPartition(t *testing.T) {
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
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, spec, pipeline.WithServeMux(mux), pipeline.WithLogger(slog.New(slog.DiscardHandler)))
	}()
	defer func() {
		cancel()
		// Stopped with the sink still failing: the run says so.
		var ie *pipeline.IncompleteError
		if err := <-done; !errors.As(err, &ie) {
			t.Errorf("Run = %v, want an IncompleteError (the sink never wrote)", err)
		}
	}()

	addr := strings.TrimPrefix(srv.URL, "http://")
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
