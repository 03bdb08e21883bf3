// Package stdout is a sink that writes each record's value as one line
// (NDJSON for JSON values) to standard output, for debugging pipelines.
//
// A group is kept in memory until Flush writes it in one call, so an aborted
// group never reaches the output. Nothing is fsynced: a pipeline that must not
// lose data should not acknowledge through this sink.
package stdout

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Config configures a stdout sink; it has no options.
type Config struct{}

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:  "stdout",
		Doc:   "writes record values as lines to standard output",
		Build: func(string, *Config) (connector.Sink, error) { return New(os.Stdout), nil },
	})
}

// Sink writes lines to an io.Writer, a group at a time.
type Sink struct {
	w   io.Writer
	buf bytes.Buffer // the current group
}

// New returns a sink writing to w.
func New(w io.Writer) *Sink { return &Sink{w: w} }

// Open does nothing.
func (s *Sink) Open(ctx context.Context) error { return nil }

// Write buffers one line per record. A record whose value cannot be encoded
// is rejected.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		v, err := recs[i].Value()
		if err != nil {
			return &connector.RejectError{Index: i, Err: err}
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
