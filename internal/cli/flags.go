package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/pipeline"
)

// configFlags say which pipeline to load: -c FILE (- for stdin), --set
// path=value (repeatable), and, for run, --metrics-addr.
type configFlags struct {
	file        string
	sets        setFlag
	metricsAddr string
}

// register adds the flags to fs; metrics adds --metrics-addr.
func (cf *configFlags) register(fs *flag.FlagSet, metrics bool) {
	fs.StringVar(&cf.file, "c", "", "the pipeline configuration `FILE` (YAML); - reads it from stdin")
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

// read reads the configuration the flags name.
func (c *command) read(cf *configFlags) (*source, error) {
	if cf.file == "-" {
		data, err := io.ReadAll(c.stdin)
		if err != nil {
			return nil, fmt.Errorf("config: reading stdin: %w", err)
		}
		return &source{name: "stdin", data: data, sets: cf.edits(), stdin: true}, nil
	}
	data, err := os.ReadFile(cf.file)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &source{name: cf.file, path: cf.file, data: data, sets: cf.edits()}, nil
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

// load turns the source into a Spec, building its connectors.
func (s *source) load() (*pipeline.Spec, error) {
	return config.ParseWith(s.name, s.data, config.Options{Sets: s.sets})
}

// configArgs checks what is left after the flags of run and validate.
func (c *command) configArgs(fs *flag.FlagSet, cf *configFlags) (int, bool) {
	switch {
	case fs.NArg() > 0:
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q: give the configuration with -c FILE", fs.Arg(0))), false
	case cf.file == "":
		return c.usageErr(fs.Name(), "-c FILE is required (-c - reads stdin)"), false
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
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", lf.format)
}
