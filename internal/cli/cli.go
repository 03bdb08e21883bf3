// Package cli is the weir command line: run, validate, version, help.
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
	"runtime/pprof"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
)

// Exit codes, documented in weir --help.
const (
	ExitOK      = 0
	ExitConfig  = 1
	ExitUsage   = 2
	ExitRuntime = 3
	// ExitUnread: the run finished, but input was left unread (a source
	// reported bytes it will never read, such as a file gone before it was
	// read to its end).
	ExitUnread = 4
	ExitSignal = 130
)

// Version is set at build time with -ldflags "-X github.com/weir-etl/weir/internal/cli.Version=…".
var Version = "dev"

const usage = `weir moves records from sources through transforms to sinks, committing
source positions only once the data is durable.

Usage:
  weir run -c FILE       run a pipeline until interrupted or its input ends
  weir validate -c FILE  check a configuration and print every problem
  weir version           print the version
  weir help [types]      print this help, and the registered source and sink types

Run "weir COMMAND --help" for a command's flags.

Exit codes:
  0    success
  1    configuration error
  2    usage error
  3    runtime failure; a failure policy or give_up_after halted the
       pipeline; or it was stopped with data read but not delivered (a
       sink still failing): everything durable was committed, the rest is
       read again next time, and the summary says what was left
  4    finished, but input was left unread (files gone before they were
       read to their end: the summary and the warnings say which)
  130  a second interrupt (SIGINT/SIGTERM) exited at once; the first one
       shuts down gracefully, committing only what is durable

Signals: the first SIGINT or SIGTERM shuts down gracefully. A second one
at least 1s later exits at once (130); one within 1s of the first is taken
as the same interrupt (coreutils timeout, a process group and a supervisor
may each deliver the same stop). SIGHUP is logged and ignored.
`

// Main runs the command line with args (without the program name) and
// returns the exit code. The caller exits with it: after a second interrupt
// Main returns ExitSignal without waiting for the pipeline to stop.
func Main(args []string, stdout, stderr io.Writer) int {
	return (&command{stdout: stdout, stderr: stderr}).main(args)
}

// command is one invocation of the command line.
type command struct {
	stdout, stderr io.Writer
	// signals delivers interrupts to run; nil means SIGINT, SIGTERM and
	// SIGHUP.
	signals <-chan os.Signal
	// now is the clock of the double-interrupt rule; nil means time.Now.
	now func() time.Time
}

// repeatWindow is how soon after a first interrupt a second one is taken as
// the same stop delivered twice rather than as "exit now". `timeout` sends its
// signal to the command and to its whole process group, and a supervisor
// may signal both a process and its group: the copies arrive within
// milliseconds of each other, far inside it, while a person pressing Ctrl-C
// again waits longer than that.
const repeatWindow = time.Second

func (c *command) main(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(c.stdout, usage)
		return ExitOK
	case "help":
		return c.help(args[1:])
	case "version":
		return c.version(args[1:])
	case "run":
		return c.run(args[1:])
	case "validate":
		return c.validate(args[1:])
	case "top":
		return c.top(args[1:])
	}
	return c.usageErr("weir", fmt.Sprintf("unknown command %q", args[0]))
}

// usageErr prints msg and a hint about where help is, and returns ExitUsage.
func (c *command) usageErr(cmd, msg string) int {
	fmt.Fprintf(c.stderr, "weir: %s\nRun \"%s --help\" for usage.\n", msg, cmd)
	return ExitUsage
}

// flagSet returns the flags of command name. Its errors are printed by
// parse, help goes to stdout.
func (c *command) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("weir "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args; when it returns false the command must stop with code.
func (c *command) parse(fs *flag.FlagSet, args []string, synopsis, doc string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(c.stdout, "Usage: %s\n\n%s\n", synopsis, doc)
			var flags strings.Builder
			fs.SetOutput(&flags)
			fs.PrintDefaults()
			if flags.Len() > 0 {
				fmt.Fprintf(c.stdout, "\nFlags:\n%s", flags.String())
			}
			return ExitOK, false
		}
		return c.usageErr(fs.Name(), err.Error()), false
	}
	return 0, true
}

// configFlags parses the flags of run and validate, and returns the
// configuration path. extra, if not nil, adds the command's own flags.
func (c *command) configFlags(name, doc string, args []string, extra func(*flag.FlagSet)) (string, int, bool) {
	fs := c.flagSet(name)
	file := fs.String("c", "", "the pipeline configuration `FILE` (YAML)")
	if extra != nil {
		extra(fs)
	}
	if code, ok := c.parse(fs, args, "weir "+name+" -c FILE", doc); !ok {
		return "", code, false
	}
	switch {
	case fs.NArg() > 0:
		return "", c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q: give the configuration with -c FILE", fs.Arg(0))), false
	case *file == "":
		return "", c.usageErr(fs.Name(), "-c FILE is required"), false
	}
	return *file, 0, true
}

func (c *command) version(args []string) int {
	fs := c.flagSet("version")
	if code, ok := c.parse(fs, args, "weir version", "Prints the version."); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	fmt.Fprintf(c.stdout, "weir %s\n", Version)
	return ExitOK
}

