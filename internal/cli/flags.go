package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/pipeline"
)

// configFlags say which pipeline to load: -c FILE (- for stdin), --set
// path=value (repeatable), and, for run, --metrics-addr.
type configFlags struct {
	file        string   // the first -c
	files       fileFlag // every -c, in order
	sets        setFlag
	metricsAddr string
}

// register adds the flags to fs; metrics adds --metrics-addr.
func (cf *configFlags) register(fs *flag.FlagSet, metrics bool) {
	fs.Var(&cf.files, "c", "the pipeline configuration `FILE` (YAML); - reads it from stdin")
	fs.Var(&cf.sets, "set", "change a setting: `path=value`, the value as YAML would type it in the file (sinks.out.batch.max_age=5s, sources.in.paths=[a, b]); repeatable, applied in order")
	if metrics {
		fs.StringVar(&cf.metricsAddr, "metrics-addr", "", "serve the HTTP endpoints (metrics, health, status, tap) on `ADDRESS` (host:port), or off; overrides metrics.address")
	}
}

// edits returns the sets, with --metrics-addr as the last.
func (cf *configFlags) edits() []config.Set {
	sets := append([]config.Set(nil), cf.sets...)
	if cf.metricsAddr != "" {
		sets = append(sets, config.Set{Flag: "--metrics-addr " + cf.metricsAddr, Path: "metrics.address", Value: strconv.Quote(cf.metricsAddr)})
	}
	return sets
}

// fileFlag collects -c flags.
type fileFlag []string

func (f *fileFlag) String() string { return strings.Join(*f, " ") }

func (f *fileFlag) Set(arg string) error {
	*f = append(*f, arg)
	return nil
}

// setFlag collects --set flags.
type setFlag []config.Set

func (s *setFlag) String() string {
	var parts []string
	for _, x := range *s {
		parts = append(parts, x.Path+"="+x.Value)
	}
	return strings.Join(parts, " ")
}

func (s *setFlag) Set(arg string) error {
	x, err := config.ParseSet("--set", arg)
	if err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "config: "))
	}
	*s = append(*s, x)
	return nil
}

// source is a pipeline file as read: its name in errors and its bytes. A
// file is read again on reload; stdin only once.
type source struct {
	name  string
	path  string // "" for stdin
	data  []byte
	sets  []config.Set
	stdin bool
	// reloaded marks a configuration a reload brought.
	reloaded bool
}

// read reads the configuration the flags name (the first, for a command that
// takes one).
func (c *command) read(cf *configFlags) (*source, error) {
	return c.readFile(cf, cf.file)
}

// readFile reads the configuration file, one of those the flags name.
func (c *command) readFile(cf *configFlags, file string) (*source, error) {
	if file == "-" {
		data, err := io.ReadAll(c.stdin)
		if err != nil {
			return nil, fmt.Errorf("config: reading stdin: %w", err)
		}
		return &source{name: "stdin", data: data, sets: cf.edits(), stdin: true}, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &source{name: file, path: file, data: data, sets: cf.edits()}, nil
}

// reread reads the file again (a reload): a new source with the same flags.
func (s *source) reread() (*source, error) {
	if s.stdin {
		return nil, fmt.Errorf("the configuration came from stdin, which cannot be read again: run weir with -c FILE to reload it")
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &source{name: s.name, path: s.path, data: data, sets: s.sets}, nil
}

// load turns the source into a Spec, building its connectors and checking
// what they need of the world outside the file (connector.Checker); warn,
// when not nil, receives each warning (a deprecated spelling that still
// loads).
func (s *source) load(warn func(*config.Error)) (*pipeline.Spec, error) {
	return s.loadWith(false, warn)
}

// loadWith is load; offline leaves the connectors unchecked.
func (s *source) loadWith(offline bool, warn func(*config.Error)) (*pipeline.Spec, error) {
	return config.ParseWith(s.name, s.data, config.Options{Sets: s.sets, Offline: offline, Warn: warn})
}

// configArgs checks what is left after the flags of run and validate; many
// says whether the command takes several -c.
func (c *command) configArgs(fs *flag.FlagSet, cf *configFlags, many bool) (int, bool) {
	if len(cf.files) > 0 {
		cf.file = cf.files[0]
	}
	switch {
	case fs.NArg() > 0:
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q: give the configuration with -c FILE", fs.Arg(0))), false
	case cf.file == "":
		return c.usageErr(fs.Name(), "-c FILE is required (-c - reads stdin)"), false
	case len(cf.files) > 1 && !many:
		return c.usageErr(fs.Name(), fmt.Sprintf("-c is given %d times (%s): weir %s takes one configuration", len(cf.files), strings.Join(cf.files, ", "), fs.Name())), false
	case len(cf.files) > 1 && slices.Contains(cf.files, "-"):
		return c.usageErr(fs.Name(), "-c - (stdin) cannot be given with other -c files"), false
	}
	return 0, true
}

// logFlags are --log-format and --log-level.
type logFlags struct {
	format, level string
}

func (lf *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.format, "log-format", "text", "log lines as `text` (logfmt) or json (one object a line)")
	fs.StringVar(&lf.level, "log-level", "info", "log at `LEVEL` and above: debug, info, warn or error")
}

// json reports whether the log lines are to be JSON.
func (lf *logFlags) json() bool { return strings.EqualFold(lf.format, "json") }

// handler returns the slog handler the flags ask for, writing to w.
func (lf *logFlags) handler(w io.Writer) (slog.Handler, error) {
	var level slog.Level
	switch strings.ToLower(lf.level) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", lf.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(lf.format) {
	case "text", "logfmt":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		// A duration as Go writes it ("1.5s"), not as nanoseconds: the
		// text format shows it so, and a reader should not have to divide.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", lf.format)
}
