package sdnotify_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/sdnotify"
)

// listen makes a unixgram socket, points NOTIFY_SOCKET at it and returns a
// function that reads the next datagram. A socket path must be short (108
// bytes), so it lives in a directory of its own under the system's temp.
func listen(t *testing.T, abstract bool) func() string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	name := filepath.Join(dir, "notify")
	if abstract {
		name = "@weir-sdnotify-test-" + strconv.Itoa(os.Getpid())
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", name)
	return func() string {
		t.Helper()
		buf := make([]byte, 4096)
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("reading a notification: %v", err)
		}
		return string(buf[:n])
	}
}

func TestMessages(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		t.Run("abstract="+strconv.FormatBool(abstract), func(t *testing.T) {
			next := listen(t, abstract)
			t.Setenv("WATCHDOG_USEC", "4000000")
			n, err := sdnotify.FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			if !n.Enabled() || n.WatchdogInterval() != 2*time.Second {
				t.Fatalf("Enabled %v, WatchdogInterval %v; want true, 2s (half of WATCHDOG_USEC)", n.Enabled(), n.WatchdogInterval())
			}
			if err := n.Ready("running p.yaml"); err != nil {
				t.Fatal(err)
			}
			if got, want := next(), "READY=1\nSTATUS=running p.yaml"; got != want {
				t.Errorf("Ready sent %q, want %q", got, want)
			}
			if err := n.Reloading("reloading\nthe file"); err != nil {
				t.Fatal(err)
			}
			got := strings.Split(next(), "\n")
			if len(got) != 3 || got[0] != "RELOADING=1" || !strings.HasPrefix(got[1], "MONOTONIC_USEC=") || got[2] != "STATUS=reloading the file" {
				t.Errorf("Reloading sent %q, want RELOADING=1, MONOTONIC_USEC=..., and the status on one line", got)
			} else if us, err := strconv.ParseInt(strings.TrimPrefix(got[1], "MONOTONIC_USEC="), 10, 64); err != nil || us <= 0 {
				t.Errorf("MONOTONIC_USEC %q is not a positive number of microseconds", got[1])
			}
			if err := n.Watchdog(); err != nil {
				t.Fatal(err)
			}
			if got := next(); got != "WATCHDOG=1" {
				t.Errorf("Watchdog sent %q, want WATCHDOG=1", got)
			}
			if err := n.Stopping("stopping"); err != nil {
				t.Fatal(err)
			}
			if got, want := next(), "STOPPING=1\nSTATUS=stopping"; got != want {
				t.Errorf("Stopping sent %q, want %q", got, want)
			}
		})
	}
}

func TestWithoutSocketNothingIsSent(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "1000000")
	n, err := sdnotify.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if n.Enabled() || n.WatchdogInterval() != 0 {
		t.Errorf("without NOTIFY_SOCKET: Enabled %v, WatchdogInterval %v; want false, 0", n.Enabled(), n.WatchdogInterval())
	}
	for _, err := range []error{n.Ready("x"), n.Reloading("x"), n.Stopping("x"), n.Watchdog()} {
		if err != nil {
			t.Errorf("a call without a socket failed: %v", err)
		}
	}
	var none *sdnotify.Notifier
	if none.Enabled() || none.Ready("x") != nil {
		t.Error("a nil Notifier must be a no-op")
	}
}

func TestWatchdogEnvironment(t *testing.T) {
	listen(t, false)
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
		err       string
	}{
		{usec: "", want: 0},
		{usec: "3000000", want: 1500 * time.Millisecond},
		{usec: "3000000", pid: strconv.Itoa(os.Getpid()), want: 1500 * time.Millisecond},
		{usec: "3000000", pid: strconv.Itoa(os.Getpid() + 1), want: 0}, // another process's watchdog
		{usec: "soon", err: "WATCHDOG_USEC"},
		{usec: "-5", err: "WATCHDOG_USEC"},
	} {
		t.Setenv("WATCHDOG_USEC", tc.usec)
		t.Setenv("WATCHDOG_PID", tc.pid)
		n, err := sdnotify.FromEnv()
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("WATCHDOG_USEC=%q: error %v, want one naming %s", tc.usec, err, tc.err)
			}
			if !n.Enabled() || n.WatchdogInterval() != 0 {
				t.Errorf("WATCHDOG_USEC=%q: a bad watchdog must leave notifications on and the watchdog off", tc.usec)
			}
		case err != nil:
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v", tc.usec, tc.pid, err)
		case n.WatchdogInterval() != tc.want:
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: interval %v, want %v", tc.usec, tc.pid, n.WatchdogInterval(), tc.want)
		}
	}
}

func TestSocketGoneIsAnError(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent"))
	n, _ := sdnotify.FromEnv()
	err := n.Ready("x")
	if err == nil || !strings.Contains(err.Error(), "READY=1") {
		t.Errorf("a socket nobody listens on: error %v, want one naming READY=1", err)
	}
}
