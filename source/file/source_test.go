package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/connector"
)

// A partial last line is neither emitted nor committed until its newline
// arrives; then it is read whole.
func TestPartialLineWaitsForNewline(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "one\ntwo\npart")
	h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
	b, err := h.poll()
	if err != nil {
		t.Fatal(err)
	}
	if got := join(h.only()); got != "one,two" {
		t.Fatalf("read %q, want one,two", got)
	}
	if b.End != 8 {
		t.Fatalf("batch end %d, want 8 (after two\\n, before the partial line)", b.End)
	}
	appendTo(t, p, "ial\n")
	b, err = h.poll()
	if err != nil {
		t.Fatal(err)
	}
	if got := join(h.only()); got != "one,two,partial" {
		t.Fatalf("read %q, want one,two,partial", got)
	}
	if b.End != 16 {
		t.Fatalf("batch end %d, want 16", b.End)
	}
}

// Mode once finishes with ErrEndOfInput, every time, once every file is read;
// the file is finished, so a last line without a newline is a complete
// record and the position reaches the end of the file.
func TestOnceEndsAtEndOfInput(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "1\n2\n3\nhalf")
	h := open(t, testConfig(dir, nil))
	h.drain()
	if got := join(h.only()); got != "1,2,3,half" {
		t.Fatalf("read %q, want 1,2,3,half", got)
	}
	for range 2 {
		if _, err := h.poll(); !errors.Is(err, connector.ErrEndOfInput) {
			t.Fatalf("poll after the end: %v, want ErrEndOfInput", err)
		}
	}
	for _, e := range h.ends {
		if e != 10 {
			t.Fatalf("end %d, want 10, the size of the file", e)
		}
	}
}

// A restart resumes every file just after its committed position and never
// reads a file again from the start.
func TestRestartResumesFromCommittedPosition(t *testing.T) {
	dir := t.TempDir()
	var all []string
	var data strings.Builder
	for i := range 10 {
		all = append(all, fmt.Sprint("line", i))
		fmt.Fprintf(&data, "line%d\n", i)
	}
	write(t, filepath.Join(dir, "a.log"), data.String())
	write(t, filepath.Join(dir, "b.log"), "b0\nb1\n")
	cfg := testConfig(dir, func(c *Config) { c.BatchSize = 4 })

	h := open(t, cfg)
	var first connector.Batch
	for first.Records == nil || len(h.lines) < 2 {
		b, err := h.poll()
		if err != nil {
			t.Fatal(err)
		}
		if h.host.names[b.Partition] == h.host.names[1] && first.Records == nil {
			first = b
		}
	}
	// Commit a after its first batch only, b completely.
	var cs []connector.Commit
	for p, e := range h.ends {
		if p == first.Partition {
			e = first.End
		}
		cs = append(cs, connector.Commit{Partition: p, Position: e})
	}
	if err := h.src.Commit(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	h.close()

	appendTo(t, filepath.Join(dir, "a.log"), "line10\n")
	all = append(all, "line10")
	h2 := open(t, cfg)
	h2.drain()
	if len(h2.lines) != 1 {
		t.Fatalf("after restart read %v; b was fully committed and must not be read again", h2.lines)
	}
	if got, want := join(h2.only()), join(all[4:]); got != want {
		t.Fatalf("after restart read %q, want %q", got, want)
	}
	if h2.host.starts[1] != first.End {
		t.Fatalf("a assigned at %d, want its committed %d", h2.host.starts[1], first.End)
	}
}

// A rename keeps the file's partition: reading goes on where it was, before
// and after a restart.
func TestRenameKeepsPartition(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\n2\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
	h := open(t, cfg)
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	h.commitAll()
	q := filepath.Join(dir, "a-renamed.log")
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	appendTo(t, q, "3\n")
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	if got := join(h.only()); got != "1,2,3" {
		t.Fatalf("read %q, want 1,2,3 in one partition", got)
	}
	if len(h.host.names) != 1 {
		t.Fatalf("assigned %v, want one partition", h.host.names)
	}
	h.commitAll()
	h.close()

	appendTo(t, q, "4\n")
	h2 := open(t, testConfig(dir, nil))
	h2.drain()
	if got := join(h2.only()); got != "4" {
		t.Fatalf("after restart read %q, want 4", got)
	}
	if h2.host.names[1] != h.host.names[1] {
		t.Fatalf("partition renamed from %q to %q", h.host.names[1], h2.host.names[1])
	}
}

// A file truncated below what was read starts over as a new partition, and the
// old one is revoked; a restart never resumes the old position in it.
func TestTruncationStartsNewPartition(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "aaaa\nbbbb\ncccc\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
	h := open(t, cfg)
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	h.commitAll()
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, "new\n")
	b, err := h.poll()
	if err != nil {
		t.Fatal(err)
	}
	old, cur := h.host.names[1], h.host.names[b.Partition]
	if b.Partition == 1 || old == cur {
		t.Fatalf("truncated file read as partition %d %q, want a new one", b.Partition, cur)
	}
	if len(h.host.revoked) != 1 || h.host.revoked[0] != old {
		t.Fatalf("revoked %v, want [%s]", h.host.revoked, old)
	}
	if got := join(h.lines[cur]); got != "new" {
		t.Fatalf("new partition read %q, want new", got)
	}
	// A late commit of the old partition must not overwrite the new state.
	if err := h.src.Commit(context.Background(), []connector.Commit{{Partition: 1, Position: 15}}); err != nil {
		t.Fatal(err)
	}
	h.close()

	// Truncated again while stopped, below the committed position of nothing:
	// the new incarnation's state (position 0) holds.
	appendTo(t, p, "more\n")
	h2 := open(t, testConfig(dir, nil))
	h2.drain()
	if got := join(h2.only()); got != "new,more" {
		t.Fatalf("after restart read %q, want new,more", got)
	}
}

