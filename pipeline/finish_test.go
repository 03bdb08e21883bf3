package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
)

// Guarantee: a finite source's run ends as soon as its last position is
// committed, not at the next commit interval (an hour here) or stall
// refresh (never here): the commit made because the source finished is
// followed at once by the step that sees nothing left.
func TestRunEndsRightAfterTheFinalCommit(t *testing.T) {
	for _, batches := range []int{1, 3} {
		mem := &conformance.MemSink{}
		// Each batch is flushed on its own, and the next is polled only
		// once it was drained: the last acknowledgements are drained before
		// the end of input is seen, and the commit comes with the end.
		sp := fastSpec(gen(t, int64(batches*10), 1, 10), pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: mem,
			Batch: pipeline.BatchSettings{MaxRecords: 10, MaxAge: time.Hour}})
		sp.Sources[0].MaxInFlightBatches = 1
		sp.Checkpoint.CommitInterval = time.Hour
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := pipeline.Run(ctx, sp, quiet, pipeline.WithClock(time.Now, make(chan time.Time)))
		late := ctx.Err() != nil
		cancel()
		if late {
			t.Fatalf("%d batches: the run did not end within 30s of reading its input: it waits for the commit interval", batches)
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := len(mem.Values()); n != batches*10 {
			t.Fatalf("%d batches: %d records written, want %d", batches, n, batches*10)
		}
	}
}
