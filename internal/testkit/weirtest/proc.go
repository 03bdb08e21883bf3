//go:build unix

package weirtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is one running weir process, started by Start. The fields are set
// once it starts, but for Err: a test reads Err only after Done is closed.
type Proc struct {
	// Name is what failures call the process: its log's file name without
	// the extension ("w1" for w1.log).
	Name string
	Cmd  *exec.Cmd
	// Log is the path of the log the process's stdout and stderr go to.
	Log string
	// From is the log's size when the process started: where its lines
	// begin in a log that earlier runs appended to (WaitRunning's from).
	From int64
	// Done is closed once the process has exited and its log is closed.
	Done chan struct{}
	// Err is how the process exited (nil for exit code 0), valid once Done
	// is closed.
	Err error
}

// Start starts bin with args (the whole command line after the binary:
// "run", "-c", cfg, ...) and env added to this process's environment. Its
// stdout and stderr are appended to the log at logPath, created if missing:
// a test that starts weir again and again (a kill loop) keeps every run's
// lines in one log, and From says where this run's begin. A process still
// running when t ends is killed, so that no test leaves one behind; a
// SIGCONT comes first, which lets one that a test stopped die at once.
func Start(t testing.TB, bin, logPath string, env []string, args ...string) *Proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	p := &Proc{
		Name: strings.TrimSuffix(filepath.Base(logPath), filepath.Ext(logPath)),
		Cmd:  cmd,
		Log:  logPath,
		From: st.Size(),
		Done: make(chan struct{}),
	}
	go func() {
		p.Err = cmd.Wait()
		f.Close()
		close(p.Done)
	}()
	t.Cleanup(func() {
		if p.Running() {
			_ = cmd.Process.Signal(syscall.SIGCONT)
			p.Kill()
		}
	})
	return p
}

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.Done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL, the crash the kill loops inflict, and returns once
// the process has exited.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.Done
}

// Stop sends SIGTERM, a graceful shutdown, and returns how the process
// exited (nil for exit code 0). It fails t, with the log's last lines, when
// the process has not exited within the time given: a stop that hangs is
// a failure of its own, not one to wait out until the test's timeout.
func (p *Proc) Stop(t testing.TB, within time.Duration) error {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Done:
		return p.Err
	case <-time.After(within):
		t.Fatalf("%s did not stop within %v of SIGTERM:\n%s", p.Name, within, Tail(p.Log, 30))
		return nil
	}
}

// Wait waits for the process to exit and returns how it exited (nil for
// exit code 0), or an error naming it when ctx ends first.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.Done:
		return p.Err
	case <-ctx.Done():
		return fmt.Errorf("%s did not exit: %w", p.Name, ctx.Err())
	}
}