// A file truncated while the pipeline was stopped is read from the start.
func TestTruncatedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "aaaa\nbbbb\n")
	cfg := testConfig(dir, nil)
	h := open(t, cfg)
	h.drain()
	h.commitAll()
	h.close()
	write(t, p, "x\n")
	h2 := open(t, cfg)
	h2.drain()
	if got := join(h2.only()); got != "x" {
		t.Fatalf("read %q, want x", got)
	}
	if h2.host.starts[1] != 0 || h2.host.names[1] == h.host.names[1] {
		t.Fatalf("assigned %q at %d, want a new partition at 0", h2.host.names[1], h2.host.starts[1])
	}
}

// A file rewritten in place to something longer (same inode, larger than the
// committed position) is told apart by its fingerprint, and so is a new file
// under a reused name.
func TestReusedNameOrInodeStartsNewPartition(t *testing.T) {
	for _, replace := range []string{"rewrite", "recreate"} {
		t.Run(replace, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "a.log")
			write(t, p, "old-1\nold-2\n")
			cfg := testConfig(dir, nil)
			h := open(t, cfg)
			h.drain()
			h.commitAll()
			h.close()
			if replace == "recreate" {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
			write(t, p, "new-1\nnew-2\nnew-3\n")
			h2 := open(t, cfg)
			h2.drain()
			if got := join(h2.only()); got != "new-1,new-2,new-3" {
				t.Fatalf("read %q, want the whole new file", got)
			}
			if h2.host.starts[1] != 0 {
				t.Fatalf("new file assigned at %d, want 0", h2.host.starts[1])
			}
		})
	}
}

// CSV: the header names the fields; after a restart the header is read again
// even though reading resumes in the middle.
func TestCSVHeader(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	write(t, p, "id,name,note\r\n1,ann,\"said \"\"hi\"\", left\"\r\n\n2,bob,\r\n")
	cfg := testConfig(dir, func(c *Config) { c.Format = "csv"; c.Paths = []string{filepath.Join(dir, "*.csv")} })
	h := open(t, cfg)
	h.drain()
	want := `{"id":"1","name":"ann","note":"said \"hi\", left"},{"id":"2","name":"bob","note":""}`
	if got := join(h.only()); got != want {
		t.Fatalf("read %s\nwant %s", got, want)
	}
	h.commitAll()
	h.close()
	appendTo(t, p, "3,cy,x\n")
	h2 := open(t, cfg)
	h2.drain()
	if got := join(h2.only()); got != `{"id":"3","name":"cy","note":"x"}` {
		t.Fatalf("after restart read %s", got)
	}
}

// A CSV row that does not parse stops the source before it (on_invalid:
// error) or is dropped and counted (skip); either way nothing passes silently.
func TestCSVBadRow(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	write(t, p, "id,name\n1,ann\n2\n3,cy\n")
	for _, mode := range []string{"error", "skip"} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(dir, func(c *Config) {
				c.Format, c.OnInvalid = "csv", mode
				c.Paths = []string{p}
				c.DataDir = filepath.Join(t.TempDir(), "state")
			})
			h := open(t, cfg)
			b, err := h.poll()
			if err != nil {
				t.Fatal(err)
			}
			if mode == "error" {
				if len(b.Records) != 1 || b.End != 14 {
					t.Fatalf("batch of %d ending at %d, want 1 record ending at 14 (before the bad row)", len(b.Records), b.End)
				}
				_, err := h.poll()
				var le *LineError
				if !errors.As(err, &le) || le.Offset != 14 || !strings.Contains(err.Error(), "on_invalid") {
					t.Fatalf("poll: %v, want a LineError at 14 naming on_invalid", err)
				}
				return
			}
			h.drain()
			if len(h.only()) != 2 || h.host.skipped["bad_record"] != 1 {
				t.Fatalf("read %v, skipped %v; want 2 read, 1 skipped", h.only(), h.host.skipped)
			}
		})
	}
}

