//go:build unix

package weirtest

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A shell stands in for weir: what Start and the Proc's methods promise
// does not depend on the program.
func TestProc(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	log := filepath.Join(t.TempDir(), "w1.log")

	// The first run: its environment, its log, a graceful stop.
	p := Start(t, sh, log, []string{"WEIRTEST_WORD=first"}, "-c", `echo "$WEIRTEST_WORD"; trap 'echo stopping; exit 0' TERM; while :; do sleep 0.05; done`)
	if p.Name != "w1" || p.From != 0 {
		t.Errorf("Name %q, From %d; want w1, 0", p.Name, p.From)
	}
	WaitFor(t, "the first line", 10*time.Second, func() bool { return Tail(log, 1) == "first" })
	if !p.Running() {
		t.Fatal("not running")
	}
	if err := p.Stop(t, 10*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.Running() {
		t.Error("running after Stop")
	}

	// The second run appends to the log, From where the first ended.
	q := Start(t, sh, log, nil, "-c", `echo second; exec sleep 60`)
	if want := int64(len("first\nstopping\n")); q.From != want {
		t.Errorf("From %d, want %d", q.From, want)
	}
	WaitFor(t, "the second line", 10*time.Second, func() bool { return Tail(log, 1) == "second" })
	if got := Tail(log, 3); got != "first\nstopping\nsecond" {
		t.Errorf("Tail(3) = %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "w1") {
		t.Errorf("Wait on a running process: %v", err)
	}
	q.Kill()
	var ee *exec.ExitError
	if err := q.Wait(context.Background()); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Wait after Kill: %v, want killed by SIGKILL", err)
	}
}

// A process left running, even a stopped one, is gone once its test ends.
func TestProcCleanupKills(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	var p *Proc
	t.Run("leaves one stopped", func(t *testing.T) {
		p = Start(t, sh, filepath.Join(t.TempDir(), "left.log"), nil, "-c", "exec sleep 60")
		if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	})
	select {
	case <-p.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("the process outlived its test")
	}
}

func TestTail(t *testing.T) {
	if got := Tail(filepath.Join(t.TempDir(), "none"), 3); got != "" {
		t.Errorf("Tail of a missing file = %q, want \"\"", got)
	}
}
