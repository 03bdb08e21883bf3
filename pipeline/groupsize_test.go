package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/blackhole"
)

// slowSink takes slow long to make a group durable, and notes the largest
// group it was given.
type slowSink struct {
	*blackhole.Sink
	slow        time.Duration
	group, most int
}

func (s *slowSink) Write(ctx context.Context, recs []record.Record) error {
	s.group += len(recs)
	return s.Sink.Write(ctx, recs)
}

func (s *slowSink) Flush(ctx context.Context) error {
	s.most = max(s.most, s.group)
	s.group = 0
	time.Sleep(s.slow) // the sink's own pace, not a synchronisation
	return s.Sink.Flush(ctx)
}

// Guarantee: with batch.max_records left unset, a sink that the pipeline
// waits for gets larger groups than the default, up to the ceiling; with
// batch.max_records set, no group is larger than it.
func TestGroupsGrowForASlowSinkOnlyByDefault(t *testing.T) {
	for _, c := range []struct {
		name      string
		set       int
		min, most int
	}{
		{"default", 0, pipeline.DefaultBatchMaxRecords + 1, pipeline.DefaultBatchMaxRecordsCeiling},
		{"set", pipeline.DefaultBatchMaxRecords, 0, pipeline.DefaultBatchMaxRecords},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := &slowSink{Sink: blackhole.New(), slow: time.Second}
			sp := fastSpec(gen(t, 120000, 1, 1000), pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: sink,
				Batch: pipeline.BatchSettings{MaxRecords: c.set, MaxAge: time.Hour}})
			if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
				t.Fatal(err)
			}
			if sink.most < c.min || sink.most > c.most {
				t.Fatalf("the largest group held %d records, want %d to %d", sink.most, c.min, c.most)
			}
			t.Logf("largest group: %d records", sink.most)
		})
	}
}
