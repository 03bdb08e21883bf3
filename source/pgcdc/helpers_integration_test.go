//go:build integration

package pgcdc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/pgcdctest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/source/pgcdc"
)

// config returns a source configuration for db with short intervals.
func config(t *testing.T, db *pgcdctest.DB, tables ...string) *pgcdc.Config {
	c := pgcdc.NewConfig()
	c.URL = db.URL
	c.PasswordEnv = pgcdctest.PasswordEnv
	// Slot names are the cluster's, not the database's: one per test.
	c.Slot = db.Name
	c.Publication = "weir_test"
	c.CreatePublication = true
	c.Tables = tables
	c.DataDir = t.TempDir()
	c.StatusInterval = 200 * time.Millisecond
	c.HeartbeatInterval = 0
	c.ReconnectBackoff = 20 * time.Millisecond
	c.ReconnectBackoffMax = 200 * time.Millisecond
	return c
}

// collector is a sink that keeps every flushed record, with its key and
// origin, in order.
type collector struct {
	// hold, when set, stops the first Write until it is closed; held is
	// closed when that Write arrives.
	hold, held chan struct{}
	once       sync.Once

	mu      sync.Mutex
	group   []out
	flushed []out
}

type out struct {
	value  map[string]any
	raw    string
	key    string
	origin record.Origin
}

func (c *collector) Open(context.Context) error { return nil }
func (c *collector) Write(ctx context.Context, recs []record.Record) error {
	if c.hold != nil {
		c.once.Do(func() {
			close(c.held)
			select {
			case <-c.hold:
			case <-ctx.Done():
			}
		})
	}
	for i := range recs {
		v, err := recs[i].Value()
		if err != nil {
			return err
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return err
		}
		c.group = append(c.group, out{value: m, raw: string(v), key: string(recs[i].Key), origin: recs[i].Origin})
	}
	return nil
}
func (c *collector) Flush(context.Context) error {
	c.mu.Lock()
	c.flushed = append(c.flushed, c.group...)
	c.mu.Unlock()
	c.group = c.group[:0]
	return nil
}
func (c *collector) Abort(context.Context) error { c.group = c.group[:0]; return nil }
func (c *collector) Close(context.Context) error { return nil }

func (c *collector) all() []out {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]out(nil), c.flushed...)
}

// run is a pipeline source → collector running in the background.
type run struct {
	t      *testing.T
	sink   *collector
	cancel context.CancelFunc
	done   chan struct{} // closed when the pipeline ended; err is its error
	err    error
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startRun(t *testing.T, src connector.Source, sink connector.Sink) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	r := &run{t: t, cancel: cancel, done: make(chan struct{}), logs: logs}
	if c, ok := sink.(*collector); ok {
		r.sink = c
	}
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "cdc", Source: src}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"cdc"}, Sink: sink,
			Batch: pipeline.BatchSettings{MaxRecords: 500, MaxAge: 20 * time.Millisecond},
			Retry: pipeline.RetrySettings{MaxAttempts: 3, InitialBackoff: time.Millisecond}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 50 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	go func() {
		r.err = pipeline.Run(ctx, sp, pipeline.WithLogger(log))
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
		}
		if (t.Failed() || testing.Verbose()) && os.Getenv("PGCDC_TEST_LOGS") != "" {
			t.Logf("pipeline log:\n%s", logs.String())
		}
	})
	return r
}

// stop ends the pipeline gracefully and returns its error.
func (r *run) stop() error {
	r.cancel()
	select {
	case <-r.done:
		return r.err
	case <-time.After(30 * time.Second):
		r.t.Fatal("the pipeline did not stop")
		return nil
	}
}

// waitRecords waits until the sink holds at least n records.
func (r *run) waitRecords(n int, within time.Duration) []out {
	r.t.Helper()
	var got []out
	pgcdctest.Poll(r.t, within, "records in the sink", func() bool {
		select {
		case <-r.done:
			r.t.Fatalf("the pipeline ended early: %v\n%s", r.err, weirtest.Last(r.logs.String(), 30))
		default:
		}
		got = r.sink.all()
		return len(got) >= n
	})
	return got
}
