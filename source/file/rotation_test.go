package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// fastDir returns a temporary directory in memory (/dev/shm) when there is
// one, where the state store's fsyncs cost nothing, else on disk.
func fastDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "weir-file-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Memory stays flat over 10,000 rotations in one tail-mode run: every file
// rotated away is read to its end, its partition revoked and its state entry
// forgotten, so the live partitions, the source's own maps and the state
// store's entries stay bounded by the files that exist. Ten logs are written
// and rotated together, 1,000 times; every line is read exactly once. (With
// the race detector, 100 times: CI runs it in full without.)
func TestTenThousandRotations(t *testing.T) {
	const logs, lines = 10, 3
	rounds := 1000
	if raceEnabled {
		rounds = 100
	}
	dir := fastDir(t)
	h := open(t, testConfig(dir, func(c *Config) {
		c.Mode = "tail"
		c.Paths = []string{filepath.Join(dir, "*.log")}
		c.Rotated = []string{filepath.Join(dir, "*.log.*")}
	}))
	read := 0
	maxLive, maxFiles, maxEntries := 0, 0, 0
	measure := func() {
		h.src.mu.Lock()
		files := max(len(h.src.files), len(h.src.byKey), len(h.src.order))
		h.src.mu.Unlock()
		maxLive, maxFiles = max(maxLive, len(h.host.live)), max(maxFiles, files)
		maxEntries = max(maxEntries, h.src.store.Len()-1) // less the scan time
	}
	for i := range rounds {
		for k := range logs {
			var data string
			for j := range lines {
				data += fmt.Sprintf("%d-%d-%d\n", i, k, j)
			}
			write(t, filepath.Join(dir, fmt.Sprintf("app-%d.log", k)), data)
		}
		var commits []connector.Commit
		for read < (i+1)*logs*lines {
			b, err := h.poll()
			if err != nil {
				t.Fatal(err)
			}
			read += len(b.Records)
			commits = append(commits, connector.Commit{Partition: b.Partition, Position: b.End})
			measure()
		}
		// Delivered: commit, as the runtime does every commit interval.
		if err := h.src.Commit(context.Background(), commits); err != nil {
			t.Fatal(err)
		}
		for k := range logs {
			p := filepath.Join(dir, fmt.Sprintf("app-%d.log", k))
			lastWritten(t, p, time.Hour) // done: nothing more will be written to it
			if err := os.Rename(p, p+".1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d rotations: at most %d live partitions, %d files in the source's maps, %d state entries; %d assigned in all",
		logs*rounds, maxLive, maxFiles, maxEntries, len(h.host.names))
	// At any moment: the live files, and those rotated away last, being let go.
	if maxLive > 2*logs || maxFiles > 2*logs || maxEntries > 2*logs {
		t.Fatalf("live partitions up to %d, source maps up to %d, state entries up to %d: want at most %d each (the files that exist)",
			maxLive, maxFiles, maxEntries, 2*logs)
	}
	seen := map[string]bool{}
	for _, l := range h.lines {
		for _, s := range l {
			if seen[s] {
				t.Fatalf("line %s read twice", s)
			}
			seen[s] = true
		}
	}
	if len(seen) != logs*rounds*lines || len(h.host.names) != logs*rounds {
		t.Fatalf("read %d distinct lines in %d partitions, want %d in %d", len(seen), len(h.host.names), logs*rounds*lines, logs*rounds)
	}
}

// stateKeys lists the paths of the state store's file entries (the source
// must be closed).
func stateKeys(t *testing.T, h *harness) []string {
	t.Helper()
	st, err := openStore(t, h.src)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var paths []string
	st.ForEach(func(k string, v []byte) error {
		if !strings.HasPrefix(k, "#") {
			e, err := decodeEntry(v)
			if err != nil {
				t.Fatal(err)
			}
			paths = append(paths, filepath.Base(e.Path))
		}
		return nil
	})
	slices.Sort(paths)
	return paths
}

// pollUntil polls until cond holds, failing the test after ten seconds.
func (h *harness) pollUntil(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("never: %s; read %v", what, h.lines)
		}
		if err := h.pollFor(10 * time.Millisecond); err != nil && !errors.Is(err, connector.ErrEndOfInput) && !errors.Is(err, context.DeadlineExceeded) {
			h.t.Fatal(err)
		}
	}
}

