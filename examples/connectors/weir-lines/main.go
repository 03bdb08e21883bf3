// Command weir-lines runs weir pipelines with two more connector types, the
// example source "lines" and sink "jsonl", besides weir's own: the shape of
// a binary that links third-party connectors, using only weir's public
// packages (docs/connectors.md, "Linking a connector into a binary").
//
//	go run ./examples/connectors/weir-lines -c examples/connectors/lines.yaml
//
// It loads and runs one pipeline file; the first SIGINT or SIGTERM stops it
// gracefully (everything durable is committed), a second one kills it. Exit
// codes: 0 success, 1 configuration error, 2 usage error, 3 runtime
// failure or halt.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/pipeline"

	// Each import registers connector types with the configuration.
	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/sink/kafka"
	_ "github.com/weir-etl/weir/sink/stdout"
	_ "github.com/weir-etl/weir/source/file"
	_ "github.com/weir-etl/weir/source/generate"
	_ "github.com/weir-etl/weir/source/kafka"

	_ "github.com/weir-etl/weir/examples/connectors/jsonlsink"
	_ "github.com/weir-etl/weir/examples/connectors/linesource"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run runs the command with args and returns its exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("weir-lines", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("c", "", "the pipeline `FILE` to run")
	if err := fs.Parse(args); err != nil || *path == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: weir-lines -c FILE")
		return 2
	}
	spec, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, err) // every problem, one per line
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// Once the first signal cancelled ctx, stop catching them: a second one
	// kills the process at once. Nothing past what is durable was committed.
	context.AfterFunc(ctx, stop)
	var report *pipeline.Report
	err = pipeline.Run(ctx, spec,
		pipeline.WithLogger(slog.New(slog.NewTextHandler(stderr, nil))),
		pipeline.WithReport(func(r *pipeline.Report) { report = r }))
	if report != nil {
		fmt.Fprintln(stderr, report) // what was read, written and committed
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 3
	}
	return 0
}
