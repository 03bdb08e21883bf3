package s3

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/fileformat"
	"github.com/weir-etl/weir/internal/pathtemplate"
	"github.com/weir-etl/weir/internal/s3client"
)

// Config is the S3 sink's configuration (the options under a sink of
// `type: s3`). NewConfig fills in the defaults.
type Config struct {
	// Conn is how the sink reaches its bucket: bucket, endpoint, region,
	// addressing, credentials and timeouts.
	s3client.Conn `yaml:",inline"`
	// Prefix is the folder of the sink's objects in the bucket.
	Prefix string `yaml:"prefix" doc:"The folder of the sink's objects in the bucket, e.g. events/ (a / is added when missing). One sink owns it: its positions live under PREFIX_weir/."`
	// Template is the object's key under Prefix, without the suffix and
	// extension the sink adds.
	Template string `yaml:"template" doc:"The object's key under prefix, without the suffix (partition, sequence) and extension the sink adds: text and the placeholders {{.Date}} (2006-01-02), {{.Year}}, {{.Month}}, {{.Day}}, {{.Hour}} (in UTC, of the time template_time names) and {{field \"name\"}} (a field's value)."`
	// TemplateTime is the time the date placeholders show.
	TemplateTime string `yaml:"template_time" enum:"record,field" doc:"The time {{.Date}} and the other date placeholders show: record (the record's own time from its source, such as a Kafka timestamp) or field (the time in template_time_field). Processing time is not offered: a key must be a function of the records it holds, so that a replay writes the same key. A record without that time is rejected, and its sink's on_failure applies."`
	// TemplateTimeField is the field holding the time, for template_time: field.
	TemplateTimeField string `yaml:"template_time_field" doc:"With template_time: field, the top-level field that holds the record's time: an RFC 3339 string (2026-02-01T19:27:17Z, with any offset) or a date (2026-02-01)."`
	// Format is ndjson, lines or parquet.
	Format string `yaml:"format" enum:"ndjson,lines,parquet" doc:"ndjson (each value must be one JSON value, written as one line), lines (each value as it is, one a line) or parquet."`
	// Compression is none, gzip or zstd; for parquet the column codec.
	Compression string `yaml:"compression" enum:"none,gzip,zstd" doc:"none, gzip or zstd; for parquet, the column codec."`
	// MaxBytes and MaxRecords bound one object; a full object is closed and
	// another started in the same group.
	MaxBytes   int64 `yaml:"max_bytes" doc:"The most bytes (uncompressed) of one object; a full object is closed and a new one started. Objects become visible when their group is committed."`
	MaxRecords int   `yaml:"max_records" doc:"The most records of one object."`
	// PartBytes is the size of the parts of a multipart upload.
	PartBytes int64 `yaml:"part_bytes" doc:"The size of each part of an object's multipart upload (at least 5 MiB, S3's smallest part): an object's bytes are uploaded in parts of this size as they are written, so memory holds about one part per open object."`
	// UploadConcurrency is how many requests go side by side.
	UploadConcurrency int `yaml:"upload_concurrency" doc:"How many parts are uploaded at once, and how many partitions' commits go side by side when a group is persisted."`
	// Schema gives parquet column types by field name (see the file sink).
	Schema map[string]string `yaml:"schema" doc:"For parquet, column types by field name: string, binary, bool, int32, int64, double, decimal(P,S), timestamp(UNIT[, UTC|local]), date, json, list<T> or struct<name: T, ...>. A record that does not fit is rejected, naming the column. Without it each object infers its schema from its records."`
	// SSE is the server-side encryption asked for each object.
	SSE string `yaml:"sse" enum:"none,AES256,aws:kms" doc:"Server-side encryption of every object the sink writes (its positions too): none (the bucket's default), AES256 (S3-managed keys) or aws:kms (with sse_kms_key_id, or the account's default KMS key)."`
	// SSEKMSKeyID is the KMS key for sse: aws:kms.
	SSEKMSKeyID string `yaml:"sse_kms_key_id" doc:"With sse: aws:kms, the KMS key's id or ARN; empty uses the account's default key."`
	// ConditionalWrites fences writers of the same positions.
	ConditionalWrites bool `yaml:"conditional_writes" doc:"Write each partition's positions with If-Match / If-None-Match, so that a second writer of the same partition (a process that lost it without knowing) fails instead of overwriting them. Turn off only for a server that does not support conditional writes; the sink is then exactly-once only with one writer per partition."`
}

