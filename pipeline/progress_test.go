package pipeline_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

func TestProgressLineFormat(t *testing.T) {
	for _, tc := range []struct {
		in, out   int64
		elapsed   time.Duration
		committed string
		want      string
	}{
		{2000, 1000, 2 * time.Second, "gen gen/0=5 gen/1=7", "\r\033[Kin 1000 rec/s  out 500 rec/s  committed gen gen/0=5 gen/1=7"},
		{0, 0, time.Second, "", "\r\033[Kin 0 rec/s  out 0 rec/s  committed -"},
		{10, 10, 0, "a x=1; b y=2", "\r\033[Kin 10 rec/s  out 10 rec/s  committed a x=1; b y=2"},
	} {
		if got := pipeline.ProgressLine(tc.in, tc.out, tc.elapsed, tc.committed); got != tc.want {
			t.Errorf("ProgressLine(%d, %d, %v, %q) = %q, want %q", tc.in, tc.out, tc.elapsed, tc.committed, got, tc.want)
		}
	}
}

// lineWriter sends every Write to a channel.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) { w.lines <- string(p); return len(p), nil }

// Guarantee: the progress display refreshes one line in place with rates and
// committed positions, and erases it when the run ends.
func TestProgressDisplay(t *testing.T) {
	src := gen(t, 0, 1, 100)
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: blackhole.New()})
	clock := newFakeClock()
	ticks := make(chan time.Time)
	w := lineWriter{lines: make(chan string, 1)}
	committed := make(chan struct{})
	var once sync.Once
	hook := pipeline.WithCommitted(func(string) {
		if src.Offsets().Get("gen/0") > 0 {
			once.Do(func() { close(committed) })
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, quiet, hook, pipeline.WithClock(clock.now, nil),
			pipeline.WithProgress(w, time.Hour), pipeline.WithProgressTicks(ticks))
	}()
	<-committed
	ticks <- clock.now().Add(time.Second)
	line := <-w.lines
	if !regexp.MustCompile(`^\r\x1b\[Kin [1-9]\d* rec/s  out \d+ rec/s  committed gen gen/0=[1-9]\d*$`).MatchString(line) {
		t.Errorf("progress line %q", line)
	}
	cancel()
	// No tick comes any more: the next write is the last.
	if last := <-w.lines; last != "\r\033[K" {
		t.Errorf("last write %q, want the line erased", last)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
