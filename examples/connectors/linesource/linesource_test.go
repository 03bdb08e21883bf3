package linesource_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/examples/connectors/linesource"
)

// host records what a source tells the runtime.
type host struct {
	assigned map[string]connector.Position
	skipped  map[string]int64
}

func newHost() *host {
	return &host{assigned: map[string]connector.Position{}, skipped: map[string]int64{}}
}

func (h *host) Assign(name string, start connector.Position) connector.Partition {
	h.assigned[name] = start
	return connector.Partition(len(h.assigned) - 1)
}
func (h *host) Revoke(context.Context, ...connector.Partition) error { return nil }
func (h *host) Lost(...connector.Partition)                          {}
func (h *host) Skip(reason string, n int64)                          { h.skipped[reason] += n }
func (h *host) Unread(string, int64)                                 {}
func (h *host) Logger() *slog.Logger                                 { return slog.New(slog.DiscardHandler) }

// open returns an opened source over a directory holding the files, with
// its state file beside it.
func open(t *testing.T, files map[string]string, configure func(*linesource.Config)) (*linesource.Source, *host, *linesource.Config) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(in, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := linesource.NewConfig()
	c.Dir, c.StateFile = in, filepath.Join(dir, "state.json")
	if configure != nil {
		configure(c)
	}
	s, err := linesource.New("in", c)
	if err != nil {
		t.Fatal(err)
	}
	h := newHost()
	if err := s.Open(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, h, c
}

func TestValidateReportsEveryOptionAtOnce(t *testing.T) {
	c := &linesource.Config{Pattern: "[", BatchSize: 0, MaxLineBytes: 1}
	fields, other := connector.FieldErrors(c.Validate())
	var names []string
	for _, f := range fields {
		names = append(names, f.Field)
	}
	want := []string{"dir", "pattern", "state_file", "batch_size", "max_line_bytes"}
	if !slices.Equal(names, want) || len(other) > 0 {
		t.Fatalf("field errors for %v (other errors %v), want one for each of %v", names, other, want)
	}
	if err := linesource.NewConfig().Validate(); len(err.(interface{ Unwrap() []error }).Unwrap()) != 2 {
		t.Fatalf("the defaults leave dir and state_file to set; got %v", err)
	}
}

// Blank lines are not records: they are counted as skipped, and the batch
// still ends after them, so that they are committed past.
func TestBlankLinesAreSkippedAndCommittedPast(t *testing.T) {
	s, h, _ := open(t, map[string]string{"a": "{\"n\":1}\n\n\r\n{\"n\":2}\r\n\n"}, nil)
	var b connector.Batch
	if err := s.Poll(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	var got []string
	var offs []int64
	for i := range b.Records {
		v, _ := b.Records[i].Value()
		got = append(got, string(v))
		offs = append(offs, b.Records[i].Origin.Offset)
	}
	if !slices.Equal(got, []string{`{"n":1}`, `{"n":2}`}) || !slices.Equal(offs, []int64{0, 11}) || b.End != 21 {
		t.Fatalf("records %q at %v, batch end %d; want the two values at 0 and 11, the end at 21 (after the last blank line)", got, offs, b.End)
	}
	if h.skipped["blank"] != 3 {
		t.Fatalf("skipped %v, want 3 blank", h.skipped)
	}
	if err := s.Poll(context.Background(), &b); !errors.Is(err, connector.ErrEndOfInput) {
		t.Fatalf("second Poll: %v, want the end of input", err)
	}
}

// A last line without a newline is read: the files are complete.
func TestLastLineWithoutNewline(t *testing.T) {
	s, _, _ := open(t, map[string]string{"a": "x\ny"}, nil)
	var b connector.Batch
	if err := s.Poll(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.Records[len(b.Records)-1].Value(); len(b.Records) != 2 || string(v) != "y" || b.End != 3 {
		t.Fatalf("%d records, the last %q, end %d; want x and y, end 3", len(b.Records), v, b.End)
	}
}

func TestLineLongerThanTheLimitStopsTheSource(t *testing.T) {
	s, _, _ := open(t, map[string]string{"a": "short\n" + strings.Repeat("x", 40) + "\n"}, func(c *linesource.Config) { c.MaxLineBytes = 16 })
	var b connector.Batch
	err := s.Poll(context.Background(), &b)
	if err == nil || !strings.Contains(err.Error(), "a: the line at byte 6 is longer than max_line_bytes (16)") {
		t.Fatalf("Poll: %v, want the line at byte 6 named", err)
	}
}

// Only the files the pattern matches are partitions, hidden ones never.
func TestPatternAndHiddenFiles(t *testing.T) {
	_, h, _ := open(t, map[string]string{"a.ndjson": "1\n", "b.txt": "2\n", ".c.ndjson": "3\n"}, func(c *linesource.Config) { c.Pattern = "*.ndjson" })
	if len(h.assigned) != 1 || h.assigned["a.ndjson"] != 0 {
		t.Fatalf("assigned %v, want only a.ndjson, at 0", h.assigned)
	}
}

// A file shorter than its committed position is not read from a guess.
func TestTruncatedFileStopsOpen(t *testing.T) {
	s, h, c := open(t, map[string]string{"a": "one\ntwo\n"}, nil)
	if err := s.Commit(context.Background(), []connector.Commit{{Partition: 0, Position: 8}}); err != nil {
		t.Fatal(err)
	}
	if h.assigned["a"] != 0 {
		t.Fatalf("assigned %v", h.assigned)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "a"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := linesource.New("in", c)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	err = s2.Open(context.Background(), newHost())
	if err == nil || !strings.Contains(err.Error(), "a has 4 bytes, fewer than its committed position 8") {
		t.Fatalf("Open: %v, want the truncated file named", err)
	}
}

// A damaged state file stops Open with the way out, rather than reading
// everything again.
func TestDamagedStateFile(t *testing.T) {
	_, _, c := open(t, map[string]string{"a": "x\n"}, nil)
	if err := os.WriteFile(c.StateFile, []byte(`{"positions":`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := linesource.New("in", c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Open(context.Background(), newHost()); err == nil || !strings.Contains(err.Error(), "delete it to read every file from the start") {
		t.Fatalf("Open: %v", err)
	}
}
