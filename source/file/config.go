package file

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/weir-etl/weir/connector"
)

// Config is the file source's configuration (the options under a source of
// `type: file`). NewConfig fills in the defaults.
type Config struct {
	// Paths are file paths or globs (filepath.Match syntax: *, ?, [..]; no **).
	Paths []string `yaml:"paths" doc:"Files or globs (*, ?, [..]; no **) to read. Keep rotated names (app.log.1) out of them and in rotated."`
	// Rotated are globs where rotated files are looked for (see docs).
	Rotated []string `yaml:"rotated" doc:"Globs matching where rotation puts old files (e.g. /var/log/app/app.log.*, or logrotate's olddir). A file known from paths is looked for there as well as in its own directory; a file there that weir never saw and that changed since weir last looked is read from its start."`
	// AllowEmpty lets a path of mode once match no file.
	AllowEmpty bool `yaml:"allow_empty" doc:"In mode once, let a path match no file (by default that is a configuration error, since nothing would be read)."`
	// Format is the framing and decoding of records.
	Format string `yaml:"format" doc:"ndjson (one JSON value a line), lines (each line's bytes), csv (RFC 4180; fields named by the header) or dead_letter (a file a dead letter sink wrote: each record back as it failed, see docs/config.md)."`
	// Mode is once or tail.
	Mode string `yaml:"mode" doc:"once reads every matched file to its end and finishes; tail follows appends, new files and rotation until stopped."`
	// DataDir is where read positions are kept. Required.
	DataDir string `yaml:"data_dir" doc:"Directory of the state file that keeps the committed read positions (file-source-<name>.db). Required."`
	// PollInterval is how often tail mode looks for changes when idle.
	PollInterval time.Duration `yaml:"poll_interval" doc:"In mode tail, how often to look for appends and for new, rotated, truncated and deleted files when there is nothing to read."`
	// RotateWait is how long a rotated file is followed after its last write.
	RotateWait time.Duration `yaml:"rotate_wait" doc:"In mode tail, how long a file that left paths (rotated or deleted) is still followed after its last write, for a writer that has not reopened its log yet. Then its last line, even without a newline, is read and the file is let go."`
	// BatchSize is the most records in one poll batch.
	BatchSize int `yaml:"batch_size" doc:"Most records in one poll batch."`
	// BatchBytes is the most record bytes in one poll batch.
	BatchBytes int `yaml:"batch_bytes" doc:"Most record bytes in one poll batch."`
	// ReadBufferBytes is the size of each read from a file.
	ReadBufferBytes int `yaml:"read_buffer_bytes" doc:"Size of each read from a file."`
	// MaxLineBytes is the longest line or CSV record.
	MaxLineBytes int `yaml:"max_line_bytes" doc:"Longest line (or CSV record, which may span lines) read; a longer one follows on_invalid."`
	// OnInvalid is what happens to a line that cannot be read.
	OnInvalid string `yaml:"on_invalid" doc:"For a line longer than max_line_bytes or a CSV record that does not parse: error stops the source before it (nothing past it is committed); skip drops it with a warning, counted in the run summary and weir_source_skipped_records_total."`
	// FingerprintBytes is how many leading bytes identify a file.
	FingerprintBytes int `yaml:"fingerprint_bytes" doc:"How many leading bytes identify a file, with its device and inode, so that a reused inode is not taken for the file it replaced, and a copy (copytruncate) is recognised."`
	// CSVDelimiter is the csv field separator.
	CSVDelimiter string `yaml:"csv_delimiter" doc:"CSV field separator: one character other than a quote or a line break, e.g. \",\", \";\" or \"\\t\"."`
	// CSVHeader says whether each CSV file starts with a header record.
	CSVHeader bool `yaml:"csv_header" doc:"Whether the first record of each CSV file is a header naming the fields. With false, csv_columns names them."`
	// CSVColumns names the CSV fields.
	CSVColumns []string `yaml:"csv_columns" doc:"Names of the CSV fields, in order. Required when csv_header is false; when it is true, they replace the header's names."`
}

