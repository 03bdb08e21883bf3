package reach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeClock's Sleep advances Now at once and records the pause.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

var errBusy = errors.New("replication slot \"s\" is active for PID 42")

func target(c *fakeClock, log *bytes.Buffer, attempt func(context.Context) error) Target {
	return Target{Pkg: "pgcdc", Who: "source in", Problem: "the replication slot is in use", Peer: "slot s",
		Fix: "stop the other consumer", Limit: 20 * time.Second, Log: slog.New(slog.NewTextHandler(log, nil)),
		Attempt: attempt, Clock: c,
		Explain: func(err error) error { return fmt.Errorf("%w (held by PID 42, application_name other)", err) },
		Fatal:   func(err error) bool { return errors.Is(err, syscall.EACCES) }}
}

// The rule: every failed attempt is a WARN naming the problem, the peer and
// the cause (as Explain tells it); at the limit the error says the same
// words, with the time and attempts, and wraps the cause.
func TestWaitWarnsThenGivesUpInTheSameWords(t *testing.T) {
	c := &fakeClock{now: time.Unix(1e6, 0)}
	var log bytes.Buffer
	attempts := 0
	err := Wait(context.Background(), target(c, &log, func(context.Context) error { attempts++; return errBusy }))
	if err == nil || !errors.Is(err, errBusy) {
		t.Fatalf("Wait = %v, want the last cause wrapped", err)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if got := c.sleeps[:len(want)]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pauses %v, want %v first", c.sleeps, want)
	}
	if waited := c.now.Sub(time.Unix(1e6, 0)); waited != 20*time.Second {
		t.Errorf("gave up after %v, want the limit", waited)
	}
	words := []string{"the replication slot is in use", "slot s", "held by PID 42, application_name other"}
	for _, w := range append(words, "pgcdc: source in:", "connect_timeout (20s)", fmt.Sprintf("%d attempts", attempts), "stop the other consumer") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != attempts-1 {
		t.Errorf("%d warnings for %d attempts, want one per attempt but the last", len(lines), attempts)
	}
	for _, l := range lines {
		for _, w := range append(words, "level=WARN", "retry_in=", "connect_timeout=20s") {
			if !strings.Contains(l, w) {
				t.Errorf("warning %q does not say %q", l, w)
			}
		}
	}
}

// A peer that answers after some failures: nil, and one INFO line.
func TestWaitProceeds(t *testing.T) {
	c := &fakeClock{now: time.Unix(1e6, 0)}
	var log bytes.Buffer
	n := 0
	err := Wait(context.Background(), target(c, &log, func(context.Context) error {
		if n++; n < 4 {
			return errBusy
		}
		return nil
	}))
	if err != nil || n != 4 {
		t.Fatalf("Wait = %v after %d attempts, want nil after 4", err, n)
	}
	if !strings.Contains(log.String(), "level=INFO") || !strings.Contains(log.String(), "attempts=4") {
		t.Fatalf("no INFO line that it starts:\n%s", log.String())
	}
}

// A failure no wait can fix ends the wait at once; so does ctx.
func TestWaitFatalAndCancelled(t *testing.T) {
	c := &fakeClock{now: time.Unix(1e6, 0)}
	var log bytes.Buffer
	n := 0
	err := Wait(context.Background(), target(c, &log, func(context.Context) error { n++; return syscall.EACCES }))
	if !errors.Is(err, syscall.EACCES) || n != 1 || log.Len() != 0 {
		t.Fatalf("Wait = %v after %d attempts, log %q; want the fatal error at once", err, n, log.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Wait(ctx, target(c, &log, func(context.Context) error { return errBusy })); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// An attempt's context ends at the limit: an attempt that hangs cannot hold
// the start past connect_timeout, and the error then gives the cause of the
// attempts before it, not the deadline.
func TestAttemptBoundedByTheLimit(t *testing.T) {
	c := &fakeClock{now: time.Unix(1e6, 0)}
	var log bytes.Buffer
	n := 0
	tg := target(c, &log, func(ctx context.Context) error {
		if n++; n == 1 {
			return errBusy
		}
		dl, ok := ctx.Deadline()
		if !ok {
			t.Fatal("an attempt without a deadline")
		}
		c.now = dl // hangs until the limit
		return context.DeadlineExceeded
	})
	tg.Clock = c
	err := Wait(context.Background(), tg)
	if !errors.Is(err, errBusy) {
		t.Fatalf("Wait = %v, want the first attempt's cause", err)
	}
}
