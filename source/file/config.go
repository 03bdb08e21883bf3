package file

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Config is the file source's configuration (the options under a source of
// `type: file`). NewConfig fills in the defaults.
type Config struct {
	// Paths are file paths or globs (filepath.Match syntax: *, ?, [..]; no **).
	Paths []string `yaml:"paths"`
	// Format is ndjson (one JSON value a line), lines (each line as raw bytes),
	// csv (a header line, then one record a line with fields named by it) or
	// dead_letter (a file a dead letter sink wrote: each record as it failed).
	Format string `yaml:"format"`
	// Mode is once (read every matched file to its end, then finish) or tail
	// (follow appends and new files until stopped).
	Mode string `yaml:"mode"`
	// DataDir is where read positions are kept. Required.
	DataDir string `yaml:"data_dir"`
	// PollInterval is how often tail mode looks for appends, new, renamed,
	// truncated and deleted files when it has nothing to read.
	PollInterval time.Duration `yaml:"poll_interval"`
	// BatchSize is the most records in one poll batch.
	BatchSize int `yaml:"batch_size"`
	// BatchBytes is the most line bytes in one poll batch.
	BatchBytes int `yaml:"batch_bytes"`
	// ReadBufferBytes is the size of each read from a file.
	ReadBufferBytes int `yaml:"read_buffer_bytes"`
	// MaxLineBytes is the longest line read; longer lines follow OnInvalid.
	MaxLineBytes int `yaml:"max_line_bytes"`
	// OnInvalid is what happens to a line longer than MaxLineBytes or a CSV
	// row that cannot be parsed: error stops the source before the line (its
	// position is never committed past it); skip drops it deliberately, with a
	// warning naming the file, offset and length.
	OnInvalid string `yaml:"on_invalid"`
	// FingerprintBytes is how many leading bytes of a file identify it, with
	// its device and inode, so that a reused inode is not mistaken for the file
	// it replaced.
	FingerprintBytes int `yaml:"fingerprint_bytes"`
	// CSVDelimiter is the csv field separator, one character.
	CSVDelimiter string `yaml:"csv_delimiter"`
}

// Defaults.
const (
	DefaultBatchSize        = 1000
	DefaultBatchBytes       = 1 << 20
	DefaultReadBufferBytes  = 256 << 10
	DefaultMaxLineBytes     = 1 << 20
	DefaultFingerprintBytes = 1024
	DefaultPollInterval     = 250 * time.Millisecond
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Format:           "ndjson",
		Mode:             "once",
		PollInterval:     DefaultPollInterval,
		BatchSize:        DefaultBatchSize,
		BatchBytes:       DefaultBatchBytes,
		ReadBufferBytes:  DefaultReadBufferBytes,
		MaxLineBytes:     DefaultMaxLineBytes,
		OnInvalid:        "error",
		FingerprintBytes: DefaultFingerprintBytes,
		CSVDelimiter:     ",",
	}
}

// Validate reports the first invalid option, naming it and saying how to fix it.
func (c *Config) Validate() error {
	if len(c.Paths) == 0 {
		return errors.New("source/file: paths is empty: list the files or globs to read, e.g. paths: [./data/*.ndjson]")
	}
	for _, p := range c.Paths {
		if p == "" {
			return errors.New("source/file: paths has an empty entry: remove it")
		}
		if _, err := filepath.Match(p, ""); err != nil {
			return fmt.Errorf("source/file: paths entry %q is not a valid glob (%v): fix its brackets or escape them with \\", p, err)
		}
	}
	switch c.Format {
	case "ndjson", "lines", "csv", "dead_letter":
	default:
		return fmt.Errorf("source/file: format %q is unknown: use ndjson, lines, csv or dead_letter", c.Format)
	}
	switch c.Mode {
	case "once", "tail":
	default:
		return fmt.Errorf("source/file: mode %q is unknown: use once (read to the end and finish) or tail (follow appends)", c.Mode)
	}
	if c.DataDir == "" {
		return errors.New("source/file: data_dir is empty: set it to a directory where read positions are kept, e.g. data_dir: ./state")
	}
	if c.PollInterval <= 0 {
		return fmt.Errorf("source/file: poll_interval %v must be positive, e.g. 250ms", c.PollInterval)
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("source/file: batch_size %d must be at least 1", c.BatchSize)
	}
	if c.BatchBytes < 1 {
		return fmt.Errorf("source/file: batch_bytes %d must be at least 1", c.BatchBytes)
	}
	if c.ReadBufferBytes < 64 {
		return fmt.Errorf("source/file: read_buffer_bytes %d must be at least 64", c.ReadBufferBytes)
	}
	if c.MaxLineBytes < 1 {
		return fmt.Errorf("source/file: max_line_bytes %d must be at least 1", c.MaxLineBytes)
	}
	switch c.OnInvalid {
	case "error", "skip":
	default:
		return fmt.Errorf("source/file: on_invalid %q is unknown: use error (stop before the line) or skip (drop it with a warning)", c.OnInvalid)
	}
	if c.FingerprintBytes < 1 {
		return fmt.Errorf("source/file: fingerprint_bytes %d must be at least 1", c.FingerprintBytes)
	}
	if len(c.CSVDelimiter) != 1 || c.CSVDelimiter == "\"" || c.CSVDelimiter == "\n" || c.CSVDelimiter == "\r" {
		return fmt.Errorf("source/file: csv_delimiter %q must be one character other than a quote or line break, e.g. \",\" or \";\"", c.CSVDelimiter)
	}
	return nil
}
