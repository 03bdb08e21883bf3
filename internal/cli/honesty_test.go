package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/source/file"
)

// onceConfig reads dir's *.log once into a blackhole; extra holds more of the
// source's options, separated by "; ".
func onceConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`
sources:
  in:
    type: file
    paths: [%[1]s/*.log]
    mode: once
    data_dir: %[1]s/state
    %[2]s
sinks:
  out: { type: blackhole, inputs: [in] }
checkpoint: { commit_interval: 10ms }
metrics: { address: "off" }
`, dir, strings.ReplaceAll(extra, "; ", "\n    ")))
}

// squash collapses runs of spaces (the summary's columns) into one.
func squash(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Mode once says what it did not read, in the summary and the exit code:
// the four cases of a run that used to end with "all input read and
// committed" and code 0 while input was left behind, and a file gone before
// it was read to its end.
func TestOnceIsHonest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		extra string
		code  int
		want  []string
	}{
		{"a path matching nothing is a configuration error", nil, "format: lines", ExitConfig,
			[]string{"paths[0]", "matches no file", "allow_empty: true"}},
		{"unless allow_empty", nil, "format: lines; allow_empty: true", ExitOK,
			[]string{"source in 0 records read no partitions to commit"}},
		{"a last line without a newline is read", map[string]string{"a.log": "1\n2\nlast"}, "format: lines", ExitOK,
			[]string{"source in 3 records read committed 1 partition, positions summing to 8"}},
		{"skipped lines are counted", map[string]string{"a.log": "1\n" + strings.Repeat("x", 40) + "\n2\n"},
			"format: lines; on_invalid: skip; max_line_bytes: 10", ExitOK,
			[]string{"source in 2 records read, 1 skipped (too long)", "dropped a record longer than max_line_bytes"}},
		{"bad csv records are counted", map[string]string{"a.log": "id,name\n1,ann\n2\n3,cy,extra\n4,dan\n"},
			"format: csv; on_invalid: skip", ExitOK,
			[]string{"source in 2 records read, 2 skipped (bad record)", "the record has 1 fields, the header 2"}},
		{"every reason is named", map[string]string{"a.log": "id,name\n1,ann\n2\n" + strings.Repeat("x", 40) + "\n"},
			"format: csv; on_invalid: skip; max_line_bytes: 20", ExitOK,
			[]string{"source in 1 record read, 2 skipped (1 bad record, 1 too long)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				writeFile(t, filepath.Join(dir, name), data)
			}
			code, stdout, stderr := runCLI("run", "-c", onceConfig(t, dir, tc.extra))
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout: %s", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(squash(stderr), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// A run that ends with bytes it will never read (a file gone before it was
// read to its end) says how many, warns, and exits with code 4.
func TestUnreadInputExitsWithItsOwnCode(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	writeFile(t, a, "1\n")
	// A first run commits the first line only; the file is 6 bytes when the
	// position is committed.
	cfg := file.NewConfig()
	cfg.Paths, cfg.DataDir, cfg.Format = []string{filepath.Join(dir, "*.log")}, filepath.Join(dir, "state"), "lines"
	src, err := file.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(context.Background(), &commitHost{}); err != nil {
		t.Fatal(err)
	}
	var b connector.Batch
	if err := src.Poll(context.Background(), &b); err != nil || b.End != 2 {
		t.Fatalf("poll: end %d, %v", b.End, err)
	}
	writeFile(t, a, "1\n2\n3\n")
	if err := src.Commit(context.Background(), []connector.Commit{{Partition: b.Partition, Position: b.End}}); err != nil {
		t.Fatal(err)
	}
	src.Close(context.Background())
	// The file is gone before the next run.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("run", "-c", onceConfig(t, dir, "format: lines; allow_empty: true"))
	if code != ExitUnread {
		t.Errorf("exit %d, want %d\nstderr: %s", code, ExitUnread, stderr)
	}
	for _, w := range []string{
		"source in 0 records read, 4 bytes unread (files gone)",
		"level=WARN", "bytes of a file were never read", "unread_bytes=4", a,
		"weir: finished, but 4 bytes of input were left unread",
	} {
		if !strings.Contains(squash(stderr), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	// The gone file is forgotten: the next run has nothing to say.
	if code, _, stderr := runCLI("run", "-c", onceConfig(t, dir, "format: lines; allow_empty: true")); code != ExitOK {
		t.Errorf("the run after: exit %d, want 0\nstderr: %s", code, stderr)
	}
}

// commitHost is enough of a runtime for a source to be opened, polled and
// committed by hand.
type commitHost struct{ n checkpoint.Partition }

func (h *commitHost) Assign(string, checkpoint.Position) checkpoint.Partition {
	h.n++
	return h.n
}
func (h *commitHost) Revoke(context.Context, ...checkpoint.Partition) error { return nil }
func (h *commitHost) Lost(...checkpoint.Partition)                          {}
func (h *commitHost) Skip(string, int64)                                    {}
func (h *commitHost) Unread(string, int64)                                  {}
func (h *commitHost) Logger() *slog.Logger                                  { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
