package conformance

import (
	"context"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// Runtime runs a connector inside a pipeline, for the checks of the suites
// that need the runtime's retries, rewinds and commits around it. The
// suites depend on the connector contract alone (the layering test in
// internal/layering keeps it so); pipeline/pipelinetest.Runtime is weir's
// runtime behind this interface, and every harness names it.
type Runtime interface {
	// RunGenerated runs n generated records of one partition, whose values
	// are {"id":i,"seq":i}, into sink in groups of 20 with maxAttempts
	// attempts of a failed write or flush, until all are committed, and
	// returns the position committed.
	RunGenerated(ctx context.Context, sink connector.Sink, n, maxAttempts int) (committed int64, err error)
	// Run runs src into sink in groups of one record, committing every few
	// milliseconds, with maxAttempts attempts of a failed write, until ctx
	// is done. Stopping with records read but not yet committed is not an
	// error.
	Run(ctx context.Context, src connector.Source, sink connector.Sink, maxAttempts int) error
}

func needRuntime(t *testing.T, rt Runtime, harness string) Runtime {
	t.Helper()
	if rt == nil {
		t.Fatalf("%s.Runtime is nil: set it to pipelinetest.Runtime{} (package github.com/weir-etl/weir/pipeline/pipelinetest), which runs the connector inside a pipeline", harness)
	}
	return rt
}
