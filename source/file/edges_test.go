package file

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/weir-etl/weir/internal/statestore"
)

// What a glob matches that is not a regular file (a directory, a named pipe,
// a dangling symbolic link) is not read, and is reported once each with a
// warning naming it, however many scans see it; it was once skipped in
// silence (issue 25).
func TestOddMatchesAreReported(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "1\n2\n")
	must(t, os.Mkdir(filepath.Join(dir, "sub.log"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe.log"), 0o644))
	must(t, os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.log")))
	h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
	h.pollUntil("a.log's lines", func() bool { return h.count() == 2 })
	for range 10 { // more scans
		h.pollFor(2 * h.src.cfg.PollInterval)
	}
	log := h.host.log.String()
	for path, kind := range map[string]string{"sub.log": "a directory", "pipe.log": "a named pipe (FIFO)", "dangling.log": "a symbolic link to nothing"} {
		p := filepath.Join(dir, path)
		n := 0
		for l := range strings.Lines(log) {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "path="+p+" ") && strings.Contains(l, kind) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s (%s) reported %d times, want once:\n%s", path, kind, n, log)
		}
	}
}

// In mode once, a path that exists but is not a regular file says what it
// is, not that it "matches no file"; a pattern that matches only such paths
// says so too.
func TestPathThatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "logs"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	for _, c := range []struct {
		path string
		want []string
	}{
		{filepath.Join(dir, "logs"), []string{"paths[0]", "logs is a directory, not a regular file", filepath.Join(dir, "logs", "*.ndjson")}},
		{filepath.Join(dir, "fifo"), []string{"paths[0]", "fifo is a named pipe (FIFO), not a regular file"}},
		{filepath.Join(dir, "l*"), []string{"paths[0]", "matches no regular file", "logs is a directory"}},
		{filepath.Join(dir, "missing.log"), []string{"paths[0]", "matches no file"}},
	} {
		src, err := New("in", testConfig(dir, func(cfg *Config) { cfg.Mode, cfg.Paths = "once", []string{c.path} }))
		must(t, err)
		err = src.Open(context.Background(), newHost())
		src.Close(context.Background())
		if err == nil {
			t.Fatalf("%s: Open succeeded", c.path)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.path, err, w)
			}
		}
	}
}

// An empty state file is not a first start (issue 25: mode once read all
// 1,000 lines again): Open fails naming the file and --reset-state, reads
// nothing, and leaves the file as it is. After a reset on purpose the source
// starts afresh.
func TestEmptyStateIsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "1\n2\n3\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "once" })
	h := open(t, cfg)
	h.drain()
	h.commitAll()
	h.close()
	path := StatePath(cfg.DataDir, "in")
	must(t, os.Truncate(path, 0))

	src, err := New("in", cfg)
	must(t, err)
	host := newHost()
	err = src.Open(context.Background(), host)
	src.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--reset-state in") || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("Open over an empty state file: %v; want it refused, naming %s and --reset-state in", err, path)
	}
	if len(host.names) != 0 {
		t.Fatalf("files assigned over an empty state file: %v", host.names)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty state file was changed: %v, %v", fi, err)
	}

	if files := src.StateFiles(); len(files) != 1 || files[0] != path {
		t.Fatalf("StateFiles = %v, want [%s]", files, path)
	}
	if _, err := statestore.Reset(path, statestore.Options{}); err != nil {
		t.Fatal(err)
	}
	h = open(t, cfg)
	h.drain()
	if got := join(h.only()); got != "1,2,3" {
		t.Fatalf("after a reset read %q, want every line again", got)
	}
}

// A start that fails on a damaged state entry has written nothing to the
// state file: the store is only read until its entries decode (it once
// committed a transaction first).
func TestDamagedEntryChangesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "1\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "once" })
	h := open(t, cfg)
	h.drain()
	h.commitAll()
	h.close()
	st, err := openStore(t, h.src)
	must(t, err)
	must(t, st.Update(func(tx statestore.Tx) error { return tx.Put("1:2", []byte("not an entry")) }))
	must(t, st.Close())
	path := StatePath(cfg.DataDir, "in")
	before, err := os.ReadFile(path)
	must(t, err)

	src, err := New("in", cfg)
	must(t, err)
	err = src.Open(context.Background(), newHost())
	src.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open with a damaged entry: %v, want an error naming %s", err, path)
	}
	after, err := os.ReadFile(path)
	must(t, err)
	if !bytes.Equal(before, after) {
		t.Fatal("the start that failed on a damaged entry changed the state file")
	}
}

// tailOnce reads dir's *.log in tail mode until every file is read to its
// end, commits, and closes: weir stopped after catching up.
func tailOnce(t *testing.T, cfg *Config, lines int) *harness {
	t.Helper()
	h := open(t, cfg)
	h.pollUntil("every line", func() bool { return h.count() == lines })
	h.commitAll()
	h.close()
	return h
}