// Globs pick the matching files only, each as its own partition.
func TestGlobs(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "a\n")
	write(t, filepath.Join(dir, "b.log"), "b\n")
	write(t, filepath.Join(dir, "c.txt"), "c\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "d.log"), "d\n")
	h := open(t, testConfig(dir, func(c *Config) {
		c.Paths = []string{filepath.Join(dir, "*.log"), filepath.Join(dir, "s?b", "*.log"), filepath.Join(dir, "a.log")}
	}))
	h.drain()
	var got []string
	for _, l := range h.lines {
		got = append(got, l...)
	}
	if len(h.lines) != 3 || len(got) != 3 || strings.Contains(join(got), "c") {
		t.Fatalf("read %v, want a, b and d as three partitions", h.lines)
	}
}

// Tail mode follows appends and picks up new files.
func TestTailFollowsAppendsAndNewFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\n")
	h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, "2\n")
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.log"), "b\n")
	b, err := h.poll()
	if err != nil {
		t.Fatal(err)
	}
	if got := join(h.lines[h.host.names[b.Partition]]); got != "b" {
		t.Fatalf("new file read %q, want b", got)
	}
	if got := join(h.lines[h.host.names[1]]); got != "1,2" {
		t.Fatalf("first file read %q, want 1,2", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.src.Poll(ctx, &connector.Batch{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("poll with a cancelled context: %v", err)
	}
}

// Tail mode gives up a deleted file once it is read to its end, and forgets
// its state so that a reused inode is not mistaken for it.
func TestTailDropsDeletedFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\n")
	write(t, filepath.Join(dir, "keep.log"), "k\n")
	h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
	for len(h.lines) < 2 {
		if _, err := h.poll(); err != nil {
			t.Fatal(err)
		}
	}
	h.commitAll()
	var aName string // a.log's partition
	for name, l := range h.lines {
		if join(l) == "1" {
			aName = name
		}
	}
	lastWritten(t, p, time.Hour)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "c.log"), "c\n")
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	if len(h.host.revoked) != 1 || h.host.revoked[0] != aName {
		t.Fatalf("revoked %v, want a.log", h.host.revoked)
	}
	h.close()
	n := 0
	st, err := openStore(t, h.src)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.ForEach(func(k string, v []byte) error {
		if strings.Contains(string(v), "a.log") {
			t.Errorf("state still holds the deleted file: %s", v)
		}
		if !strings.HasPrefix(k, "#") {
			n++
		}
		return nil
	})
	if n != 2 {
		t.Fatalf("state holds %d entries, want 2 (keep.log, c.log)", n)
	}
}

// A line longer than max_line_bytes stops the source before it (error), or is
// dropped with the position moving past it only once its newline is read
// (skip).
func TestLongLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	long := strings.Repeat("x", 300)
	write(t, p, "ok\n"+long+"\nafter\n")
	t.Run("error", func(t *testing.T) {
		h := open(t, testConfig(dir, func(c *Config) {
			c.MaxLineBytes, c.ReadBufferBytes = 100, 64
			c.DataDir = filepath.Join(t.TempDir(), "s")
		}))
		b, err := h.poll()
		if err != nil || b.End != 3 {
			t.Fatalf("first batch end %d, %v; want 3", b.End, err)
		}
		for range 2 {
			if _, err := h.poll(); err == nil || !strings.Contains(err.Error(), "max_line_bytes") {
				t.Fatalf("poll: %v, want an error naming max_line_bytes", err)
			}
		}
	})
	t.Run("skip", func(t *testing.T) {
		h := open(t, testConfig(dir, func(c *Config) {
			c.MaxLineBytes, c.ReadBufferBytes, c.OnInvalid = 100, 64, "skip"
			c.Mode = "tail"
			c.DataDir = filepath.Join(t.TempDir(), "s")
		}))
		q := filepath.Join(dir, "b.log")
		write(t, q, long[:200]) // over-long and unterminated
		for len(h.lines) < 1 {
			if _, err := h.poll(); err != nil {
				t.Fatal(err)
			}
		}
		// b.log's end must not pass the unfinished long line.
		appendTo(t, q, "\nb-after\n")
		for join(h.lines[h.host.names[2]]) != "b-after" || join(h.lines[h.host.names[1]]) != "ok,after" {
			if _, err := h.poll(); err != nil {
				t.Fatal(err)
			}
			for p, e := range h.ends {
				if p == 2 && e != 0 && e < 201 {
					t.Fatalf("b.log end %d is inside the skipped line", e)
				}
			}
		}
		if h.host.skipped["too_long"] != 2 {
			t.Fatalf("skipped %v, want 2 too_long", h.host.skipped)
		}
	})
}

