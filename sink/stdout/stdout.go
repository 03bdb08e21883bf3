// Package stdout is a sink that writes each record's value as one line to
// standard output, for debugging pipelines. Like the file sink it writes only
// what its format promises: a value that would not read back as one line
// (it holds a line break) is rejected, and with format ndjson so is a value
// that is not one JSON value.
//
// A group is kept in memory until Flush writes it in one call, so an aborted
// group never reaches the output. Nothing is fsynced: a pipeline that must not
// lose data should not acknowledge through this sink.
package stdout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Config configures a stdout sink.
type Config struct {
	Format string `yaml:"format" doc:"lines (each value as it is, one a line) or ndjson (each value must be one JSON value)"`
}

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config { return &Config{Format: "lines"} }

// Validate reports every invalid option.
func (c *Config) Validate() error {
	switch c.Format {
	case "lines", "ndjson":
		return nil
	}
	return connector.Fieldf("format", "%q is unknown: use lines or ndjson", c.Format)
}

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "stdout",
		Doc:    "writes record values as lines to standard output",
		Config: NewConfig,
		Build:  func(_ string, c *Config) (connector.Sink, error) { return NewFormat(os.Stdout, c.Format) },
	})
}

// Sink writes lines to an io.Writer, a group at a time.
type Sink struct {
	w      io.Writer
	ndjson bool
	buf    bytes.Buffer // the current group
}

// New returns a sink writing lines to w.
func New(w io.Writer) *Sink { return &Sink{w: w} }

// NewFormat returns a sink writing to w in format (lines or ndjson).
func NewFormat(w io.Writer, format string) (*Sink, error) {
	c := Config{Format: format}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("stdout: %w", err)
	}
	return &Sink{w: w, ndjson: format == "ndjson"}, nil
}

// Open does nothing.
func (s *Sink) Open(ctx context.Context) error { return nil }

// Write buffers one line per record. A value that the format cannot hold is
// rejected.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		v := recs[i].Bytes()
		if bytes.IndexByte(v, '\n') >= 0 || len(v) > 0 && v[len(v)-1] == '\r' {
			return &connector.RejectError{Index: i, Err: errors.New("stdout: the value holds a line break (or ends with a carriage return), so it would not read back as one line")}
		}
		if s.ndjson {
			if err := recs[i].CheckJSON(); err != nil {
				return &connector.RejectError{Index: i, Err: fmt.Errorf("stdout: the value is not one JSON value, which ndjson requires (%w): use format: lines", err)}
			}
		}
		s.buf.Write(v)
		s.buf.WriteByte('\n')
	}
	return nil
}

// Flush writes the group out.
func (s *Sink) Flush(ctx context.Context) error {
	_, err := s.w.Write(s.buf.Bytes())
	s.buf.Reset()
	if err != nil {
		return fmt.Errorf("stdout: %w", err)
	}
	return nil
}

// Abort drops the group.
func (s *Sink) Abort(ctx context.Context) error {
	s.buf.Reset()
	return nil
}

// Close does nothing; the runtime flushes first when it means to.
func (s *Sink) Close(ctx context.Context) error { return nil }
