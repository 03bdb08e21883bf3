//go:build e2e

package systemd

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// bin is the weir binary both tests run, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	var cleanup func()
	var err error
	bin, cleanup, err = weirtest.BuildMain("")
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// endless generates records until stopped; a blackhole acknowledges them.
const endless = `
sources:
  numbers: { type: generate, rate: 2000, batch_size: 50, partitions: 2 }
sinks:
  sink: { type: blackhole, inputs: [numbers] }
checkpoint: { commit_interval: 50ms }
metrics: { address: "off" }
`

// notifySocket listens on a unixgram socket (a short path: 108 bytes at
// most) and returns its path and every datagram it receives, in order.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "weir-sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan string, 1024)
	go func() {
		defer close(msgs)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return path, msgs
}

// next returns the next message that is not a watchdog ping, counting the
// pings it skips.
func next(t *testing.T, msgs <-chan string, pings *int, stderr *weirtest.SyncBuffer) string {
	t.Helper()
	timeout := time.After(60 * time.Second) // a generous bound for a busy machine
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the notify socket closed")
			}
			if m == "WATCHDOG=1" {
				*pings++
				continue
			}
			return m
		case <-timeout:
			t.Fatalf("no notification within 60s; weir's stderr:\n%s", stderr.String())
		}
	}
}

func expect(t *testing.T, got, state, status string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	if lines[0] != state || !strings.Contains(lines[len(lines)-1], "STATUS=") || !strings.Contains(got, status) {
		t.Fatalf("notification %q, want %s with a STATUS= naming %q", got, state, status)
	}
}

// Guarantee: under systemd, weir run says READY=1 once it runs, RELOADING=1
// (with MONOTONIC_USEC) then READY=1 around each SIGHUP reload, the refused
// one included, STOPPING=1 at SIGTERM and nothing after it, and pings the
// watchdog while WATCHDOG_USEC asks; it exits 0.
func TestNotifyLifecycle(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(cfg, []byte(endless), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, msgs := notifySocket(t)
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000") // a ping every 100ms
	var stderr weirtest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()
	pings := 0

	expect(t, next(t, msgs, &pings, &stderr), "READY=1", "running "+cfg)
	weirtest.WaitFor(t, "watchdog pings", 60*time.Second, func() bool {
		for {
			select {
			case m := <-msgs:
				if m != "WATCHDOG=1" {
					t.Fatalf("before any signal: notification %q, want only watchdog pings", m)
				}
				pings++
			default:
				return pings >= 3
			}
		}
	})

	// A reload of a valid configuration: RELOADING=1 then READY=1 once the
	// new pipeline runs.
	if err := os.WriteFile(cfg, []byte(strings.Replace(endless, "rate: 2000", "rate: 3000", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	m := next(t, msgs, &pings, &stderr)
	expect(t, m, "RELOADING=1", "reloading "+cfg)
	if !strings.Contains(m, "\nMONOTONIC_USEC=") {
		t.Errorf("RELOADING=1 without MONOTONIC_USEC: %q", m)
	}
	expect(t, next(t, msgs, &pings, &stderr), "READY=1", "running "+cfg)

	// A refused reload ends too: READY=1, still on the previous configuration.
	if err := os.WriteFile(cfg, []byte("sources: {numbers: {type: generate, rate: soon}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	expect(t, next(t, msgs, &pings, &stderr), "RELOADING=1", "reloading")
	expect(t, next(t, msgs, &pings, &stderr), "READY=1", "reload refused")

	cmd.Process.Signal(syscall.SIGTERM)
	expect(t, next(t, msgs, &pings, &stderr), "STOPPING=1", "shutting down")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("weir exited with %v after SIGTERM, want 0; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("weir did not exit within 2m of SIGTERM; stderr:\n%s", stderr.String())
	}
	time.Sleep(100 * time.Millisecond) // let a datagram sent just before exit arrive
	for {
		select {
		case m := <-msgs:
			if m != "WATCHDOG=1" {
				t.Errorf("after STOPPING=1: notification %q, want none (or pings)", m)
			}
			continue
		default:
		}
		break
	}
}

// Guarantee: a run whose input ends by itself says READY=1 then STOPPING=1
// before it exits 0, so that systemd sees a unit that started and stopped,
// not one that died while starting; without WATCHDOG_USEC it never pings.
func TestNotifyFiniteRun(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "once.yaml")
	once := strings.Replace(strings.Replace(endless, "rate: 2000", "count: 200", 1), "partitions: 2", "partitions: 1", 1)
	if err := os.WriteFile(cfg, []byte(once), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, msgs := notifySocket(t)
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	var stderr weirtest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("weir: %v; stderr:\n%s", err, stderr.String())
	}
	time.Sleep(100 * time.Millisecond) // let the last datagram arrive
	var got []string
	for len(msgs) > 0 {
		got = append(got, <-msgs)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "READY=1\n") || !strings.HasPrefix(got[1], "STOPPING=1\n") || !strings.Contains(got[1], "the input is done") {
		t.Fatalf("notifications %q, want READY=1 then STOPPING=1 saying the input is done, and no ping", got)
	}
}