// A rotation weir cannot follow, without rotated (issue 25): the file,
// appended to while weir was stopped, renamed into another directory. It
// was lost with an INFO line. weir does not read it (it reads only files its
// configuration names) but finds it near its path and counts what it holds
// past the committed position, with a warning naming it and the glob that
// would read it.
func TestRotationIntoAnUnnamedDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.log")
	write(t, p, "1\n2\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
	tailOnce(t, cfg, 2)
	appendTo(t, p, "3\n4\n5\n")
	must(t, os.MkdirAll(filepath.Join(dir, "archive"), 0o755))
	must(t, os.Rename(p, filepath.Join(dir, "archive", "app.log-1")))
	write(t, p, "6\n")
	h := open(t, cfg)
	h.pollUntil("the new file", func() bool { return h.count() == 1 })
	if got := h.host.unread[reasonRotatedAway]; got != 6 {
		t.Fatalf("unread %v, want the 6 bytes appended before the rotation (rotated_away)", h.host.unread)
	}
	log := h.host.log.String()
	for _, want := range []string{"level=WARN", "path=" + p, "unread_bytes=6", "found_at=" + filepath.Join(dir, "archive", "app.log-1"), "rotated_glob=" + filepath.Join(dir, "archive", "*")} {
		if !strings.Contains(log, want) {
			t.Errorf("the warning does not say %q:\n%s", want, log)
		}
	}
}

// A file weir was following, gone while weir was stopped and found nowhere:
// weir cannot count what was written to it after it last looked, and says
// so with a warning (not an INFO line), counting what it knows.
func TestFollowedFileGoneFarAway(t *testing.T) {
	dir := t.TempDir()
	far, err := os.MkdirTemp("", "far-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(far) })
	far = filepath.Join(far, "a", "b") // nowhere near dir
	must(t, os.MkdirAll(far, 0o755))
	p := filepath.Join(dir, "app.log")
	write(t, p, "1\n2\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
	tailOnce(t, cfg, 2)
	appendTo(t, p, "3\n")
	if err := os.Rename(p, filepath.Join(far, "app.log")); err != nil {
		t.Skipf("the temporary directories are on different filesystems: %v", err)
	}
	write(t, p, "4\n")
	h := open(t, cfg)
	h.pollUntil("the new file", func() bool { return h.count() == 1 })
	log := h.host.log.String()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "path="+p) || !strings.Contains(log, "unknown") {
		t.Fatalf("no warning that what was written after weir last looked is unknown:\n%s", log)
	}
	if len(h.host.unread) != 0 {
		t.Fatalf("unread %v: nothing was known unread", h.host.unread)
	}
}

// Rotated twice while weir was stopped, without rotated (issue 25): the
// file weir knew is found in its directory and read to its end, but the
// generation created and rotated away meanwhile was lost in silence. It is
// now counted, with a warning naming it, once.
func TestRotatedTwiceWhileStopped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.log")
	write(t, p, "1\n2\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
	tailOnce(t, cfg, 2)
	appendTo(t, p, "3\n")
	must(t, os.Rename(p, p+".2"))
	write(t, p, "4\n5\n6\n")
	must(t, os.Rename(p, p+".1"))
	write(t, p, "7\n")
	write(t, filepath.Join(dir, "other.txt"), "not a rotation\n") // not named after a file under paths
	h := open(t, cfg)
	h.pollUntil("the rest of the file weir knew and the new one", func() bool { return h.count() == 2 })
	for range 10 { // more scans: reported once
		h.pollFor(2 * h.src.cfg.PollInterval)
	}
	if got := h.host.unread[reasonRotatedAway]; got != 6 {
		t.Fatalf("unread %v, want app.log.1's 6 bytes (rotated_away)", h.host.unread)
	}
	log := h.host.log.String()
	if n := strings.Count(log, "path="+p+".1 "); n != 1 || !strings.Contains(log, "rotated_glob="+filepath.Join(dir, "app.log.*")) {
		t.Fatalf("app.log.1 reported %d times, want once with the glob that reads it:\n%s", n, log)
	}
	if strings.Contains(log, "other.txt") {
		t.Fatalf("a file not named after one under paths was reported:\n%s", log)
	}
}

// A file that only looks like a rotated one (app.log.tmp, made by hand
// while weir was stopped) where nothing rotated is not counted.
func TestLookalikeWithoutRotationIsNotCounted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "app.log")
	write(t, p, "1\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
	tailOnce(t, cfg, 1)
	write(t, p+".tmp", "scratch\n")
	appendTo(t, p, "2\n")
	h := open(t, cfg)
	h.pollUntil("the new line", func() bool { return h.count() == 1 })
	for range 5 {
		h.pollFor(2 * h.src.cfg.PollInterval)
	}
	if len(h.host.unread) != 0 || strings.Contains(h.host.log.String(), "app.log.tmp") {
		t.Fatalf("unread %v; a lookalike was reported where nothing rotated:\n%s", h.host.unread, h.host.log)
	}
}
