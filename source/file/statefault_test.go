package file

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// fill fills the filesystem of dir and returns the filler's path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			return p
		}
	}
}

// The state store's faults, through the source, on a tmpfs:
//
//   - a first start on a disk too small for the state file fails, naming the
//     file and the cause, and leaves no state file; with space again, the
//     next start creates it and reads;
//   - a disk that fills up while new files come: the files already read go
//     on, one warning says new files wait, and they are read once there is
//     space;
//   - a commit that needs more space than there is (files renamed to long
//     paths make their entries grow past the disk's size) returns an error naming the state file and
//     the cause, and logs nothing itself: the runtime retries and reports.
func TestStateFaults(t *testing.T) {
	in := t.TempDir()
	write(t, filepath.Join(in, "a.log"), "1\n2\n")
	long := in
	for len(long) < 3500 {
		long = filepath.Join(long, strings.Repeat("d", 250))
	}
	must(t, os.MkdirAll(long, 0o755))
	state, resize := weirtest.Tmpfs(t, "4k")
	cfg := testConfig(in, func(c *Config) {
		c.DataDir, c.Mode = state, "tail"
		c.Paths = []string{filepath.Join(in, "*.log"), filepath.Join(long, "*.log")}
	})
	src, err := New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = src.Open(context.Background(), newHost())
	path := StatePath(state, "in")
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "free space") {
		t.Fatalf("open on a full disk: %v; want ENOSPC naming %s and saying to free space", err, path)
	}

	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed first start left a state file (%v): the next start would refuse it", err)
	}

	resize("256k")
	h := open(t, cfg)
	h.pollUntil("both lines", func() bool { return h.count() == 2 })

	// New files on a full disk.
	filler := fill(t, state)
	for i := range 100 {
		write(t, filepath.Join(in, fmt.Sprintf("new-%02d-%s.log", i, strings.Repeat("n", 100))), "x\n")
	}
	appendTo(t, filepath.Join(in, "a.log"), "3\n")
	h.pollUntil("a.log's new line and a warning", func() bool {
		return h.count() == 3 && strings.Contains(h.host.log.String(), "cannot record files in the state store")
	})
	for range 20 { // more scans fail the same way
		h.pollFor(5 * time.Millisecond)
	}
	if n := strings.Count(h.host.log.String(), "cannot record files in the state store"); n != 1 || h.count() == 103 {
		t.Fatalf("%d warnings that new files wait, %d lines read: want one warning, and the new files waiting\n%s", n, h.count(), h.host.log)
	}
	// Nothing is in flight, so no partition stalls: the source itself
	// reports the failure, for /readyz, /debug/stalls and the status.
	since, attempts, failing := h.src.Failing()
	if since.IsZero() || attempts < 2 || failing == nil || !errors.Is(failing, syscall.ENOSPC) || !strings.Contains(failing.Error(), "new, rotated and truncated files wait") {
		t.Fatalf("Failing() while new files wait on a full disk = %v, %d, %v; want since when, the attempts and ENOSPC", since, attempts, failing)
	}
	must(t, os.Remove(filler))
	h.pollUntil("the new files", func() bool { return h.count() == 103 })
	if !strings.Contains(h.host.log.String(), "records files again") {
		t.Fatalf("no word that the state store works again:\n%s", h.host.log)
	}
	if since, _, err := h.src.Failing(); !since.IsZero() || err != nil {
		t.Fatalf("Failing() once the store records files again = %v, %v; want no failure", since, err)
	}
	h.commitAll()

	// A commit whose entries grow on a full disk.
	ents, err := os.ReadDir(in)
	must(t, err)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			must(t, os.Rename(filepath.Join(in, e.Name()), filepath.Join(long, e.Name())))
		}
	}
	h.pollUntil("the renames seen", func() bool {
		h.src.mu.Lock()
		defer h.src.mu.Unlock()
		for _, f := range h.src.order {
			if !strings.HasPrefix(f.path, long) {
				return false
			}
		}
		return true
	})
	var all []connector.Commit
	for p, e := range h.ends {
		all = append(all, connector.Commit{Partition: p, Position: e})
	}
	filler = fill(t, state)
	logged := len(h.host.log.String())
	failed := h.src.Commit(context.Background(), all)
	if failed == nil || !errors.Is(failed, syscall.ENOSPC) || !strings.Contains(failed.Error(), path) || !strings.Contains(failed.Error(), "free space") {
		t.Fatalf("commit on a full disk: %v; want ENOSPC naming %s and saying to free space", failed, path)
	}
	if more := h.host.log.String()[logged:]; strings.Contains(more, "level=WARN") || strings.Contains(more, "level=ERROR") {
		t.Fatalf("Commit logged its failure itself:\n%s", more)
	}
	must(t, os.Remove(filler))
	resize("2m") // the grown entries need more than the whole disk had
	if err := h.src.Commit(context.Background(), all); err != nil {
		t.Fatalf("commit with space again: %v", err)
	}
}

// A file whose first bytes cannot be read waits unnamed and unread: the
// source reports it as failing (pipeline.FailureReporter) until it can be
// read, and logs it when it begins and then at doubling counts, not at
// every read.
func TestUnreadableFileIsFailing(t *testing.T) {
	in := t.TempDir()
	write(t, filepath.Join(in, "a.log"), "1\n")
	write(t, filepath.Join(in, "b.log"), "") // too short to name: it waits
	cfg := testConfig(in, func(c *Config) { c.Mode = "tail" })
	h := open(t, cfg)
	h.pollUntil("a.log's line", func() bool { return h.count() == 1 })
	h.src.mu.Lock()
	if len(h.src.waiting) != 1 {
		h.src.mu.Unlock()
		t.Fatalf("%d files wait to be named, want b.log", len(h.src.waiting))
	}
	b := h.src.waiting[0]
	must(t, b.fd.Close()) // its reads fail from now on, as on a failing disk
	h.src.mu.Unlock()
	for range 100 {
		h.pollFor(time.Millisecond)
	}
	since, attempts, err := h.src.Failing()
	if since.IsZero() || attempts < 100 || err == nil || !strings.Contains(err.Error(), b.path) || !strings.Contains(err.Error(), "first bytes") {
		t.Fatalf("Failing() with b.log unreadable = %v, %d, %v; want since when, every attempt and an error naming the file", since, attempts, err)
	}
	// One at attempt 1, 2, 4, 8...: Poll and the log are on this goroutine.
	if n := strings.Count(h.host.log.String(), "cannot read the first bytes"); n != bits.Len(uint(attempts)) {
		t.Fatalf("%d warnings for %d failed attempts: want one when it began and one at each doubling\n%s", n, attempts, h.host.log)
	}
	// A read that hangs on a failing disk holds mu: Failing answers anyway,
	// since /readyz asks it then.
	h.src.mu.Lock()
	answered := make(chan struct{})
	go func() { h.src.Failing(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Error("Failing waits while a read holds the source's lock")
	}
	h.src.mu.Unlock()
	<-answered
	// Readable again (a disk that answers again), with a line to name it by.
	h.src.mu.Lock()
	fd, err := os.Open(b.path)
	must(t, err)
	b.fd, b.lr.src = fd, fd
	h.src.mu.Unlock()
	appendTo(t, b.path, "2\n")
	h.pollUntil("b.log's line, and the failure over", func() bool {
		since, _, err := h.src.Failing()
		return h.count() == 2 && since.IsZero() && err == nil
	})
	if !strings.Contains(h.host.log.String(), "could be read again") {
		t.Fatalf("no word that the failure ended:\n%s", h.host.log)
	}
}