func (c *command) help(args []string) int {
	fs := c.flagSet("help")
	if code, ok := c.parse(fs, args, "weir help [types]", "Prints the usage and the registered source and sink types; \"types\" prints only the types."); !ok {
		return code
	}
	switch {
	case fs.NArg() == 0:
		fmt.Fprint(c.stdout, usage)
		fmt.Fprintln(c.stdout)
		c.types()
	case fs.NArg() == 1 && fs.Arg(0) == "types":
		c.types()
	default:
		return c.usageErr(fs.Name(), fmt.Sprintf("unknown help topic %q (there is \"types\")", strings.Join(fs.Args(), " ")))
	}
	return ExitOK
}

// types lists the registered source and sink types with their one-line docs.
func (c *command) types() {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Source types:")
	for _, n := range connector.SourceTypes() {
		t, _ := connector.LookupSource(n)
		fmt.Fprintf(tw, "  %s\t%s\n", n, t.Doc)
	}
	fmt.Fprintln(tw, "\nSink types:")
	for _, n := range connector.SinkTypes() {
		t, _ := connector.LookupSink(n)
		fmt.Fprintf(tw, "  %s\t%s\n", n, t.Doc)
	}
	fmt.Fprintln(tw, "\nTransform types: filter, map, flat_map, route (see docs/config.md).")
	tw.Flush()
}

func (c *command) validate(args []string) int {
	path, code, ok := c.configFlags("validate", "Checks the configuration and prints every problem, one per line.", args, nil)
	if !ok {
		return code
	}
	if _, err := config.Load(path); err != nil {
		fmt.Fprintln(c.stderr, err)
		return ExitConfig
	}
	fmt.Fprintf(c.stdout, "%s: ok\n", path)
	return ExitOK
}

func (c *command) run(args []string) int {
	var cpuProfile string
	path, code, ok := c.configFlags("run", runDoc, args, func(fs *flag.FlagSet) {
		fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof FILE)")
	})
	if !ok {
		return code
	}
	spec, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return ExitConfig
	}
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(ch)
		sigs = ch
	}
	now := c.now
	if now == nil {
		now = time.Now
	}
	if cpuProfile != "" {
		stopProfile, err := startCPUProfile(cpuProfile)
		if err != nil {
			fmt.Fprintln(c.stderr, "weir:", err)
			return ExitRuntime
		}
		defer stopProfile()
	}
	var report *pipeline.Report // set before Run returns
	opts := []pipeline.Option{pipeline.WithLogger(log), pipeline.WithReport(func(r *pipeline.Report) {
		// stderr, never stdout: a stdout sink's output must stay pure NDJSON.
		fmt.Fprint(c.stderr, r.String())
		report = r
	})}
	if w := progressTo(c.stderr); w != nil {
		opts = append(opts, pipeline.WithProgress(w, time.Second))
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, spec, opts...) }()
	var first time.Time // of the first interrupt
	for {
		select {
		case err := <-done:
			return c.exitCode(err, report)
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGHUP:
				log.Warn("SIGHUP ignored: weir does not reload its configuration; stop it (SIGTERM) and start it again to change it")
			case first.IsZero():
				first = now()
				log.Info("interrupt: shutting down gracefully (interrupt again, a second or more later, to exit at once)", "signal", sig.String())
				stop()
			case now().Sub(first) < repeatWindow:
				log.Info("the same interrupt again within a second: still shutting down gracefully", "signal", sig.String())
			default:
				// The pipeline is left running; the process exits with this
				// code, and whatever was not committed is read again next time.
				fmt.Fprintln(c.stderr, "weir: second interrupt: exiting at once; uncommitted data will be read again")
				return ExitSignal
			}
		}
	}
}

const runDoc = `Runs the pipeline until interrupted or its input ends, then prints a summary
on stderr: records read per source (with what it skipped or left unread, and
why), in and out (and dropped) per transform, written per sink with where its
output is, and the committed positions. A run that left input unread exits
with code 4; a run stopped with data read but not delivered (a sink still
failing) exits with code 3. The first SIGINT or SIGTERM shuts down
gracefully; a second, a second or more later, exits at once with code 130
(one within a second is the same interrupt delivered twice). SIGHUP is
logged and ignored.`

// startCPUProfile starts writing a CPU profile to path and returns the
// function that stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// exitCode is the exit code of a run that ended with err and report (nil if
// the pipeline did not start).
func (c *command) exitCode(err error, report *pipeline.Report) int {
	if err == nil {
		if n := unread(report); n > 0 {
			fmt.Fprintf(c.stderr, "weir: finished, but %d bytes of input were left unread (see the summary and the warnings above)\n", n)
			return ExitUnread
		}
		return ExitOK
	}
	fmt.Fprintln(c.stderr, "weir:", err)
	var fe *connector.FieldError
	if errors.Is(err, pipeline.ErrSpec) || errors.As(err, &fe) {
		// A connector found an option wrong only when it met the world
		// (a path that matches no file): still the configuration.
		return ExitConfig
	}
	return ExitRuntime
}

func unread(r *pipeline.Report) int64 {
	if r == nil {
		return 0
	}
	return r.UnreadBytes()
}

// progressTo returns where the progress display goes: w when it is a
// terminal, nil otherwise (a file, a pipe, a log collector), where a line
// redrawn every second would only be noise.
func progressTo(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		return f
	}
	return nil
}

// isTerminal reports whether f is a terminal: not a file, a pipe, or a
// character device such as /dev/null.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
