package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

// promptSource is an endless generator that asks to be committed promptly
// and reports each commit.
type promptSource struct {
	connector.Source
	commits chan []connector.Commit
}

func (p *promptSource) CommitPromptly() bool { return true }

func (p *promptSource) Commit(ctx context.Context, cs []connector.Commit) error {
	select {
	case p.commits <- append([]connector.Commit(nil), cs...):
	default:
	}
	return p.Source.Commit(ctx, cs)
}

// Guarantee: a connector.PromptCommitter is committed as soon as its
// watermark moves, not on the commit interval (an hour here, so the only
// commits before the stop are prompt ones).
func TestPromptSourceIsCommittedBeforeTheInterval(t *testing.T) {
	src := &promptSource{Source: gen(t, 0, 1, 10), commits: make(chan []connector.Commit, 1)}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()})
	sp.Checkpoint.CommitInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet) }()
	// The deadline only keeps a broken build from hanging the test.
	select {
	case cs := <-src.commits:
		if len(cs) == 0 || cs[0].Position <= 0 {
			t.Errorf("a prompt commit of %v, want a position past the start", cs)
		}
	case err := <-done:
		t.Fatalf("the run ended before any commit: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no commit within a minute although the watermark moved and the source commits promptly")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