// Defaults.
const (
	DefaultTemplate          = "part"
	DefaultMaxBytes          = 128 << 20
	DefaultMaxRecords        = 1_000_000
	DefaultPartBytes         = 8 << 20
	DefaultUploadConcurrency = 4
	minPartBytes             = 5 << 20 // S3's smallest part but the last
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Conn:              s3client.DefaultConn(),
		Template:          DefaultTemplate,
		TemplateTime:      "record",
		Format:            "ndjson",
		Compression:       "none",
		MaxBytes:          DefaultMaxBytes,
		MaxRecords:        DefaultMaxRecords,
		PartBytes:         DefaultPartBytes,
		UploadConcurrency: DefaultUploadConcurrency,
		SSE:               "none",
		ConditionalWrites: true,
	}
}

// Validate reports every invalid option at once, each as a
// *connector.FieldError naming it and saying how to fix it.
func (c *Config) Validate() error {
	errs := []error{c.Conn.Validate()}
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if strings.HasPrefix(c.Prefix, "/") {
		bad("prefix", "%q starts with /: keys are relative to the bucket, e.g. prefix: events/", c.Prefix)
	}
	if strings.Contains("/"+c.Prefix, "/_weir/") {
		bad("prefix", "%q has a _weir folder, where the sink keeps its positions: choose another", c.Prefix)
	}
	if _, err := pathtemplate.Parse(c.Template); err != nil {
		bad("template", "%s", strings.TrimPrefix(err.Error(), "pathtemplate: "))
	} else if strings.HasPrefix(c.Template, "_weir/") || c.Template == "_weir" {
		bad("template", "%q is under _weir/, where the sink keeps its positions: choose another", c.Template)
	}
	switch c.TemplateTime {
	case "record":
		if c.TemplateTimeField != "" {
			bad("template_time_field", "is only for template_time: field; remove it, or set template_time: field")
		}
	case "field":
		if c.TemplateTimeField == "" {
			bad("template_time_field", "is empty while template_time is field: name the field that holds the time, e.g. template_time_field: ts")
		}
	case "processing":
		bad("template_time", "processing is not offered by the S3 sink: a key that depends on when it was written would put replayed records under another key, next to the first copy; use record (the record's own time) or field (a field's time, with template_time_field)")
	default:
		bad("template_time", "%q is unknown: use record (the record's own time) or field (a field's time, with template_time_field)", c.TemplateTime)
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
	if c.PartBytes < minPartBytes {
		bad("part_bytes", "%d is below 5 MiB, the smallest part S3 takes: use at least 5MiB", c.PartBytes)
	}
	if c.UploadConcurrency < 1 || c.UploadConcurrency > 64 {
		bad("upload_concurrency", "%d must be between 1 and 64", c.UploadConcurrency)
	}
	if len(c.Schema) > 0 && c.Format != "parquet" {
		bad("schema", "is for format parquet only: remove it or set format: parquet")
	}
	for _, f := range slices.Sorted(maps.Keys(c.Schema)) {
		if err := fileformat.CheckType(c.Schema[f]); err != nil {
			bad("schema."+f, "type %q: %v", c.Schema[f], err)
		}
	}
	switch c.SSE {
	case "none", "AES256":
		if c.SSEKMSKeyID != "" {
			bad("sse_kms_key_id", "is only for sse: aws:kms; remove it, or set sse: aws:kms")
		}
	case "aws:kms":
	default:
		bad("sse", "%q is unknown: use none, AES256 or aws:kms", c.SSE)
	}
	return errors.Join(errs...)
}

// prefix is the key prefix of the sink's objects: Prefix with a trailing /.
func (c *Config) prefix() string {
	if c.Prefix == "" || strings.HasSuffix(c.Prefix, "/") {
		return c.Prefix
	}
	return c.Prefix + "/"
}
