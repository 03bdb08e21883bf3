package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
)

// failingSource reads nothing and reports, as a pipeline.FailureReporter,
// the failure it waits out, until recovered.
type failingSource struct {
	since     time.Time
	mu        sync.Mutex
	recovered bool
}

func (s *failingSource) Open(ctx context.Context, h connector.Host) error { return nil }
func (s *failingSource) Poll(ctx context.Context, b *connector.Batch) error {
	<-ctx.Done()
	return ctx.Err()
}
func (s *failingSource) Commit(context.Context, []connector.Commit) error { return nil }
func (s *failingSource) Seek(context.Context, connector.Partition, connector.Position) error {
	return nil
}
func (s *failingSource) Close(context.Context) error { return nil }
func (s *failingSource) Failing() (time.Time, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recovered {
		return time.Time{}, 0, nil
	}
	return s.since, 7, errors.New("reading s3://b/k: connection refused")
}

// Guarantee: a source that waits out a failure on its own (a server that
// stops answering) is as visible as a failing sink: /readyz names it with
// its error once it has failed for stall_warning, /debug/stalls and the
// status list it, and all three clear when it recovers.
func TestFailingSourceIsVisible(t *testing.T) {
	src := &failingSource{since: time.Now()}
	sp := &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "objects", Source: src}},
		Sinks:      []pipeline.SinkSpec{{Name: "out", Inputs: []string{"objects"}, Sink: &conformance.MemSink{}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond, StallWarning: 200 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "127.0.0.1:0"},
	}
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(slog.DiscardHandler)), pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	waitReason(t, base, "the failing source", func(r pipeline.Reason) bool {
		return r.Kind == "source" && r.Source == "objects" && strings.Contains(r.Message, "connection refused") && strings.Contains(r.Message, "7 attempts")
	})
	_, body := httpGet(t, base+"/debug/stalls")
	var stalls []pipeline.Stall
	if err := json.Unmarshal([]byte(body), &stalls); err != nil || len(stalls) != 1 || stalls[0].Source != "objects" || stalls[0].Status != "source_failing" {
		t.Fatalf("/debug/stalls %s (%v): want the failing source", body, err)
	}
	_, body = httpGet(t, base+"/api/v1/status")
	var st pipeline.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || len(st.Sources) != 1 || st.Sources[0].Failing == nil || st.Sources[0].Failing.Attempts != 7 ||
		st.Nodes[0].State != "failing" {
		t.Fatalf("status %s (%v): want the source's failure, and its node failing", body, err)
	}
	src.mu.Lock()
	src.recovered = true
	src.mu.Unlock()
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz %d %s after the source recovered, want 200", code, body)
	}
	cancel()
	<-done
}
