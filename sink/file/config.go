package file

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/internal/pathtemplate"
)

// Config is the file sink's configuration (the options under a sink of
// `type: file`). NewConfig fills in the defaults.
type Config struct {
	// Path is the output directory.
	Path string `yaml:"path" doc:"The output directory, created if missing. One sink owns it (a lock file in it says so)."`
	// Template is the chunk's path under Path, without the unique suffix and
	// extension the sink adds (see template.go).
	Template string `yaml:"template" doc:"The chunk's path under path, without the suffix and extension the sink adds: text and the placeholders {{.Date}} (2006-01-02), {{.Year}}, {{.Month}}, {{.Day}}, {{.Hour}} (in UTC, of the time template_time names) and {{field \"name\"}} (a field's value)."`
	// TemplateTime is the time the date placeholders show.
	TemplateTime string `yaml:"template_time" enum:"processing,record,field" doc:"The time {{.Date}}, {{.Year}}, {{.Month}}, {{.Day}} and {{.Hour}} show: processing (when the record is written), record (the record's own time from its source, such as a Kafka timestamp) or field (the time in template_time_field). A record without that time is rejected, and its sink's on_failure applies."`
	// TemplateTimeField is the field holding the time, for template_time: field.
	TemplateTimeField string `yaml:"template_time_field" doc:"With template_time: field, the top-level field that holds the record's time: an RFC 3339 string (2026-02-01T19:27:17Z, with any offset) or a date (2026-02-01)."`
	// Format is ndjson (each value must be one JSON value, written as one
	// line), lines (each value as it is, one a line, JSON or not) or parquet.
	Format string `yaml:"format" enum:"ndjson,lines,parquet" doc:"ndjson (each value must be one JSON value, written as one line), lines (each value as it is, one a line) or parquet."`
	// Compression is none, gzip or zstd. For parquet it is the column codec.
	Compression string `yaml:"compression" enum:"none,gzip,zstd" doc:"none, gzip or zstd; for parquet, the column codec."`
	// MaxBytes and MaxRecords bound one chunk file (uncompressed bytes); a
	// full chunk is sealed and a new one started in the same group. MaxAge
	// bounds how long a chunk stays open. A sealed chunk is still invisible:
	// chunks become visible when the group is flushed.
	MaxBytes   int64         `yaml:"max_bytes" doc:"The most bytes (uncompressed) of one chunk file; a full chunk is closed and a new one started. Chunks become visible when their group is flushed."`
	MaxRecords int           `yaml:"max_records" doc:"The most records of one chunk file."`
	MaxAge     time.Duration `yaml:"max_age" doc:"The longest a chunk file stays open."`
	// BufferBytes is the write buffer of each open chunk.
	BufferBytes int `yaml:"buffer_bytes" doc:"The write buffer of each open chunk."`
	// Schema gives parquet column types by field name: string, binary, bool,
	// int32, int64, double, decimal(P,S), timestamp(UNIT[, UTC|local]), date,
	// json (any value, stored as its JSON text), list<T> or
	// struct<name: T, ...>. A record that does not fit is rejected, naming
	// the column. Without it the output's schema is inferred from its first
	// records, kept in .weir-schema.json under Path, and extended by fields
	// seen later; a column's type never changes (schema.go,
	// docs/file-connectors.md).
	Schema map[string]string `yaml:"schema" doc:"For parquet, column types by field name: string, binary, bool, int32, int64, double, decimal(P,S), timestamp(UNIT[, UTC|local]), date, json, list<T> or struct<name: T, ...>. A record that does not fit is rejected, naming the column. Without it the output's one schema is inferred from its first records and kept (in .weir-schema.json under path): a field seen later adds a column, and a value a column's type cannot hold is rejected."`
	// ExactlyOnce commits each group's chunks with the source positions
	// they complete in a manifest under Path (see eos.go), so that a replay
	// never writes a record twice.
	ExactlyOnce bool `yaml:"exactly_once" doc:"Each group's chunks and the source positions they complete are committed together, in a manifest under path (.weir-eos/<sink>/): after a crash, a rewind or a rebalance no record is written twice, and a reader that counts the visible chunks sees each record once. Every process writing the directory must use the same sink name; renaming the sink, changing a source's partition names, or deleting the manifest voids it (docs/file-connectors.md)."`
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
		Template:     DefaultTemplate,
		TemplateTime: "processing",
		Format:       "ndjson",
		Compression:  "none",
		MaxBytes:     DefaultMaxBytes,
		MaxRecords:   DefaultMaxRecords,
		MaxAge:       DefaultMaxAge,
		BufferBytes:  DefaultBufferBytes,
	}
}

// Validate reports every invalid option at once, each as a
// *connector.FieldError naming it and saying how to fix it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if c.Path == "" {
		bad("path", "is empty: set it to the output directory, e.g. path: ./out/events")
	}
	if _, err := pathtemplate.Parse(c.Template); err != nil {
		bad("template", "%s", strings.TrimPrefix(err.Error(), "pathtemplate: "))
	}
	switch c.TemplateTime {
	case "processing", "record":
		if c.TemplateTimeField != "" {
			bad("template_time_field", "is only for template_time: field; remove it, or set template_time: field")
		}
	case "field":
		if c.TemplateTimeField == "" {
			bad("template_time_field", "is empty while template_time is field: name the field that holds the time, e.g. template_time_field: ts")
		}
	default:
		bad("template_time", "%q is unknown: use processing (when written), record (the record's own time) or field (a field's time, with template_time_field)", c.TemplateTime)
	}
	switch c.Format {
	case "ndjson", "lines", "parquet":
	default:
		bad("format", "%q is unknown: use ndjson, lines or parquet", c.Format)
	}
	switch c.Compression {
	case "none", "gzip", "zstd":
	default:
		bad("compression", "%q is unknown: use none, gzip or zstd", c.Compression)
	}
	if c.MaxBytes < 1 {
		bad("max_bytes", "%d must be at least 1", c.MaxBytes)
	}
	if c.MaxRecords < 1 {
		bad("max_records", "%d must be at least 1", c.MaxRecords)
	}
	if c.MaxAge <= 0 {
		bad("max_age", "%v must be positive, e.g. 1m", c.MaxAge)
	}
	if c.BufferBytes < 512 {
		bad("buffer_bytes", "%d must be at least 512", c.BufferBytes)
	}
	if len(c.Schema) > 0 && c.Format != "parquet" {
		bad("schema", "is for format parquet only: remove it or set format: parquet")
	}
	for _, f := range slices.Sorted(maps.Keys(c.Schema)) {
		if err := fileformat.CheckType(c.Schema[f]); err != nil {
			if strings.Contains(err.Error(), strconv.Quote(c.Schema[f])) {
				bad("schema."+f, "%v", err) // it quotes the type itself
			} else {
				bad("schema."+f, "type %q: %v", c.Schema[f], err)
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Config) ext() string { return fileformat.Ext(c.Format, c.Compression) }