// count returns how many lines were read in all.
func (h *harness) count() int {
	n := 0
	for _, l := range h.lines {
		n += len(l)
	}
	return n
}

func revokedContains(h *harness, part string) bool {
	return slices.ContainsFunc(h.host.revoked, func(n string) bool { return strings.Contains(n, part) })
}

// A file rotated while weir was stopped (appended to, then renamed out of
// paths) is found in its directory by its identity and read to its end under
// its old partition, in both modes; then it is let go and forgotten.
func TestRotatedWhileStoppedIsReadToItsEnd(t *testing.T) {
	for _, mode := range []string{"tail", "once"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "a.log")
			write(t, p, "1\n2\n")
			cfg := testConfig(dir, func(c *Config) { c.Mode = mode })
			h := open(t, cfg)
			h.pollUntil("1,2", func() bool { return h.count() == 2 })
			h.commitAll()
			h.close()

			appendTo(t, p, "3\n")
			if err := os.Rename(p, p+".1"); err != nil {
				t.Fatal(err)
			}
			lastWritten(t, p+".1", time.Hour)
			write(t, p, "4\n")
			h2 := open(t, cfg)
			old := h.host.names[1]
			h2.pollUntil("the rotated file let go", func() bool { return revokedContains(h2, old) && len(h2.lines) == 2 })
			if got := join(h2.lines[old]); got != "3" {
				t.Fatalf("the rotated file's partition %s read %q, want 3", old, got)
			}
			if h2.host.unread[reasonGone] != 0 {
				t.Fatalf("unread %v, want none", h2.host.unread)
			}
			h2.commitAll()
			h2.close()
			if got := stateKeys(t, h2); !slices.Equal(got, []string{"a.log"}) {
				t.Fatalf("state holds %v, want only a.log", got)
			}
		})
	}
}

// A rotation into another directory is followed there through the rotated
// glob; without it the file is not read (weir reads only what its
// configuration names), but it is found near its path, and the bytes it
// holds past the committed position are counted and reported, naming where
// it is.
func TestRotatedIntoAnotherDirectory(t *testing.T) {
	for _, withGlob := range []bool{true, false} {
		t.Run(fmt.Sprintf("rotated=%v", withGlob), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "a.log")
			write(t, p, "1\n2\n3\n")
			cfg := testConfig(dir, func(c *Config) {
				c.Mode, c.BatchSize = "tail", 1
				if withGlob {
					c.Rotated = []string{filepath.Join(dir, "old", "*")}
				}
			})
			h := open(t, cfg)
			b, err := h.poll()
			if err != nil {
				t.Fatal(err)
			}
			h.commitAll() // at 2, with the file 6 bytes long
			h.close()
			if err := os.Mkdir(filepath.Join(dir, "old"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p, filepath.Join(dir, "old", "a.log-2026")); err != nil {
				t.Fatal(err)
			}
			h2 := open(t, testConfig(dir, func(c *Config) { c.Rotated, c.AllowEmpty = cfg.Rotated, true }))
			h2.drain()
			if withGlob {
				if got := join(h2.lines[h.host.names[b.Partition]]); got != "2,3" {
					t.Fatalf("read %q from the moved file, want 2,3", got)
				}
				return
			}
			if len(h2.lines) != 0 || h2.host.unread[reasonRotatedAway] != 4 {
				t.Fatalf("read %v, unread %v; want nothing read and 4 bytes unread (rotated_away)", h2.lines, h2.host.unread)
			}
			if log := h2.host.log.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "unread_bytes=4") ||
				!strings.Contains(log, "found_at=") || !strings.Contains(log, filepath.Join(dir, "old", "a.log-2026")) {
				t.Fatalf("no warning with the unread bytes:\n%s", log)
			}
			h2.close()
			if got := stateKeys(t, h2); len(got) != 0 {
				t.Fatalf("the gone file stays in the state: %v", got)
			}
		})
	}
}

