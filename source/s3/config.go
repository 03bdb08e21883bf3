package s3

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/s3client"
)

// Config is the S3 source's configuration (the options under a source of
// `type: s3`). NewConfig fills in the defaults.
type Config struct {
	// Conn is how the source reaches its bucket.
	s3client.Conn `yaml:",inline"`
	// Prefix is the folder of the objects to read.
	Prefix string `yaml:"prefix" doc:"The folder of the objects to read, e.g. incoming/ (a / is added when missing); empty reads the whole bucket."`
	// Glob selects objects by their key under Prefix.
	Glob string `yaml:"glob" doc:"Only objects whose key under prefix matches this glob (path.Match: * and ? stay within one /-separated level, [..] classes), e.g. 2026-*/*.ndjson.gz. Empty: every object under prefix."`
	// Format is the framing and decoding of records.
	Format string `yaml:"format" enum:"ndjson,lines,csv,parquet" doc:"ndjson (one JSON value a line), lines (each line's bytes), csv (RFC 4180; fields named by the header) or parquet (each row as a JSON object, columns in the file's order)."`
	// Compression is how objects are compressed.
	Compression string `yaml:"compression" enum:"auto,none,gzip,zstd" doc:"auto (gzip for keys ending .gz, zstd for .zst or .zstd, none otherwise), none, gzip or zstd. Parquet has its own column codecs: use none or auto."`
	// Mode is once or watch.
	Mode string `yaml:"mode" enum:"once,watch" doc:"once lists the objects, reads them all and finishes; watch lists again every scan_interval and reads the new objects, until stopped."`
	// ScanInterval is how often watch mode lists the prefix.
	ScanInterval time.Duration `yaml:"scan_interval" doc:"In mode watch, how often the prefix is listed for new objects."`
	// StartAfter skips the objects whose key sorts at or before it.
	StartAfter string `yaml:"start_after" doc:"Read only objects whose whole key sorts after this one (S3's StartAfter), e.g. incoming/2026-02-01/: a first run starts there; later runs start from the watermark."`
	// AfterRead is keep, delete or move:PREFIX.
	AfterRead string `yaml:"after_read" doc:"What becomes of an object once every record of it is committed (never before): keep (default; the watermark in key order remembers it), delete, or move:PREFIX (copied under PREFIX with its key under prefix, then deleted)."`
	// DataDir is where read positions are kept.
	DataDir string `yaml:"data_dir" doc:"Directory of the state file that keeps the committed positions (s3-source-<name>.db). Required."`
	// BatchSize and BatchBytes bound one poll batch.
	BatchSize  int `yaml:"batch_size" doc:"Most records in one poll batch."`
	BatchBytes int `yaml:"batch_bytes" doc:"Most record bytes in one poll batch."`
	// ReadBytes is the size of each ranged read of an object.
	ReadBytes int `yaml:"read_bytes" doc:"Size of each ranged GET of an object: an object is read in pieces of this size, each within request_timeout and checked against the object's ETag."`
	// Prefetch is how many objects are read ahead at once.
	Prefetch int `yaml:"prefetch" doc:"How many objects are read at once, in key order (the first is the one polled; the others are fetched ahead, which hides each request's latency on many small objects)."`
	// MaxLineBytes is the longest line or CSV record.
	MaxLineBytes int `yaml:"max_line_bytes" doc:"Longest line (or CSV record, which may span lines) read; a longer one follows on_invalid."`
	// OnInvalid is what happens to a record that cannot be read.
	OnInvalid string `yaml:"on_invalid" enum:"error,skip" doc:"For a line longer than max_line_bytes or a CSV record that does not parse: error stops the source before it (nothing past it is committed); skip drops it with a warning, counted in the run summary and weir_source_skipped_records_total."`
	// CSVDelimiter, CSVHeader and CSVColumns are as for the file source.
	CSVDelimiter string   `yaml:"csv_delimiter" doc:"CSV field separator: one character other than a quote or a line break."`
	CSVHeader    bool     `yaml:"csv_header" doc:"Whether the first record of each CSV object is a header naming the fields. With false, csv_columns names them."`
	CSVColumns   []string `yaml:"csv_columns" doc:"Names of the CSV fields, in order. Required when csv_header is false; when it is true, they replace the header's names."`
}

