package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/bench/internal/proc"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"

	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/source/file"
)

// rssEvery is how often the stall case samples its RSS.
const rssEvery = 50 * time.Millisecond

// stallReport is what the stall child prints: its RSS samples (MB) and the
// records its sink was handed.
type stallReport struct {
	RSS     []float64
	Written int64
}

// runStall runs the stall case in a child process and prints how its RSS
// moved.
func runStall(dir, in string) {
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(self, "-stall-child", in, "-dir", dir, "-stall-for", stallFor.String())
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("stall: %v", err)
	}
	var r stallReport
	if err := json.Unmarshal(out, &r); err != nil {
		log.Fatalf("stall: the child's answer %q: %v", out, err)
	}
	fmt.Printf("stall: file → filter → file sink that never becomes durable, %v: the sink was handed %d records; RSS by second (MB, largest sample):", *stallFor, r.Written)
	per := int(time.Second / rssEvery)
	for i := 0; i < len(r.RSS); i += per {
		fmt.Printf(" %.0f", slices.Max(r.RSS[i:min(i+per, len(r.RSS))]))
	}
	fmt.Println()
}

// stallMain runs file → filter → file with default settings in this
// process, the sink's groups never becoming durable, for -stall-for while it
// samples RSS, prints the samples and exits.
func stallMain(in string) {
	run := filepath.Join(*workDir, "stall")
	os.RemoveAll(run)
	yaml := fmt.Sprintf(pipelineYAML, in, run, fmt.Sprintf(sinkYAML, "a", run, true, false, ""), filterYAML, "")
	spec, err := config.Parse("stall.yaml", []byte(yaml))
	if err != nil {
		log.Fatal(err)
	}
	st := &stalled{Sink: spec.Sinks[0].Sink}
	spec.Sinks[0].Sink = st
	if sl, ok := st.Sink.(connector.Sealer); ok {
		spec.Sinks[0].Sink = &stalledSealer{stalled: st, sealer: sl}
	}
	go func() {
		err := pipeline.Run(context.Background(), spec, pipeline.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		log.Fatalf("stall: the pipeline stopped: %v", err)
	}()
	var rss []float64
	t := time.NewTicker(rssEvery)
	for end := time.Now().Add(*stallFor); time.Now().Before(end); <-t.C {
		rss = append(rss, proc.RSSMB())
	}
	if err := json.NewEncoder(os.Stdout).Encode(stallReport{RSS: rss, Written: st.written.Load()}); err != nil {
		log.Fatal(err)
	}
	os.Exit(0) // the stalled sink would hold a graceful stop for the shutdown timeout
}

// stalled is a sink whose groups never become durable: Flush, and a sealed
// group's Persist, wait until their context ends.
type stalled struct {
	connector.Sink
	written atomic.Int64
}

func (s *stalled) Write(ctx context.Context, recs []record.Record) error {
	s.written.Add(int64(len(recs)))
	return s.Sink.Write(ctx, recs)
}

func (s *stalled) Flush(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

type stalledSealer struct {
	*stalled
	sealer connector.Sealer
}

func (s *stalledSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g, err := s.sealer.Seal(ctx)
	if err != nil {
		return nil, err
	}
	return stalledGroup{g}, nil
}

type stalledGroup struct{ connector.SealedGroup }

func (stalledGroup) Persist(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
