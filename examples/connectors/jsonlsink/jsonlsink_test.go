package jsonlsink_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/examples/connectors/jsonlsink"
	"github.com/weir-etl/weir/record"
)

func open(t *testing.T, dir string) *jsonlsink.Sink {
	t.Helper()
	c := jsonlsink.NewConfig()
	c.Dir = dir
	s, err := jsonlsink.New("out", c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func writeFlush(t *testing.T, s *jsonlsink.Sink, vals ...string) {
	t.Helper()
	recs := make([]record.Record, len(vals))
	for i, v := range vals {
		recs[i] = record.New([]byte(v))
	}
	if err := s.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestValidateReportsEveryOptionAtOnce(t *testing.T) {
	fields, other := connector.FieldErrors((&jsonlsink.Config{Prefix: ".x"}).Validate())
	var got []string
	for _, f := range fields {
		got = append(got, f.Field)
	}
	if !slices.Equal(got, []string{"dir", "prefix"}) || len(other) > 0 {
		t.Fatalf("field errors for %v (others %v), want dir and prefix", got, other)
	}
	for _, p := range []string{"", "a/b", `a\b`} {
		if err := (&jsonlsink.Config{Dir: "d", Prefix: p}).Validate(); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
}

// Files are numbered in the order they became visible, across runs: a new
// sink goes on after the highest number in the directory, and the temporary
// file a crash left is deleted.
func TestNamesGoOnAcrossRunsAndCrashLeftoversGo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "out") // parents created too
	s := open(t, dir)
	writeFlush(t, s, `1`)
	writeFlush(t, s, `2`)
	if err := s.Write(context.Background(), []record.Record{record.New([]byte(`3`))}); err != nil {
		t.Fatal(err)
	}
	// s "crashes" here: its group's temporary file stays behind.
	if got := names(t, dir); len(got) != 3 || !slices.Contains(got, "part-00000002.jsonl") {
		t.Fatalf("files %v, want two visible ones and a temporary one", got)
	}
	s2 := open(t, dir)
	writeFlush(t, s2, `4`)
	if got, want := names(t, dir), []string{"part-00000001.jsonl", "part-00000002.jsonl", "part-00000003.jsonl"}; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	if d := s2.Describe(); d != dir+": 1 file, 1 record" {
		t.Fatalf("Describe: %q", d)
	}
}

// A value that is not one line of JSON is rejected, never rewritten.
func TestRejectsWhatIsNotALineOfJSON(t *testing.T) {
	s := open(t, t.TempDir())
	for _, v := range []string{"{\n\"n\": 1\n}", "plain text", "", `{"n":1}` + "\r"} {
		err := s.Write(context.Background(), []record.Record{record.New([]byte(`{"ok":1}`)), record.New([]byte(v))})
		var rej *connector.RejectError
		if !errors.As(err, &rej) || rej.Index != 1 {
			t.Errorf("Write of %q: %v, want it rejected at index 1", v, err)
		}
	}
}

// Abort leaves nothing behind: no visible file, no temporary one.
func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Write(context.Background(), []record.Record{record.New([]byte(`1`))}); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("files after Abort: %v", got)
	}
}
