//go:build e2e

package filerotate_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// unreadReported checks that run w warned about path with n unread bytes,
// and that its summary counts them as rotated away.
func unreadReported(t *testing.T, w *weir, path string, n int64) {
	t.Helper()
	log := w.logText()
	var warned bool
	for l := range strings.Lines(log) {
		warned = warned || (strings.Contains(l, "level=WARN") && strings.Contains(l, path) && strings.Contains(l, fmt.Sprintf("unread_bytes=%d", n)))
	}
	if !warned {
		t.Errorf("no warning naming %s with unread_bytes=%d:\n%s", path, n, log)
	}
	if want := fmt.Sprintf("%d bytes unread (rotated away)", n); !strings.Contains(log, want) {
		t.Errorf("the summary does not say %q:\n%s", want, log)
	}
}

// The rotation weir cannot follow, in mode once and without
// rotated: 1,000 lines read, then 500 appended and the file renamed into
// another directory while weir was stopped, a new file of 500 lines. weir
// lost the 500 with an INFO line and exit 0. It reads only what its
// configuration names, so it still does not read them, but it finds the
// file, warns with its path and the 500 lines' bytes, counts them in the
// summary and exits with 4.
func TestRotatedIntoAnUnnamedDirectoryOnce(t *testing.T) {
	t.Parallel()
	e := newEnvMode(t, "once", "")
	e.appendLines(live, 0, 1000)
	if code := e.start().wait(); code != 0 {
		t.Fatalf("first run exited with %d", code)
	}
	before := e.size(live)
	e.appendLines(live, 1000, 1500)
	unread := e.size(live) - before
	e.rename(live, "logs/old/app.ndjson-20260101")
	e.appendLines(live, 1500, 2000)
	w := e.start()
	if code := w.wait(); code != 4 {
		t.Fatalf("weir exited with %d, want 4 (input left unread)\n%s", code, w.logText())
	}
	e.waitOutput(1500, 2000)
	unreadReported(t, w, e.path(live), unread)
}

// Rotated twice while weir was stopped, tail mode, without rotated: the
// file weir knew is found under its second name and read to its end; the
// generation between, created and rotated away while weir was stopped, was
// lost in silence. It is counted, with a warning naming it, and the run
// stopped with SIGTERM exits with 4.
func TestRotatedTwiceWhileStoppedTail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	w := started(t, e)
	if code := w.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("weir exited with %d after SIGTERM, want 0", code)
	}
	e.appendLines(live, 1000, 1500)
	e.rename(live, "logs/app.ndjson.2")
	e.appendLines(live, 1500, 2000)
	unread := e.size(live)
	e.rename(live, "logs/app.ndjson.1")
	e.appendLines(live, 2000, 2500)
	w = e.start()
	e.waitOutput(1000, 1500)
	e.waitOutput(2000, 2500)
	w.waitLog("the unseen generation reported", "level=WARN", "app.ndjson.1")
	if code := w.stop(syscall.SIGTERM); code != 4 {
		t.Fatalf("weir exited with %d after SIGTERM, want 4 (input left unread)", code)
	}
	unreadReported(t, w, e.path("logs/app.ndjson.1"), unread)
}