// copytruncate: the file is copied to a.log.1 and truncated in place. The
// lines after the committed position are read from the copy, found by the
// fingerprint of the file's first bytes, whether weir was stopped or running.
func TestCopyTruncate(t *testing.T) {
	for _, stopped := range []bool{true, false} {
		t.Run(fmt.Sprintf("stopped=%v", stopped), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "a.log")
			write(t, p, "line-1\nline-2\n")
			cfg := testConfig(dir, func(c *Config) { c.Mode = "tail" })
			h := open(t, cfg)
			h.pollUntil("two lines", func() bool { return h.count() == 2 })
			h.commitAll()
			if stopped {
				h.close()
			}
			appendTo(t, p, "line-3\n")
			copyFile(t, p, p+".1")
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			appendTo(t, p, "new\n")
			lastWritten(t, p+".1", time.Hour)
			if stopped {
				h = open(t, cfg)
			}
			h.pollUntil("line-3 and new", func() bool {
				var got []string
				for _, l := range h.lines {
					got = append(got, l...)
				}
				return slices.Contains(got, "line-3") && slices.Contains(got, "new")
			})
			if h.host.unread[reasonGone] != 0 {
				t.Fatalf("unread %v, want none", h.host.unread)
			}
			var n int
			for _, l := range h.lines {
				n += len(l)
			}
			if want := map[bool]int{true: 2, false: 4}[stopped]; n != want {
				t.Fatalf("read %v: want each line once", h.lines)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, string(b))
}

// A file truncated while it is followed, with no copy to be found: the old
// incarnation ends with the bytes it had read (its unfinished last line
// included), and the bytes it knew of but never read are counted as unread.
func TestTruncatedWithoutCopyCountsUnread(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	var data strings.Builder
	for i := range 20 {
		fmt.Fprintf(&data, "line-%03d\n", i) // 9 bytes
	}
	write(t, p, data.String())
	h := open(t, testConfig(dir, func(c *Config) { c.Mode, c.BatchSize, c.ReadBufferBytes = "tail", 1, 64 }))
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	h.commitAll() // the source now knows the file is 180 bytes
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p, "new\n")
	old := h.host.names[1]
	h.pollUntil("the old incarnation let go", func() bool { return revokedContains(h, old) })
	read := 0
	for _, l := range h.lines[old] {
		read += len(l) + 1
	}
	if last := h.lines[old][len(h.lines[old])-1]; len(last) < 8 {
		read-- // an unfinished line, read as the old incarnation's last record
	}
	if n := h.host.unread[reasonGone]; n == 0 || int64(read)+n != 180 {
		t.Fatalf("the old incarnation read %d bytes (%v) and counted %d unread: want them to add up to 180, some unread",
			read, h.lines[old], n)
	}
}