// Defaults.
const (
	DefaultBatchSize        = 1000
	DefaultBatchBytes       = 1 << 20
	DefaultReadBufferBytes  = 256 << 10
	DefaultMaxLineBytes     = 1 << 20
	DefaultFingerprintBytes = 1024
	DefaultPollInterval     = 250 * time.Millisecond
	DefaultRotateWait       = 5 * time.Second
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Format:           "ndjson",
		Mode:             "once",
		PollInterval:     DefaultPollInterval,
		RotateWait:       DefaultRotateWait,
		BatchSize:        DefaultBatchSize,
		BatchBytes:       DefaultBatchBytes,
		ReadBufferBytes:  DefaultReadBufferBytes,
		MaxLineBytes:     DefaultMaxLineBytes,
		OnInvalid:        "error",
		FingerprintBytes: DefaultFingerprintBytes,
		CSVDelimiter:     ",",
		CSVHeader:        true,
	}
}

// Validate reports every invalid option at once, each as a
// *connector.FieldError naming the option and the fix.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if len(c.Paths) == 0 {
		bad("paths", "is empty: list the files or globs to read, e.g. paths: [./data/*.ndjson]")
	}
	globs := func(field string, list []string) {
		for i, p := range list {
			f := fmt.Sprintf("%s[%d]", field, i)
			if p == "" {
				bad(f, "is empty: remove it")
			} else if _, err := filepath.Match(p, ""); err != nil {
				bad(f, "%q is not a valid glob (%v): fix its brackets or escape them with \\", p, err)
			}
		}
	}
	globs("paths", c.Paths)
	globs("rotated", c.Rotated)
	if !formatKnown(c.Format) {
		bad("format", "%q is unknown: use %s", c.Format, formatList())
	}
	switch c.Mode {
	case "once", "tail":
	default:
		bad("mode", "%q is unknown: use once (read to the end and finish) or tail (follow appends)", c.Mode)
	}
	if c.DataDir == "" {
		bad("data_dir", "is empty: set it to a directory where read positions are kept, e.g. data_dir: ./state")
	}
	if c.PollInterval <= 0 {
		bad("poll_interval", "%v must be positive, e.g. 250ms", c.PollInterval)
	}
	if c.RotateWait < 0 {
		bad("rotate_wait", "%v must not be negative, e.g. 5s", c.RotateWait)
	}
	for _, o := range []struct {
		name     string
		val, min int
	}{
		{"batch_size", c.BatchSize, 1},
		{"batch_bytes", c.BatchBytes, 1},
		{"read_buffer_bytes", c.ReadBufferBytes, 64},
		{"max_line_bytes", c.MaxLineBytes, 1},
		{"fingerprint_bytes", c.FingerprintBytes, 1},
	} {
		if o.val < o.min {
			bad(o.name, "%d must be at least %d", o.val, o.min)
		}
	}
	switch c.OnInvalid {
	case "error", "skip":
	default:
		bad("on_invalid", "%q is unknown: use error (stop before the line) or skip (drop it, counted and with a warning)", c.OnInvalid)
	}
	if d := c.CSVDelimiter; len(d) != 1 || d == "\"" || d == "\n" || d == "\r" {
		bad("csv_delimiter", "%q must be one character other than a quote or line break, e.g. \",\" or \";\"", d)
	}
	if c.Format == "csv" {
		if !c.CSVHeader && len(c.CSVColumns) == 0 {
			bad("csv_columns", "is empty while csv_header is false: name the fields, e.g. csv_columns: [id, name]")
		}
		seen := map[string]bool{}
		for i, n := range c.CSVColumns {
			if seen[n] {
				bad(fmt.Sprintf("csv_columns[%d]", i), "%q is named twice: give each column its own name", n)
			}
			seen[n] = true
		}
	} else if len(c.CSVColumns) > 0 {
		bad("csv_columns", "is only for format: csv; remove it")
	}
	return errors.Join(errs...)
}