// Seek makes the next batch start at the given position.
func TestSeek(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "1\n2\n3\n")
	h := open(t, testConfig(dir, nil))
	h.drain()
	if err := h.src.Seek(context.Background(), 1, 2); err != nil {
		t.Fatal(err)
	}
	h.drain()
	if got := join(h.only()); got != "1,2,3,2,3" {
		t.Fatalf("read %q, want 1,2,3,2,3", got)
	}
	if err := h.src.Seek(context.Background(), 9, 0); err == nil {
		t.Fatal("seek of an unknown partition succeeded")
	}
}

// The configuration decodes strictly from YAML; Validate reports every bad
// option at once, each as a FieldError naming it; every option is documented.
func TestConfig(t *testing.T) {
	c := NewConfig()
	dec := yaml.NewDecoder(strings.NewReader("paths: [a.log]\ndata_dir: st\nmode: tail\npoll_interval: 2s\nrotated: [a.log.*]\n"))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.PollInterval.Seconds() != 2 {
		t.Fatalf("validate: %v, poll interval %v", err, c.PollInterval)
	}
	bad := NewConfig()
	bad.Paths, bad.Rotated = []string{"ok", "", "[x"}, []string{"[y"}
	bad.Format, bad.Mode, bad.OnInvalid = "xml", "forever", "ignore"
	bad.PollInterval, bad.RotateWait, bad.BatchSize, bad.FingerprintBytes = 0, -1, 0, 0
	bad.CSVDelimiter = "\""
	fields, other := connector.FieldErrors(bad.Validate())
	var got []string
	for _, f := range fields {
		got = append(got, f.Field)
	}
	want := []string{"paths[1]", "paths[2]", "rotated[0]", "format", "mode", "data_dir", "poll_interval", "rotate_wait",
		"batch_size", "fingerprint_bytes", "on_invalid", "csv_delimiter"}
	if !slices.Equal(got, want) || len(other) > 0 {
		t.Fatalf("field errors %v (and %v), want %v", got, other, want)
	}
	csvBad := NewConfig()
	csvBad.Paths, csvBad.DataDir, csvBad.Format, csvBad.CSVHeader = []string{"x"}, "d", "csv", false
	if err := csvBad.Validate(); err == nil || !strings.Contains(err.Error(), "csv_columns") {
		t.Fatalf("csv_header false without csv_columns: %v", err)
	}
	csvBad.CSVColumns = []string{"a", "a"}
	if err := csvBad.Validate(); err == nil || !strings.Contains(err.Error(), "csv_columns[1]") {
		t.Fatalf("a column named twice: %v", err)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if f.Tag.Get("yaml") == "" || len(f.Tag.Get("doc")) < 20 {
			t.Errorf("option %s lacks a yaml name or a doc tag", f.Name)
		}
	}
}

// The line reader splits exactly like a naive split on '\n' whatever the
// buffer size, and never reports an unterminated tail.
func TestLineReaderMatchesNaiveSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var data []byte
		for range rng.IntN(50) {
			data = append(data, bytes.Repeat([]byte{'a' + byte(rng.IntN(26))}, rng.IntN(90))...)
			if rng.IntN(5) > 0 {
				data = append(data, '\n')
			}
		}
		lr := lineReader{src: bytes.NewReader(data), bufSize: 1 + rng.IntN(100), maxLine: 1 << 20}
		var got [][]byte
		for {
			line, start, _, st, err := lr.next()
			if err != nil {
				t.Fatal(err)
			}
			if st == lineNone {
				break
			}
			if !bytes.Equal(data[start:start+int64(len(line))], line) {
				t.Fatalf("trial %d: line at %d is %q", trial, start, line)
			}
			got = append(got, line)
		}
		want := bytes.Split(data, []byte{'\n'})
		want = want[:len(want)-1] // the tail after the last newline is unfinished
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d lines, want %d", trial, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("trial %d line %d: %q, want %q", trial, i, got[i], want[i])
			}
		}
		if want := int64(bytes.LastIndexByte(data, '\n') + 1); lr.pos() != want {
			t.Fatalf("trial %d: pos %d, want %d", trial, lr.pos(), want)
		}
	}
}