// The double rotation while stopped: the known file is renamed
// a.log.2, a new a.log is written and renamed a.log.1, and a third a.log is
// written. The middle generation was never seen; it changed after weir last
// looked, and it is under the rotated glob, so it is read from its start.
// The files let go are not read again by a later run.
func TestUnseenGenerationIsRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "g1-1\n")
	cfg := testConfig(dir, func(c *Config) {
		c.Mode = "tail"
		c.Rotated = []string{filepath.Join(dir, "*.log.*")}
	})
	h := open(t, cfg)
	h.pollUntil("g1-1", func() bool { return len(h.lines) == 1 })
	h.commitAll()
	h.close()

	appendTo(t, p, "g1-2\n")
	must(t, os.Rename(p, p+".2"))
	write(t, p, "g2-1\n")
	must(t, os.Rename(p, p+".1"))
	write(t, p, "g3-1\n")
	h2 := open(t, cfg)
	want := []string{"g1-2", "g2-1", "g3-1"}
	h2.pollUntil("every generation", func() bool {
		var got []string
		for _, l := range h2.lines {
			got = append(got, l...)
		}
		slices.Sort(got)
		return slices.Equal(got, want)
	})
	// Done with: the rotated files are let go and forgotten.
	lastWritten(t, p+".1", time.Hour)
	lastWritten(t, p+".2", time.Hour)
	h2.pollUntil("both rotated files let go", func() bool { return len(h2.host.live) == 1 })
	h2.commitAll()
	h2.close()
	if got := stateKeys(t, h2); !slices.Equal(got, []string{"a.log"}) {
		t.Fatalf("state holds %v, want only a.log", got)
	}
	h3 := open(t, cfg)
	for range 5 {
		if _, err := h3.src.readSome(&connector.Batch{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(h3.lines) != 0 || len(h3.host.names) != 1 {
		t.Fatalf("a restart read %v from %v: the rotated files were let go", h3.lines, h3.host.names)
	}
}

// A rotated file written again after it was let go (a writer that kept it
// open longer than rotate_wait) is read again from its start: duplicates,
// never a loss.
func TestLateWriteToAFileLetGoIsReadAgain(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\n")
	h := open(t, testConfig(dir, func(c *Config) {
		c.Mode = "tail"
		c.Rotated = []string{filepath.Join(dir, "*.log.*")}
	}))
	h.pollUntil("1", func() bool { return len(h.lines) == 1 })
	must(t, os.Rename(p, p+".1"))
	lastWritten(t, p+".1", time.Hour)
	h.pollUntil("a.log.1 let go", func() bool { return len(h.host.live) == 0 })
	appendTo(t, p+".1", "late\n")
	h.pollUntil("the late line", func() bool {
		for _, l := range h.lines {
			if slices.Contains(l, "late") {
				return true
			}
		}
		return false
	})
}

// In mode tail a last line without a newline waits for it; once the file is
// rotated away and done, the line is read as the file's last record.
func TestUnfinishedLineIsReadWhenRotatedAway(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\nhalf")
	h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
	h.pollUntil("1", func() bool { return len(h.lines) == 1 })
	for range 3 {
		if _, err := h.src.readSome(&connector.Batch{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := join(h.only()); got != "1" {
		t.Fatalf("read %q before the rotation, want 1: the last line has no newline yet", got)
	}
	must(t, os.Rename(p, p+".1"))
	lastWritten(t, p+".1", time.Hour)
	h.pollUntil("let go", func() bool { return len(h.host.live) == 0 })
	if got := join(h.only()); got != "1,half" {
		t.Fatalf("read %q, want 1,half", got)
	}
	if e := h.ends[1]; e != 6 {
		t.Fatalf("end %d, want 6, the size of the file", e)
	}
}

// A file is let go only once its final position is committed: while the
// revoke's final commit falls short, the file is assigned again at its
// committed position and read again.
func TestLetGoOnlyAfterTheFinalCommit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\n2\n")
	h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
	h.pollUntil("1,2", func() bool { return h.count() == 2 })
	refused := 0
	commit := h.host.onRevoke
	h.host.onRevoke = func(ps []checkpoint.Partition) error {
		if refused < 2 {
			refused++
			return errors.New("the final commit failed")
		}
		return commit(ps)
	}
	must(t, os.Rename(p, p+".1"))
	lastWritten(t, p+".1", time.Hour)
	h.pollUntil("let go", func() bool { return refused == 2 && len(h.host.live) == 0 })
	if got := join(h.only()); got != "1,2,1,2,1,2" {
		t.Fatalf("read %q: want the file read again after each failed final commit", got)
	}
	if !strings.Contains(h.host.log.String(), "reading it again from the committed position") {
		t.Fatalf("no warning:\n%s", h.host.log)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A rewind of a truncated file's old incarnation, whether a scan saw the
// truncation yet or not, reads again what is still buffered, never the new
// bytes at the old offsets; bytes no longer held are counted as unread.
func TestRewindOfATruncatedFile(t *testing.T) {
	for _, seen := range []bool{false, true} {
		t.Run(fmt.Sprintf("seen=%v", seen), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "a.log")
			write(t, p, "aa\nbb\ncc\n")
			h := open(t, testConfig(dir, func(c *Config) { c.Mode, c.BatchSize = "tail", 1 }))
			if _, err := h.poll(); err != nil { // aa; bb and cc are buffered
				t.Fatal(err)
			}
			must(t, os.Truncate(p, 0))
			appendTo(t, p, "0123456789\n") // longer than the old bytes
			old := h.host.names[1]
			if seen {
				h.src.lastScan = time.Time{} // the next Poll scans before it reads
				h.pollUntil("the truncation seen", func() bool {
					h.src.mu.Lock()
					defer h.src.mu.Unlock()
					f := h.src.files[1]
					if f == nil {
						t.Fatalf("let go before the rewind: read %q, revoked %v", h.lines, h.host.revoked)
					}
					return f.fd == nil
				})
			}
			before := len(h.lines[old])
			must(t, h.src.Seek(context.Background(), 1, 0))
			h.pollUntil("the old incarnation let go", func() bool { return revokedContains(h, old) })
			if got, want := join(h.lines[old][before:]), "aa,bb,cc"; got != want {
				t.Fatalf("after the rewind the old incarnation read %q, want %q (all of it: %q)", got, want, h.lines[old])
			}
			if h.host.unread[reasonGone] != 0 {
				t.Fatalf("unread %v after a rewind within the buffer", h.host.unread)
			}
		})
	}
}

// A file truncated and written again, longer, between two scans: the reads
// before the next scan must not take its new bytes at the old offsets for
// more of the old content.
func TestTruncatedAndRewrittenBetweenScans(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "aa\nbb\n")
	h := open(t, testConfig(dir, func(c *Config) { c.Mode, c.PollInterval = "tail", time.Hour }))
	if _, err := h.poll(); err != nil {
		t.Fatal(err)
	}
	must(t, os.Truncate(p, 0))
	appendTo(t, p, "0123456789\n")
	for range 3 {
		b := connector.Batch{}
		if got, err := h.src.readSome(&b); got || err != nil {
			t.Fatalf("read %d records (%v) of a file truncated since the last scan", len(b.Records), err)
		}
	}
	h.src.lastScan = time.Time{} // the next Poll scans
	h.pollUntil("the new incarnation", func() bool { return h.count() == 3 })
	if old, cur := join(h.lines[h.host.names[1]]), join(h.lines[h.host.names[2]]); old != "aa,bb" || cur != "0123456789" {
		t.Fatalf("old incarnation read %q, new %q; want aa,bb and 0123456789", old, cur)
	}
}

// On a first start, the files under rotated are history, even those written
// a moment before: only the live files are read. A rotated file that changes
// after the start is read.
func TestFirstStartLeavesRotatedHistory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p+".1", "old\n")
	write(t, p, "live\n")
	h := open(t, testConfig(dir, func(c *Config) {
		c.Mode = "tail"
		c.Rotated = []string{filepath.Join(dir, "*.log.*")}
	}))
	h.pollUntil("live", func() bool { return h.count() == 1 })
	for range 20 {
		h.pollFor(2 * time.Millisecond)
	}
	if got := join(h.only()); got != "live" {
		t.Fatalf("read %v on a first start, want only the live file", h.lines)
	}
	write(t, p+".2", "new generation\n")
	h.pollUntil("the generation written after the start", func() bool { return h.count() == 2 })
}
