package pipeline_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
)

// stuckFlush is a sink whose first Flush does not return until released, as
// a connector waiting out its server inside a call (a long Retry-After, a
// hung connection) does.
type stuckFlush struct {
	*conformance.MemSink
	once             sync.Once
	entered, release chan struct{}
}

func (s *stuckFlush) Flush(ctx context.Context) error {
	s.once.Do(func() {
		close(s.entered)
		<-s.release
	})
	return s.MemSink.Flush(ctx)
}

// Guarantee: a sink call that does not return is seen from outside within
// stall_warning, though no error comes back to count: /readyz turns 503
// naming the sink and the call, /debug/stalls names it beside the stalled
// partition, the status shows the sink failing, and the warning is logged
// once. When the call returns the run goes on and delivers everything.
// Before, only the partitions showed as stalled, and nothing named the sink.
func TestHungSinkCallIsVisible(t *testing.T) {
	const warn, n = time.Second, 500
	sink := &stuckFlush{MemSink: &conformance.MemSink{}, entered: make(chan struct{}), release: make(chan struct{})}
	sp := fastSpec(gen(t, n, 1, 50), pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink})
	sp.Checkpoint.StallWarning = warn
	sp.Metrics.Address = "127.0.0.1:0"
	logs := newWarnLog()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(context.Background(), sp, pipeline.WithLogger(slog.New(logs)), pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	released := false
	defer func() {
		if !released {
			close(sink.release)
			<-done
		}
	}()
	var t0 time.Time
	select {
	case <-sink.entered:
		t0 = time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("no flush within 30s")
	}
	body := waitReason(t, base, "the sink's flush", func(r pipeline.Reason) bool {
		return r.Kind == "sink" && r.Sink == "out" && strings.Contains(r.Message, "its flush has not returned for")
	})
	t.Logf("/readyz 503 %v after the flush began (stall_warning %v): %s", time.Since(t0).Round(time.Millisecond), warn, body)
	if d := time.Since(t0); d < warn-100*time.Millisecond {
		t.Errorf("/readyz named the flush after %v, before stall_warning %v", d, warn)
	}
	// /debug/stalls lists the partitions as of the last refresh (every
	// stall_warning/2): the call shows there by the next one.
	for named := false; !named; {
		_, body = httpGet(t, base+"/debug/stalls")
		var stalls []pipeline.Stall
		if err := json.Unmarshal([]byte(body), &stalls); err != nil {
			t.Fatalf("/debug/stalls: %v: %s", err, body)
		}
		for _, st := range stalls {
			for _, f := range st.FailingSinks {
				named = named || (f.Sink == "out" && f.Waiting && strings.Contains(f.Error, "flush"))
			}
		}
		if !named && time.Since(t0) > 30*time.Second {
			t.Fatalf("/debug/stalls %s: want a stalled partition naming sink out's flush", body)
		}
		time.Sleep(20 * time.Millisecond) // polling an external view
	}
	_, body = httpGet(t, base+"/api/v1/status")
	var st pipeline.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("status: %v: %s", err, body)
	}
	failing := false
	for _, nd := range st.Nodes {
		failing = failing || (nd.Name == "out" && nd.State == "failing" && strings.Contains(nd.Error, "flush"))
	}
	if !failing {
		t.Errorf("status %s: want sink out failing, naming its flush", body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for logs.count("sink call stalled") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no warning for the flush; warnings: %v", logs.all())
		}
		time.Sleep(20 * time.Millisecond) // polling the log
	}

	close(sink.release)
	released = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := len(sink.Values()); got != n {
		t.Fatalf("the sink holds %d records, want %d", got, n)
	}
	if c := logs.count("sink call stalled"); c != 1 {
		t.Errorf("%d warnings for one call, want 1: %v", c, logs.all())
	}
}
