package jsonlsink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Sink writes JSON lines, a file per group. Build it with New.
//
// The runtime calls a sink's methods one at a time: Open first, then Write,
// Flush and Abort from its sink goroutine, Describe and Close last. So the
// Sink needs no lock.
type Sink struct {
	name string
	cfg  Config
	seq  uint64 // the number of the last visible file

	// The current group: its temporary file, nil until the group's first
	// record, and the buffer in front of it.
	tmp *os.File
	w   *bufio.Writer
	n   int64 // records in the group

	files, records int64 // made visible by this run, for Describe
}

// New returns a sink called name (the component's name in the pipeline).
// Like a source's, it only checks cfg; Open does the I/O.
func New(name string, cfg *Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sink{name: name, cfg: *cfg, w: bufio.NewWriterSize(nil, 256<<10)}, nil
}

// Open creates the directory if needed, deletes the temporary files a crash
// left (groups that never became durable, so never acknowledged: the source
// reads them again), and finds the number of the last visible file.
func (s *Sink) Open(ctx context.Context) error {
	if err := mkdirDurable(s.cfg.Dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("jsonlsink: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "."+s.cfg.Prefix+"-") && strings.HasSuffix(name, ".tmp") {
			if err := os.Remove(filepath.Join(s.cfg.Dir, name)); err != nil {
				return fmt.Errorf("jsonlsink: removing a temporary file left by a crash: %w", err)
			}
			continue
		}
		if n, ok := s.number(name); ok && n > s.seq {
			s.seq = n
		}
	}
	return nil
}

// fileName is the name of visible file n.
func (s *Sink) fileName(n uint64) string { return fmt.Sprintf("%s-%08d.jsonl", s.cfg.Prefix, n) }

// number returns the number of a visible file's name.
func (s *Sink) number(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, s.cfg.Prefix+"-")
	if !ok {
		return 0, false
	}
	if digits, ok = strings.CutSuffix(digits, ".jsonl"); !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}

// Write adds the records to the group's temporary file (through a buffer:
// nothing is durable before Flush). A record whose value is not one line of
// JSON is rejected: Write returns a *connector.RejectError with its index,
// having written the records before it and none after it; the runtime hands
// it to the failure policy and calls Write again with the rest. Any other
// error leaves the group broken: the runtime calls Abort and writes the
// whole group again.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		v, err := recs[i].Value()
		if err == nil {
			err = oneLineOfJSON(v)
		}
		if err != nil {
			return &connector.RejectError{Index: i, Err: fmt.Errorf("jsonlsink: %w", err)}
		}
		if s.tmp == nil {
			if err := s.begin(); err != nil {
				return err
			}
		}
		s.w.Write(v)
		if err := s.w.WriteByte('\n'); err != nil { // a bufio.Writer keeps its first error
			return fmt.Errorf("jsonlsink: writing %s: %w", s.tmp.Name(), err)
		}
		s.n++
	}
	return nil
}

// oneLineOfJSON says why v cannot be a line of a .jsonl file, or returns nil.
func oneLineOfJSON(v []byte) error {
	if bytes.ContainsAny(v, "\n\r") {
		return errors.New("the value spans several lines (pretty-printed JSON?), and a JSON line holds one value on one line")
	}
	if !json.Valid(v) {
		return errors.New("the value is not JSON, and a JSON line holds one JSON value")
	}
	return nil
}

// begin starts the group's temporary file. Its name starts with a dot, so
// that readers listing the directory pass over it.
func (s *Sink) begin() error {
	f, err := os.CreateTemp(s.cfg.Dir, "."+s.cfg.Prefix+"-*.tmp")
	if err != nil {
		return fmt.Errorf("jsonlsink: %w", err)
	}
	s.tmp = f
	s.w.Reset(f)
	return nil
}

// Flush makes the group durable and visible, in this order: the buffer is
// written out, the file fsynced and closed, renamed to its final name, and
// the directory fsynced (the rename is a change of the directory). Only then
// does it return nil; the runtime then acknowledges the group's records.
// A rename is atomic: a reader sees the whole file or none of it.
//
// On an error before the rename nothing is visible, and Abort deletes the
// temporary file. On an error after it the file is visible but may not be
// durable; the runtime writes the group again, so its records may appear
// twice: at-least-once, never less.
func (s *Sink) Flush(ctx context.Context) error {
	if s.tmp == nil {
		return nil // no record since the last Flush
	}
	err := s.w.Flush()
	if err == nil {
		err = s.tmp.Sync()
	}
	if cerr := s.tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonlsink: completing %s: %w", s.tmp.Name(), err)
	}
	if err := os.Rename(s.tmp.Name(), filepath.Join(s.cfg.Dir, s.fileName(s.seq+1))); err != nil {
		return fmt.Errorf("jsonlsink: %w", err)
	}
	s.seq++
	s.tmp = nil
	if err := syncDir(s.cfg.Dir); err != nil {
		return err
	}
	s.files++
	s.records += s.n
	s.n = 0
	return nil
}

// Abort discards the group: its temporary file is deleted. The runtime calls
// it after a failed Write or Flush, before writing the group again.
func (s *Sink) Abort(ctx context.Context) error {
	s.n = 0
	if s.tmp == nil {
		return nil
	}
	name := s.tmp.Name()
	s.tmp.Close() // already closed if a Flush failed after closing it
	s.tmp = nil
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("jsonlsink: %w", err)
	}
	return nil
}

// Close discards the group still open, if any: the runtime flushes before
// Close what it wants kept, and an unflushed group was never acknowledged.
func (s *Sink) Close(ctx context.Context) error { return s.Abort(ctx) }

// Describe implements connector.Describer: the line `weir run` prints about
// this sink when the run ends.
func (s *Sink) Describe() string {
	return fmt.Sprintf("%s: %s, %s", s.cfg.Dir, count(s.files, "file"), count(s.records, "record"))
}

// count writes n and the noun, in the plural unless n is 1.
func count[N ~int | ~int64](n N, noun string) string {
	if n != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// mkdirDurable creates dir and its missing parents, fsyncing the parent of
// each directory it creates: a file renamed into a directory whose own entry
// is not durable can vanish with it in a crash.
func mkdirDurable(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("jsonlsink: %s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("jsonlsink: %w", err)
	}
	return syncDir(parent)
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("jsonlsink: syncing %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("jsonlsink: syncing %s: %w", dir, err)
	}
	return nil
}

var (
	_ connector.Sink      = (*Sink)(nil)
	_ connector.Describer = (*Sink)(nil)
)
