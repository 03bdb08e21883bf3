package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/source/generate"
)

// failOnce is a sink that fails the first Write holding a record at offset
// at, and otherwise keeps what it is given.
type failOnce struct {
	at     int64
	mu     sync.Mutex
	failed bool
}

func (f *failOnce) Open(context.Context) error { return nil }
func (f *failOnce) Write(_ context.Context, recs []record.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range recs {
		if recs[i].Origin.Offset == f.at && !f.failed {
			f.failed = true
			return errors.New("injected failure")
		}
	}
	return nil
}
func (f *failOnce) Flush(context.Context) error { return nil }
func (f *failOnce) Abort(context.Context) error { return nil }
func (f *failOnce) Close(context.Context) error { return nil }

// Guarantee: a finite source that has reached its end of input and is
// rewound to replay a failed batch is not taken for finished before the
// replay is read. The rewind's hook holds the poller right after the new
// epoch started, with the partition no longer blocked, until the batches
// still in flight resolved and the checkpointer goroutine stepped again: a
// poller that said "not at the end any more" only after that point (as it
// once did) let that step finish the source, and the run ended with the
// replay unread (seen under load in the conformance suite's
// RuntimeRewindsFailedWrites, 17 of 3,600 runs).
func TestRewindAfterEndOfInputIsNotFinished(t *testing.T) {
	src, err := generate.New("gen", generate.Config{Count: 200, Partitions: 1, BatchSize: 20, Template: generate.DefaultTemplate})
	if err != nil {
		t.Fatal(err)
	}
	stepped := make(chan struct{}, 1)
	held := false
	sp := &Spec{
		Sources: []SourceSpec{{Name: "gen", Source: src}},
		Sinks: []SinkSpec{{Name: "out", Inputs: []string{"gen"}, Sink: &failOnce{at: 120},
			Batch: BatchSettings{MaxRecords: 20, MaxAge: time.Millisecond},
			Retry: RetrySettings{MaxAttempts: 1}}},
		Checkpoint: CheckpointSettings{CommitInterval: time.Hour}, // steps come from the hook
		Metrics:    MetricsSettings{Address: "off"},
	}
	err = Run(context.Background(), sp, WithLogger(slog.New(slog.DiscardHandler)), func(o *options) {
		o.hooks.stepped = func(string) { signal(stepped) }
		o.hooks.rewound = func(s *sourceRunner, wake func()) {
			if held {
				return
			}
			held = true
			for s.inflightBatches.Load() > 0 {
				wake()
				<-stepped
			}
			wake()
			<-stepped
		}
	})
	if err != nil {
		t.Fatalf("Run = %v, want nil: the replay must be read", err)
	}
	if got := src.Offsets().Get("gen/0"); got != 200 {
		t.Fatalf("committed %d, want 200", got)
	}
	if !held {
		t.Fatal("no rewind happened")
	}
}
