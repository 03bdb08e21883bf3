//go:build e2e

package filerotate_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

const statePath = "state/file-source-in.db"

// refused checks that a run over an unusable state file stopped at once
// with exit code 3 and an error naming the file and --reset-state, having
// read nothing.
func refused(t *testing.T, e *env, w *weir) {
	t.Helper()
	if code := w.wait(); code != 3 {
		t.Fatalf("weir over an empty state file exited with %d, want 3", code)
	}
	log := w.logText()
	for _, want := range []string{e.path(statePath), "--reset-state in", "empty"} {
		if !strings.Contains(log, want) {
			t.Errorf("the error does not say %q:\n%s", want, log)
		}
	}
	if fi, err := os.Stat(e.path(statePath)); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty state file was changed (%v)", err)
	}
}

// The first case: mode once, 1,000 lines read and committed, the
// state file emptied (`: > file`). weir read all 1,000 again, exit 0. Now it
// stops (exit 3) naming the file and the fix, and writes nothing; run with
// --reset-state in, it reads the input again on purpose.
func TestEmptyStateFileOnce(t *testing.T) {
	t.Parallel()
	e := newEnvMode(t, "once", "")
	e.appendLines(live, 0, 1000)
	if code := e.start().wait(); code != 0 {
		t.Fatalf("first run exited with %d", code)
	}
	e.waitOutput(0, 1000)
	if err := os.Truncate(e.path(statePath), 0); err != nil {
		t.Fatal(err)
	}
	refused(t, e, e.start())
	out := e.output()
	for id, n := range out {
		if n != 1 {
			t.Fatalf("id %d is in the output %d times after the refused run", id, n)
		}
	}
	w := e.start("--reset-state", "in")
	if code := w.wait(); code != 0 {
		t.Fatalf("the run with --reset-state exited with %d", code)
	}
	if !strings.Contains(w.logText(), "moved aside") {
		t.Fatalf("--reset-state did not say where the file went:\n%s", w.logText())
	}
	for id, n := range e.output() {
		if n != 2 {
			t.Fatalf("after --reset-state id %d is in the output %d times, want 2 (read again on purpose)", id, n)
		}
	}
}

// The second case: tail mode, the state file emptied while weir was
// stopped and the log rotated meanwhile: weir took it for a first start, the
// rotated file for history, and lost its 500 unread lines with exit 0. Now
// the start is refused and the rotated file is still there to be read once
// the operator decides.
func TestEmptyStateFileTail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	w := started(t, e)
	if code := w.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("weir exited with %d after SIGTERM, want 0", code)
	}
	if err := os.Truncate(e.path(statePath), 0); err != nil {
		t.Fatal(err)
	}
	e.appendLines(live, 1000, 1500)
	e.rename(live, "logs/app.ndjson.1")
	e.appendLines(live, 1500, 2000)
	refused(t, e, e.start())
	if m := missing(e.output(), 1000, 2000); len(m) != 1000 {
		t.Fatalf("the refused run wrote %d lines", 1000-len(m))
	}
}
