// Package cli is the weir command line: run, validate, test, tap, top,
// health, list, help, schema, expr and version.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
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
	// ExitTestFailed: weir test ran, and a test failed.
	ExitTestFailed = 5
	ExitSignal     = 130
)

// Version is set at build time with -ldflags "-X github.com/weir-etl/weir/internal/cli.Version=…";
// left alone, weir version shows the module version from the build info.
var Version = "dev"

const usage = `weir moves records from sources through transforms to sinks, committing
source positions only once the data is durable.

Usage:
  weir run -c FILE       run a pipeline until interrupted or its input ends
  weir run -d DIR        run every pipeline file of DIR, each on its own
  weir validate -c FILE  check a configuration and print every problem
  weir pipelines CMD     list, get, apply, pause, resume, delete or reset the
                         pipelines of a running weir run -d (its API)
  weir test [PATH...]    run the tests of configurations (FILE_test.yaml beside FILE)
  weir tap COMPONENT     print a sample of the records leaving a component of a running weir
  weir top               show a running weir's status in the terminal
  weir health            check a running weir's /healthz (or -ready: /readyz)
  weir list              list the source, transform and sink types
  weir help [TOPIC]      print this help, or a type's options (weir help file)
  weir schema            print the JSON Schema of a pipeline file, for editors
  weir expr [EXPR]       evaluate an expression on records (a prompt without EXPR)
  weir version           print the version, revision and Go version (also --version)

Run "weir COMMAND --help" for a command's flags. -c - reads the
configuration from stdin; --set path=value changes a setting of it.

Exit codes:
  0    success
  1    configuration error (every problem is printed)
  2    usage error
  3    runtime failure; a failure policy or give_up_after halted the
       pipeline; or it was stopped with data read but not delivered (a
       sink still failing): everything durable was committed, the rest is
       read again next time, and the summary says what was left
  4    finished, but input was left unread (files gone, or rotated where
       weir does not read, before they were read to their end: the summary
       and the warnings say which)
  5    weir test: a test failed
  130  a second interrupt (SIGINT/SIGTERM) exited at once; the first one
       shuts down gracefully, committing only what is durable

Signals: the first SIGINT or SIGTERM shuts down gracefully. A second one
at least 1s later exits at once (130); one within 1s of the first is taken
as the same interrupt (coreutils timeout, a process group and a supervisor
may each deliver the same stop). SIGHUP reloads the configuration (weir run
--help says how).
`

// Main runs the command line with args (without the program name) and
// returns the exit code. The caller exits with it: after a second interrupt
// Main returns ExitSignal without waiting for the pipeline to stop.
func Main(args []string, stdout, stderr io.Writer) int {
	return (&command{stdin: os.Stdin, stdout: stdout, stderr: stderr}).main(args)
}

// command is one invocation of the command line.
type command struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// signals delivers interrupts and SIGHUP to run; nil means the
	// process's own.
	signals <-chan os.Signal
	// now is the clock of the double-interrupt rule; nil means time.Now.
	now func() time.Time
	// watchEvery is how often --watch looks at the configuration file;
	// zero means watchInterval.
	watchEvery time.Duration
	// reloaded, if set, is called after a reload started the new
	// configuration (true) or refused an invalid one (false); tests wait
	// on it.
	reloaded func(ok bool)
	// listening, if set, is called with the address weir run -d listens on.
	listening func(addr string)
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
	case "-version", "--version":
		return c.version(args[1:])
	case "help":
		return c.help(args[1:])
	case "version":
		return c.version(args[1:])
	case "run":
		return c.run(args[1:])
	case "validate":
		return c.validate(args[1:])
	case "test":
		return c.test(args[1:])
	case "tap":
		return c.tap(args[1:])
	case "top":
		return c.top(args[1:])
	case "health":
		return c.health(args[1:])
	case "list":
		return c.list(args[1:])
	case "pipelines":
		return c.pipelines(args[1:])
	case "schema":
		return c.schema(args[1:])
	case "expr":
		return c.expr(args[1:])
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
// Flags may come after the arguments too (weir tap paid -n 5).
func (c *command) parse(fs *flag.FlagSet, args []string, synopsis, doc string) (code int, ok bool) {
	if err := parseInterspersed(fs, args); err != nil {
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

// parseInterspersed parses fs from args, taking flags that follow the
// arguments too; the arguments are left in fs.Args(). "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			rest = append(rest, args[1:]...)
			break
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
	return fs.Parse(append([]string{"--"}, rest...))
}

func (c *command) list(args []string) int {
	fs := c.flagSet("list")
	if code, ok := c.parse(fs, args, "weir list", "Lists the source, transform and sink types this weir has, with one line each."); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	listTypes(c.stdout)
	return ExitOK
}

// isTerminal reports whether f is a terminal: not a file, a pipe, or a
// character device such as /dev/null.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
