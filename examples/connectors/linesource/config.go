package linesource

import (
	"errors"
	"path/filepath"

	"github.com/weir-etl/weir/connector"
)

// Config is the source's configuration: the options under a source of
// `type: lines`. The `yaml` tag is the option's name; the `doc` tag is the
// sentence `weir help` and the configuration schema show for it.
type Config struct {
	Dir       string `yaml:"dir" doc:"The directory to read: each regular file in it matching pattern is a partition, read once from its committed position to its end."`
	Pattern   string `yaml:"pattern" doc:"Which files of dir to read, as a shell pattern (filepath.Match: *, ?, [a-z]); default *."`
	StateFile string `yaml:"state_file" doc:"The file that keeps the committed position of every file, replaced atomically on each commit; its directory is created if missing."`
	BatchSize int    `yaml:"batch_size" doc:"The most lines in one poll batch; default 500."`
	// MaxLineBytes bounds the read buffer, which must hold a whole line.
	MaxLineBytes int `yaml:"max_line_bytes" doc:"The longest line, in bytes with its newline; a longer one stops the source with an error naming the file and offset. Default 1048576."`
}

// NewConfig returns a Config with the defaults filled in: the registry
// decodes a component's options over it, so an option left out keeps its
// default.
func NewConfig() *Config {
	return &Config{Pattern: "*", BatchSize: 500, MaxLineBytes: 1 << 20}
}

// Validate reports every invalid option at once, each as a
// *connector.FieldError naming the option and the fix. It looks at the
// configuration only, not at the disk: `weir validate` may run on another
// machine than `weir run`, and Open reports a directory that is missing.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, connector.Fieldf("dir", "is empty: set the directory to read, e.g. dir: ./in"))
	}
	if _, err := filepath.Match(c.Pattern, ""); err != nil || c.Pattern == "" {
		errs = append(errs, connector.Fieldf("pattern", "%q is not a file name pattern: use *, ? and [a-z] classes, e.g. pattern: '*.ndjson'", c.Pattern))
	}
	if c.StateFile == "" {
		errs = append(errs, connector.Fieldf("state_file", "is empty: set the file that keeps the committed positions, e.g. state_file: ./state/lines.json"))
	}
	if c.BatchSize < 1 {
		errs = append(errs, connector.Fieldf("batch_size", "is %d: it must be at least 1, e.g. 500", c.BatchSize))
	}
	if c.MaxLineBytes < 16 {
		errs = append(errs, connector.Fieldf("max_line_bytes", "is %d: it must be at least 16, e.g. 1048576", c.MaxLineBytes))
	}
	return errors.Join(errs...)
}

// Registration: the configuration finds the type by its Name. Build gets the
// decoded, validated *Config; it should not do I/O (Open does), so that
// `weir validate` builds nothing it would have to close.
func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "lines",
		Doc:    "reads the lines of the files in a directory, once (an example source; see docs/connectors.md)",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}
