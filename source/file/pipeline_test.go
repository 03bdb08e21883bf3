package file_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/file"
)

// The runtime shows what the source waits out by itself (Source.Failing).
var _ pipeline.FailureReporter = (*file.Source)(nil)

// Guarantee: in a pipeline, a file source in mode tail that read its files
// to their end has the sinks flush at once, not at their max_age (an hour
// here): what was in the files is durable without waiting, although the
// source never ends.
func TestPipelineFlushesWhenFilesAreRead(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, n+".ndjson"), []byte(strings.Repeat(`{"x":1}`+"\n", 25)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := file.NewConfig()
	c.Paths = []string{filepath.Join(dir, "*.ndjson")}
	c.DataDir = filepath.Join(dir, "state")
	c.Mode, c.PollInterval, c.BatchSize = "tail", 10*time.Millisecond, 10
	src, err := file.New("in", c)
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan struct{}, 1)
	mem := &conformance.MemSink{}
	sink := &conformance.FaultSink{Sink: mem, OnFlush: func() error {
		select {
		case flushed <- struct{}{}:
		default:
		}
		return nil
	}}
	spec := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "in", Source: src}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"in"}, Sink: sink,
			Batch: pipeline.BatchSettings{MaxAge: time.Hour}}},
		Metrics: pipeline.MetricsSettings{Address: "off"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, spec, pipeline.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	timeout := time.After(30 * time.Second)
	for len(mem.Values()) < 50 {
		// OnFlush runs before the inner sink made the group durable: a
		// signal may come before the records are there, so look again
		// shortly after one too.
		select {
		case <-flushed:
		case <-time.After(10 * time.Millisecond):
		case <-timeout:
			t.Fatalf("%d of 50 records durable after 30s: the group waits for max_age", len(mem.Values()))
		}
	}
}
