// Package pipelinetest is the runtime's kit for tests of connectors: Runtime
// runs a connector inside a pipeline for the suites of connector/conformance,
// which know the connector contract and nothing of the runtime.
package pipelinetest

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/generate"
)

// Runtime is weir's runtime as conformance.Runtime: set it in a harness,
// conformance.SinkHarness{..., Runtime: pipelinetest.Runtime{}}.
type Runtime struct{}

var _ conformance.Runtime = Runtime{}

// RunGenerated implements conformance.Runtime.
func (Runtime) RunGenerated(ctx context.Context, sink connector.Sink, n, maxAttempts int) (int64, error) {
	src, err := generate.New("gen", generate.Config{Count: int64(n), Partitions: 1, BatchSize: 20, Template: generate.DefaultTemplate})
	if err != nil {
		return 0, err
	}
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "gen", Source: src}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"gen"}, Sink: sink,
			Batch: pipeline.BatchSettings{MaxRecords: 20, MaxAge: 5 * time.Millisecond},
			Retry: pipeline.RetrySettings{MaxAttempts: maxAttempts, InitialBackoff: time.Millisecond}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	if err := pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		return 0, err
	}
	return int64(src.Offsets().Get("gen/0")), nil
}

// Run implements conformance.Runtime.
func (Runtime) Run(ctx context.Context, src connector.Source, sink connector.Sink, maxAttempts int) error {
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "src", Source: src}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"src"}, Sink: sink,
			Batch: pipeline.BatchSettings{MaxRecords: 1, MaxAge: 5 * time.Millisecond},
			Retry: pipeline.RetrySettings{MaxAttempts: maxAttempts, InitialBackoff: time.Millisecond}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 5 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	// Stopped right after a commit, the run may have data read past it (an
	// IncompleteError says so): that is how Run is meant to end.
	var ie *pipeline.IncompleteError
	if err := pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil && !errors.As(err, &ie) {
		return err
	}
	return nil
}