// Defaults.
const (
	DefaultScanInterval = 10 * time.Second
	DefaultBatchSize    = 1000
	DefaultBatchBytes   = 1 << 20
	DefaultReadBytes    = 8 << 20
	DefaultPrefetch     = 4
	DefaultMaxLineBytes = 1 << 20
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Conn:         s3client.DefaultConn(),
		Format:       "ndjson",
		Compression:  "auto",
		Mode:         "once",
		ScanInterval: DefaultScanInterval,
		AfterRead:    "keep",
		BatchSize:    DefaultBatchSize,
		BatchBytes:   DefaultBatchBytes,
		ReadBytes:    DefaultReadBytes,
		Prefetch:     DefaultPrefetch,
		MaxLineBytes: DefaultMaxLineBytes,
		OnInvalid:    "error",
		CSVDelimiter: ",",
		CSVHeader:    true,
	}
}

// Validate reports every invalid option at once, each as a
// *connector.FieldError naming the option and the fix.
func (c *Config) Validate() error {
	errs := []error{c.Conn.Validate()}
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if strings.HasPrefix(c.Prefix, "/") {
		bad("prefix", "%q starts with /: keys are relative to the bucket, e.g. prefix: incoming/", c.Prefix)
	}
	if c.Glob != "" {
		if _, err := path.Match(c.Glob, ""); err != nil {
			bad("glob", "%q is not a valid glob (%v): fix its brackets or escape them with \\", c.Glob, err)
		}
	}
	switch c.Format {
	case "ndjson", "lines", "csv", "parquet":
	default:
		bad("format", "%q is unknown: use ndjson, lines, csv or parquet", c.Format)
	}
	switch c.Compression {
	case "auto", "none", "gzip", "zstd":
		if c.Format == "parquet" && (c.Compression == "gzip" || c.Compression == "zstd") {
			bad("compression", "%s is for line formats: parquet compresses its columns itself; use auto or none", c.Compression)
		}
	default:
		bad("compression", "%q is unknown: use auto, none, gzip or zstd", c.Compression)
	}
	switch c.Mode {
	case "once", "watch":
	default:
		bad("mode", "%q is unknown: use once (read what is there and finish) or watch (keep listing for new objects)", c.Mode)
	}
	if c.ScanInterval < 100*time.Millisecond {
		bad("scan_interval", "%v is too short: use at least 100ms, e.g. 10s", c.ScanInterval)
	}
	if _, _, err := c.afterRead(); err != nil {
		bad("after_read", "%v", err)
	}
	if c.DataDir == "" {
		bad("data_dir", "is empty: set it to a directory where read positions are kept, e.g. data_dir: ./state")
	}
	for _, o := range []struct {
		name     string
		val, min int
	}{
		{"batch_size", c.BatchSize, 1},
		{"batch_bytes", c.BatchBytes, 1},
		{"read_bytes", c.ReadBytes, 4096},
		{"prefetch", c.Prefetch, 1},
		{"max_line_bytes", c.MaxLineBytes, 1},
	} {
		if o.val < o.min {
			bad(o.name, "%d must be at least %d", o.val, o.min)
		}
	}
	switch c.OnInvalid {
	case "error", "skip":
	default:
		bad("on_invalid", "%q is unknown: use error (stop before the record) or skip (drop it, counted and with a warning)", c.OnInvalid)
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

// afterRead parses AfterRead: the action and, for move, the prefix.
func (c *Config) afterRead() (string, string, error) {
	switch {
	case c.AfterRead == "keep" || c.AfterRead == "delete":
		return c.AfterRead, "", nil
	case strings.HasPrefix(c.AfterRead, "move:"):
		to := strings.TrimPrefix(c.AfterRead, "move:")
		if to == "" || strings.HasPrefix(to, "/") {
			return "", "", fmt.Errorf("%q needs a prefix of the same bucket after move:, e.g. move:done/", c.AfterRead)
		}
		if !strings.HasSuffix(to, "/") {
			to += "/"
		}
		if strings.HasPrefix(to, c.prefix()) && c.Glob == "" {
			return "", "", fmt.Errorf("%q is inside prefix %q: moved objects would be read again; move them elsewhere", c.AfterRead, c.Prefix)
		}
		return "move", to, nil
	}
	return "", "", fmt.Errorf("%q is unknown: use keep, delete or move:PREFIX", c.AfterRead)
}

// prefix is the key prefix of the objects: Prefix with a trailing /.
func (c *Config) prefix() string {
	if c.Prefix == "" || strings.HasSuffix(c.Prefix, "/") {
		return c.Prefix
	}
	return c.Prefix + "/"
}
