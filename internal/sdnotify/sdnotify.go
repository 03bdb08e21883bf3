// Package sdnotify tells a service manager that speaks systemd's notify
// protocol (sd_notify(3)) where weir is in its life: started, reloading,
// stopping, and alive (the watchdog).
//
// weir run sends, from the one goroutine that handles its signals:
//
//	READY=1       once the pipeline runs (its endpoints listen and its sinks
//	              are open), and again once a reload has started the new
//	              configuration or refused an invalid one;
//	RELOADING=1   when a SIGHUP (or --watch) reload begins, with
//	              MONOTONIC_USEC as systemd asks;
//	STOPPING=1    at the first SIGINT/SIGTERM, or when a finite input is done;
//	WATCHDOG=1    every half of WATCHDOG_USEC, while that loop still answers.
//
// Each message carries a STATUS= line for systemctl status. Without
// NOTIFY_SOCKET (not under systemd, or Type= is not notify) every call is a
// no-op, so the command line calls it unconditionally.
package sdnotify

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends notifications to the socket NOTIFY_SOCKET names. The zero
// value and a nil *Notifier send nothing. Its methods may be called from any
// goroutine, but their order is the order systemd sees only when one
// goroutine calls them.
type Notifier struct {
	enabled  bool
	watchdog time.Duration // the ping interval; 0 when the watchdog is off
}

// FromEnv returns the Notifier the environment asks for: enabled when
// NOTIFY_SOCKET is set, with a watchdog when WATCHDOG_USEC is set (and
// WATCHDOG_PID, if set, is this process). The variables are left in place:
// the socket is dialled again for every message. A bad WATCHDOG_USEC is an
// error that names it; the Notifier returned with it still notifies, without
// a watchdog.
func FromEnv() (*Notifier, error) {
	n := &Notifier{enabled: os.Getenv("NOTIFY_SOCKET") != ""}
	if !n.enabled {
		return n, nil
	}
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return n, fmt.Errorf("sdnotify: WATCHDOG_USEC=%q: %w (systemd sets it from WatchdogSec=; a positive number of microseconds)", os.Getenv("WATCHDOG_USEC"), err)
	}
	// systemd's advice: ping at half the timeout, so that one late tick on a
	// busy machine is not taken for a hang.
	n.watchdog = every / 2
	return n, nil
}

// Enabled reports whether notifications are sent.
func (n *Notifier) Enabled() bool { return n != nil && n.enabled }

// WatchdogInterval is how often Watchdog should be called, or 0 when no
// watchdog is asked for.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog
}

// Ready says that weir runs (again), with status for systemctl status.
func (n *Notifier) Ready(status string) error {
	return n.send(daemon.SdNotifyReady, status)
}

// Reloading says that a reload began. systemd wants the monotonic clock's
// reading with it (MONOTONIC_USEC); Ready ends the reload.
func (n *Notifier) Reloading(status string) error {
	return n.send(daemon.SdNotifyReloading+"\n"+strings.TrimSuffix(daemon.SdNotifyMonotonicUsec(), "\n"), status)
}

// Stopping says that weir is shutting down.
func (n *Notifier) Stopping(status string) error {
	return n.send(daemon.SdNotifyStopping, status)
}

// Watchdog pings the watchdog.
func (n *Notifier) Watchdog() error {
	if n.WatchdogInterval() == 0 {
		return nil
	}
	return n.send(daemon.SdNotifyWatchdog, "")
}

// send writes one datagram: state, then STATUS=status when there is one.
// A status is one line: a newline in it would start another assignment.
func (n *Notifier) send(state, status string) error {
	if !n.Enabled() {
		return nil
	}
	state = strings.TrimSuffix(state, "\n")
	if status != "" {
		state += "\nSTATUS=" + strings.NewReplacer("\r", " ", "\n", " ").Replace(status)
	}
	sent, err := daemon.SdNotify(false, state)
	if err == nil && !sent {
		err = errNoSocket
	}
	if err != nil {
		first, _, _ := strings.Cut(state, "\n")
		return fmt.Errorf("sdnotify: sending %s: %w", first, err)
	}
	return nil
}

// errNoSocket: NOTIFY_SOCKET was unset after FromEnv saw it.
var errNoSocket = errors.New("NOTIFY_SOCKET is no longer set")
