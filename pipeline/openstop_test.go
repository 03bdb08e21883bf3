package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

// slowOpen is a sink whose Open waits for its context (a database that does
// not answer yet), or fails at once with err when err is set.
type slowOpen struct {
	*blackhole.Sink
	opening chan struct{}
	err     error
}

func (s *slowOpen) Open(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	close(s.opening)
	<-ctx.Done()
	return ctx.Err()
}

// A stop asked for while a sink is still opening (a SIGTERM at start) ends
// the run as a stop: nothing was read, and Run returns nil, as it does when
// a source's Open is cut short; a sink's Open that fails by itself is still
// the run's error.
func TestStopWhileASinkOpensIsAStop(t *testing.T) {
	s := &slowOpen{Sink: blackhole.New(), opening: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, fastSpec(gen(t, 0, 1, 10), pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: s}), quiet)
	}()
	<-s.opening
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stopped while the sink opened: Run returned %v, want nil", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after the stop")
	}

	broken := &slowOpen{Sink: blackhole.New(), err: errors.New("connection refused")}
	err := pipeline.Run(context.Background(), fastSpec(gen(t, 0, 1, 10), pipeline.SinkSpec{Name: "db", Inputs: []string{"gen"}, Sink: broken}), quiet)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a sink whose Open fails: Run returned %v, want its error", err)
	}
}
