package pipeline_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

// Guarantee: the progress line shows rates, totals, errors and the slowest
// partition, and fits the width it is given: the totals go first, then the
// slowest partition, then the errors; the rates stay, cut short if need be,
// and the last column is never written (a terminal would wrap).
func TestProgressLineFormat(t *testing.T) {
	const cl = "\r\033[K"
	long := "orders/" + strings.Repeat("x", 80) + "@2049:1234/0"
	for _, tc := range []struct {
		name    string
		line    string
		want    string
		maxCols int
	}{
		{"everything", pipeline.ProgressLine(12345, 1_200_000, 2000, 950, 3, "orders/3", 1204, 12*time.Second, 0),
			cl + "in 2k/s  out 950/s  |  read 12.3k  written 1.2M  |  errors 3  |  slowest orders/3 lag 1.2k stalled 12s", 0},
		{"no lag known, not stalled", pipeline.ProgressLine(10, 10, 10, 10, 0, "gen/0", -1, 0, 0),
			cl + "in 10/s  out 10/s  |  read 10  written 10  |  errors 0  |  slowest gen/0", 0},
		{"nothing slow", pipeline.ProgressLine(0, 0, 0, 0, 0, "", -1, 0, 0),
			cl + "in 0/s  out 0/s  |  read 0  written 0  |  errors 0", 0},
		{"a long name is cut in the middle", pipeline.ProgressLine(0, 0, 0, 0, 0, long, 5, 0, 0),
			cl + "in 0/s  out 0/s  |  read 0  written 0  |  errors 0  |  slowest orders/xxxxxxxxxxxx…xxxxxxxx@2049:1234/0 lag 5", 0},
		{"80 columns: the totals go", pipeline.ProgressLine(12345, 1_200_000, 2000, 950, 3, "orders/3", 1204, 12*time.Second, 80),
			cl + "in 2k/s  out 950/s  |  errors 3  |  slowest orders/3 lag 1.2k stalled 12s", 80},
		{"40 columns: the slowest partition too", pipeline.ProgressLine(12345, 1_200_000, 2000, 950, 3, "orders/3", 1204, 12*time.Second, 40),
			cl + "in 2k/s  out 950/s  |  errors 3", 40},
		{"25 columns: only the rates", pipeline.ProgressLine(12345, 1_200_000, 2000, 950, 3, "orders/3", 1204, 12*time.Second, 25),
			cl + "in 2k/s  out 950/s", 25},
		{"10 columns: the rates cut", pipeline.ProgressLine(12345, 1_200_000, 2000, 950, 3, "orders/3", 1204, 12*time.Second, 10),
			cl + "in 2k/s  ", 10},
	} {
		if tc.line != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.line, tc.want)
		}
		if n := utf8.RuneCountInString(strings.TrimPrefix(tc.line, cl)); tc.maxCols > 0 && n >= tc.maxCols {
			t.Errorf("%s: %d columns on a terminal of %d", tc.name, n, tc.maxCols)
		}
	}
}

// lineWriter sends every Write to a channel and says the width it has.
type lineWriter struct {
	lines chan string
	width int
}

func (w lineWriter) Write(p []byte) (int, error) { w.lines <- string(p); return len(p), nil }
func (w lineWriter) Width() int                  { return w.width }

// Guarantee: the progress display refreshes one line in place with rates
// and totals, and erases it when the run ends.
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
	if !regexp.MustCompile(`^\r\x1b\[Kin [1-9][0-9.]*k?/s  out [0-9.]+k?/s  \|  read [1-9][0-9.]*[kM]?  written [0-9.]+[kM]?  \|  errors 0$`).MatchString(line) {
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

// Guarantee: the slowest partition on the line is the one with the largest
// lag, from the source's own idea of its ends (LagReporter), and the line
// keeps to the writer's width.
func TestProgressShowsTheSlowestPartition(t *testing.T) {
	sp := &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "idle", Source: newQuietSource(5)}},
		Sinks:      []pipeline.SinkSpec{{Name: "out", Inputs: []string{"idle"}, Sink: blackhole.New()}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	ticks := make(chan time.Time)
	w := lineWriter{lines: make(chan string, 1), width: 100}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, quiet, pipeline.WithProgress(w, time.Hour), pipeline.WithProgressTicks(ticks))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ticks <- time.Now()
		line := <-w.lines
		if strings.Contains(line, "slowest idle/p00004 lag 4") && utf8.RuneCountInString(line) < 100+len("\r\033[K") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the line never named the slowest partition: %q", line)
		}
	}
	cancel()
	<-w.lines
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
