package kafka_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/kafka"
)

// Guarantee: the source reports each partition's end (connector.LagReporter)
// as the high-water mark of its last fetch: after a backlog of 25 records
// read 10 at a time, 25; after 5 more are produced and read, 30. Nothing is
// reported before the first fetch, and what Ends returns is the caller's.
func TestEndsAreTheHighWaterMarksOfTheLastFetch(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 25)

	src, h := openCaughtUpSource(ctx, t, c.ListenAddrs(), 10, 0)
	if ends := src.Ends(); len(ends) != 0 {
		t.Fatalf("Ends before any fetch = %v, want none", ends)
	}
	pollUntil(ctx, t, src, h, 10)
	ends := src.Ends()
	if ends["t/0"] != 25 || len(ends) != 1 {
		t.Fatalf("Ends after the first fetch = %v, want t/0 at 25", ends)
	}
	ends["t/0"] = -1 // the caller's copy
	pollUntil(ctx, t, src, h, 15)
	kafkatest.Produce(ctx, t, cl, "t", 1, 5)
	pollUntil(ctx, t, src, h, 5)
	if ends := src.Ends(); ends["t/0"] != 30 {
		t.Fatalf("Ends after 5 more records = %v, want t/0 at 30", ends)
	}
}

// Guarantee: run in a pipeline whose sink fails, so that nothing is
// committed, the Kafka source's partition shows in /metrics with its lag,
// the high-water mark minus the committed offset: all 25 records.
func TestPipelineExportsKafkaLag(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 25)
	cfg := kafka.NewConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.Group = "g"
	cfg.Topics = []string{"t"}
	src, err := kafka.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	broken := &conformance.FaultSink{Sink: &conformance.MemSink{}, OnFlush: func() error { return errors.New("disk on fire") }}
	spec := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "in", Source: src}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"in"}, Sink: broken, GiveUpAfter: time.Hour,
			Batch: pipeline.BatchSettings{MaxAge: 5 * time.Millisecond},
			Retry: pipeline.RetrySettings{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
	}
	mux := http.NewServeMux()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(runCtx, spec, pipeline.WithServeMux(mux), pipeline.WithLogger(testLogger()))
	}()
	defer func() { cancel(); <-done }()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	const want = `weir_partition_lag_position{partition="t/0",source="in"} 25`
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), want+"\n") && strings.Contains(string(b), `weir_source_lag_position{source="in"} 25`+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s:\n%s", want, lagLines(string(b)))
		}
		time.Sleep(50 * time.Millisecond) // polling an external view for a condition, with a deadline
	}
}

func lagLines(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "lag") && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var _ connector.LagReporter = (*kafka.Source)(nil)
