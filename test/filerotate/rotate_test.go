//go:build e2e

package filerotate_test

import (
	"fmt"
	"syscall"
	"testing"
)

const (
	live    = "logs/app.ndjson"
	retired = "rotated file read to its end" // the log line of a file let go
)

// started runs weir over the first 1,000 lines until they are all in the
// output.
func started(t *testing.T, e *env) *weir {
	t.Helper()
	e.appendLines(live, 0, 1000)
	w := e.start()
	e.waitOutput(0, 1000)
	return w
}

// finish waits for every id below n and for the rotated file to be let go,
// stops weir gracefully, and checks that only the live file is left in the
// state store, committed to its end.
func finish(t *testing.T, e *env, w *weir, n int, rotated string) {
	t.Helper()
	e.waitOutput(0, n)
	w.waitLog("the rotated file "+rotated+" to be let go", retired, rotated)
	if code := w.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("weir exited with %d after SIGTERM, want 0", code)
	}
	e.onlyLive(live)
}

// The scenario: 1,000 lines read and committed, weir stopped; 500
// lines appended, the file renamed app.ndjson.1 and a new app.ndjson of 500
// lines. The restarted weir reads the 500 lines of the renamed file.
func TestRotatedWhileStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	w := started(t, e)
	if code := w.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("weir exited with %d after SIGTERM, want 0", code)
	}
	e.appendLines(live, 1000, 1500)
	e.rename(live, "logs/app.ndjson.1")
	e.appendLines(live, 1500, 2000)
	finish(t, e, e.start(), 2000, "app.ndjson.1")
}

// SIGKILL right after a rotation: before weir noticed it, and after it began
// reading the new file (so it knows the old one was renamed away).
func TestKilledRightAfterRotation(t *testing.T) {
	t.Parallel()
	for _, noticed := range []bool{false, true} {
		t.Run(fmt.Sprintf("noticed=%v", noticed), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "")
			w := started(t, e)
			e.appendLines(live, 1000, 1500)
			e.rename(live, "logs/app.ndjson.1")
			e.appendLines(live, 1500, 2000)
			if noticed {
				e.waitOutput(1500, 2000)
			}
			w.stop(syscall.SIGKILL)
			finish(t, e, e.start(), 2000, "app.ndjson.1")
		})
	}
}

// copytruncate: the file is copied to app.ndjson.1 and truncated in place, and
// new lines follow. The lines appended after weir's last read are in the
// copy only; weir finds the copy by its first bytes and reads them there.
func TestCopyTruncate(t *testing.T) {
	t.Parallel()
	for _, stopped := range []bool{true, false} {
		t.Run(fmt.Sprintf("stopped=%v", stopped), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "")
			w := started(t, e)
			if stopped {
				if code := w.stop(syscall.SIGTERM); code != 0 {
					t.Fatalf("weir exited with %d after SIGTERM, want 0", code)
				}
			}
			e.appendLines(live, 1000, 1500)
			e.copyTruncate(live, "logs/app.ndjson.1")
			e.appendLines(live, 1500, 1800) // shorter than what was read
			if stopped {
				w = e.start()
			}
			finish(t, e, w, 1800, "app.ndjson.1")
		})
	}
}

// A rotation that moves the file into another directory (logrotate's
// olddir), named by the rotated glob: found there after a stop or a kill.
func TestRotatedIntoAnotherDirectory(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "    rotated: [$DIR/logs/old/*]")
			w := started(t, e)
			w.stop(sig)
			e.appendLines(live, 1000, 1500)
			e.rename(live, "logs/old/app.ndjson-20260101")
			e.appendLines(live, 1500, 2000)
			finish(t, e, e.start(), 2000, "app.ndjson-20260101")
		})
	}
}
