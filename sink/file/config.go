package file

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Config is the file sink's configuration (the options under a sink of
// `type: file`). NewConfig fills in the defaults.
type Config struct {
	// Path is the output directory.
	Path string `yaml:"path"`
	// Template is the chunk's path under Path, without the unique suffix and
	// extension the sink adds: literal text and the placeholders {{.Date}}
	// (2006-01-02), {{.Year}}, {{.Month}}, {{.Day}}, {{.Hour}} (UTC, when the
	// record is written) and {{field "name"}} (a field's value).
	Template string `yaml:"template"`
	// Format is ndjson (each value must be one JSON value, written as one
	// line), lines (each value as it is, one a line, JSON or not) or parquet.
	Format string `yaml:"format"`
	// Compression is none, gzip or zstd. For parquet it is the column codec.
	Compression string `yaml:"compression"`
	// MaxBytes and MaxRecords bound one chunk file (uncompressed bytes); a
	// full chunk is sealed and a new one started in the same group. MaxAge
	// bounds how long a chunk stays open. A sealed chunk is still invisible:
	// chunks become visible when the group is flushed.
	MaxBytes   int64         `yaml:"max_bytes"`
	MaxRecords int           `yaml:"max_records"`
	MaxAge     time.Duration `yaml:"max_age"`
	// BufferBytes is the write buffer of each open chunk.
	BufferBytes int `yaml:"buffer_bytes"`
	// Schema gives parquet column types by field name: string, binary, bool,
	// int32, int64, double, decimal(P,S), timestamp(UNIT[, UTC|local]), date,
	// json (any value, stored as its JSON text), list<T> or
	// struct<name: T, ...>. A record that does not fit is rejected, naming
	// the column. Without it each chunk infers its schema from its records
	// (see docs/file-connectors.md).
	Schema map[string]string `yaml:"schema"`
}

// Defaults.
const (
	DefaultTemplate    = "{{.Date}}/part"
	DefaultMaxBytes    = 128 << 20
	DefaultMaxRecords  = 1_000_000
	DefaultMaxAge      = time.Minute
	DefaultBufferBytes = 256 << 10
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Template:    DefaultTemplate,
		Format:      "ndjson",
		Compression: "none",
		MaxBytes:    DefaultMaxBytes,
		MaxRecords:  DefaultMaxRecords,
		MaxAge:      DefaultMaxAge,
		BufferBytes: DefaultBufferBytes,
	}
}

// Validate reports the first invalid option, naming it and saying how to fix it.
func (c *Config) Validate() error {
	if c.Path == "" {
		return errors.New("sink/file: path is empty: set it to the output directory, e.g. path: ./out/events")
	}
	if _, err := parseTemplate(c.Template); err != nil {
		return err
	}
	switch c.Format {
	case "ndjson", "lines", "parquet":
	default:
		return fmt.Errorf("sink/file: format %q is unknown: use ndjson, lines or parquet", c.Format)
	}
	switch c.Compression {
	case "none", "gzip", "zstd":
	default:
		return fmt.Errorf("sink/file: compression %q is unknown: use none, gzip or zstd", c.Compression)
	}
	if c.MaxBytes < 1 {
		return fmt.Errorf("sink/file: max_bytes %d must be at least 1", c.MaxBytes)
	}
	if c.MaxRecords < 1 {
		return fmt.Errorf("sink/file: max_records %d must be at least 1", c.MaxRecords)
	}
	if c.MaxAge <= 0 {
		return fmt.Errorf("sink/file: max_age %v must be positive, e.g. 1m", c.MaxAge)
	}
	if c.BufferBytes < 512 {
		return fmt.Errorf("sink/file: buffer_bytes %d must be at least 512", c.BufferBytes)
	}
	if len(c.Schema) > 0 && c.Format != "parquet" {
		return errors.New("sink/file: schema is for format parquet only: remove it or set format: parquet")
	}
	for f, t := range c.Schema {
		if _, err := parseType(t); err != nil {
			return fmt.Errorf("sink/file: schema field %q has type %q: %v", f, t, err)
		}
	}
	return nil
}

func (c *Config) ext() string {
	if c.Format == "parquet" {
		return ".parquet"
	}
	ext := ".ndjson"
	if c.Format == "lines" {
		ext = ".txt"
	}
	switch c.Compression {
	case "gzip":
		return ext + ".gz"
	case "zstd":
		return ext + ".zst"
	}
	return ext
}

// validateTemplatePath rejects templates that could escape the output directory.
func validateTemplatePath(t string) error {
	if filepath.IsAbs(t) || strings.HasPrefix(t, "/") {
		return fmt.Errorf("sink/file: template %q is absolute: make it relative to path", t)
	}
	for _, part := range strings.Split(t, "/") {
		if part == ".." {
			return fmt.Errorf("sink/file: template %q has a .. element: keep chunks inside path", t)
		}
	}
	if strings.HasSuffix(t, "/") || t == "" {
		return fmt.Errorf("sink/file: template %q must end with a file name prefix, e.g. {{.Date}}/part", t)
	}
	return nil
}
