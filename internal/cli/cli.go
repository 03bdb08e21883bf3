// Package cli is the weir command line: run, validate, version.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/pipeline"
)

// Exit codes, documented in weir --help.
const (
	ExitOK      = 0
	ExitConfig  = 1
	ExitUsage   = 2
	ExitRuntime = 3
	ExitSignal  = 130
)

// Version is set at build time with -ldflags "-X github.com/weir-etl/weir/internal/cli.Version=…".
var Version = "dev"

const usage = `weir moves records from sources through transforms to sinks, committing
source positions only once the data is durable.

Usage:
  weir run -c FILE       run a pipeline until interrupted or its input ends
  weir validate -c FILE  check a configuration and print every problem
  weir version           print the version

Run "weir COMMAND --help" for a command's flags.

Exit codes:
  0    success
  1    configuration error
  2    usage error
  3    runtime failure, or a sink's halt policy stopped the pipeline
  130  a second interrupt (SIGINT/SIGTERM) exited at once; the first one
       shuts down gracefully, committing only what is durable
`

// Main runs the command line with args (without the program name) and
// returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	case "version":
		fmt.Fprintf(stdout, "weir %s\n", Version)
		return ExitOK
	case "run":
		return run(args[1:], stdout, stderr)
	case "validate":
		return validate(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "weir: unknown command %q\n\n%s", args[0], usage)
	return ExitUsage
}

func flags(name, doc string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("weir "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", "", "the pipeline configuration `FILE` (YAML)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir %s -c FILE\n\n%s\n\nFlags:\n", name, doc)
		fs.PrintDefaults()
	}
	return fs, file
}

// parse returns the config path, or an exit code when the caller must stop.
func parse(fs *flag.FlagSet, file *string, args []string, stderr io.Writer) (string, int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", ExitOK, false
		}
		return "", ExitUsage, false
	}
	if *file == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "weir: -c FILE is required, and nothing else")
		fs.Usage()
		return "", ExitUsage, false
	}
	return *file, 0, true
}

func validate(args []string, stdout, stderr io.Writer) int {
	fs, file := flags("validate", "Checks the configuration and prints every problem, one per line.", stderr)
	path, code, ok := parse(fs, file, args, stderr)
	if !ok {
		return code
	}
	if _, err := config.Load(path); err != nil {
		fmt.Fprintln(stderr, err)
		return ExitConfig
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return ExitOK
}

func run(args []string, stdout, stderr io.Writer) int {
	fs, file := flags("run", "Runs the pipeline until interrupted or its input ends. The first SIGINT or\nSIGTERM shuts down gracefully; a second exits at once with code 130.", stderr)
	path, code, ok := parse(fs, file, args, stderr)
	if !ok {
		return code
	}
	spec, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitConfig
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		log.Info("interrupt: shutting down gracefully (interrupt again to exit at once)")
		stop()
		<-sigs
		fmt.Fprintln(stderr, "weir: second interrupt: exiting at once; uncommitted data will be read again")
		os.Exit(ExitSignal)
	}()
	opts := []pipeline.Option{pipeline.WithLogger(log)}
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		opts = append(opts, pipeline.WithProgress(f, time.Second))
	}
	if err := pipeline.Run(ctx, spec, opts...); err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		if errors.Is(err, pipeline.ErrSpec) {
			return ExitConfig
		}
		return ExitRuntime
	}
	return ExitOK
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
