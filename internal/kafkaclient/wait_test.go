package kafkaclient

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

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeClock is a clock whose Sleep advances Now at once and records the
// pause, so a wait of minutes runs in microseconds and its schedule can be
// checked exactly.
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

// pinger fails with errs in turn, then succeeds; each attempt costs cost of
// the fake clock's time.
type pinger struct {
	clock    *fakeClock
	errs     []error
	cost     time.Duration
	attempts int
}

func (p *pinger) ping(ctx context.Context) error {
	p.attempts++
	p.clock.now = p.clock.now.Add(p.cost)
	if dl, ok := ctx.Deadline(); ok && !p.clock.now.Before(dl) {
		return context.DeadlineExceeded
	}
	if len(p.errs) == 0 {
		return nil
	}
	err := p.errs[0]
	if len(p.errs) > 1 {
		p.errs = p.errs[1:]
	}
	return err
}

func newWaiter(limit time.Duration, errs ...error) (*waiter, *pinger, *bytes.Buffer) {
	c := &fakeClock{now: time.Unix(1_000_000, 0)}
	p := &pinger{clock: c, errs: errs}
	var log bytes.Buffer
	w := &waiter{ping: p.ping, clock: c, brokers: []string{"b1:9092"}, limit: limit, who: "source in",
		log: slog.New(slog.NewTextHandler(&log, nil))}
	return w, p, &log
}

var errRefusedDial = fmt.Errorf("dial tcp b1:9092: %w", syscall.ECONNREFUSED)

// A broker that answers after a few refused attempts: the wait backs off
// 250ms, 500ms, 1s, ... up to 5s, logs every failed attempt at WARN, and
// then returns nil, logging once that it starts.
func TestWaitBacksOffAndProceeds(t *testing.T) {
	fails := make([]error, 8)
	for i := range fails {
		fails[i] = errRefusedDial
	}
	w, p, log := newWaiter(time.Minute, fails...)
	p.errs = append(p.errs, nil) // the ninth attempt succeeds
	if err := w.wait(context.Background()); err != nil {
		t.Fatalf("wait = %v, want nil once a broker answers", err)
	}
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		4 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second}
	if fmt.Sprint(w.clock.(*fakeClock).sleeps) != fmt.Sprint(want) {
		t.Errorf("pauses %v, want %v", w.clock.(*fakeClock).sleeps, want)
	}
	if p.attempts != 9 {
		t.Errorf("%d attempts, want 9", p.attempts)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 9 {
		t.Fatalf("log has %d lines, want 8 warnings and one start:\n%s", len(lines), log)
	}
	for _, l := range lines[:8] {
		for _, part := range []string{"level=WARN", "b1:9092", "connection refused", "retry_in=", "waited=", "connect_timeout=1m0s"} {
			if !strings.Contains(l, part) {
				t.Errorf("warning %q lacks %q", l, part)
			}
		}
	}
	if !strings.Contains(lines[8], "level=INFO") || !strings.Contains(lines[8], "attempts=9") {
		t.Errorf("last line %q, want the INFO that a broker answered", lines[8])
	}
}

// A broker that never answers: the wait ends at connect_timeout with an
// error naming the brokers, the limit, the attempts and the last real error
// (not the deadline that cut the final attempt short).
func TestWaitGivesUpAtLimit(t *testing.T) {
	w, p, _ := newWaiter(30*time.Second, errRefusedDial)
	p.cost = 100 * time.Millisecond
	err := w.wait(context.Background())
	if err == nil {
		t.Fatal("wait = nil with no broker answering")
	}
	msg := err.Error()
	for _, part := range []string{"kafka: source in:", "[b1:9092]", "connect_timeout (30s)", "connection refused", "raise connect_timeout"} {
		if !strings.Contains(msg, part) {
			t.Errorf("error %q lacks %q", msg, part)
		}
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not wrap the last attempt's error", err)
	}
	if waited := w.clock.Now().Sub(time.Unix(1_000_000, 0)); waited < 30*time.Second || waited > 31*time.Second {
		t.Errorf("gave up after %v, want the limit of 30s", waited)
	}
}

// Refusals that waiting cannot fix end the wait at the first attempt, with
// the Kafka error spelled out.
func TestWaitRefusedAtOnce(t *testing.T) {
	w, p, log := newWaiter(time.Hour, fmt.Errorf("sasl: %w", kerr.SaslAuthenticationFailed))
	err := w.wait(context.Background())
	if err == nil || !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wait = %v, want the authentication failure", err)
	}
	if !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED (58): ") {
		t.Errorf("error %q does not spell out the Kafka error", err)
	}
	if p.attempts != 1 || log.Len() != 0 {
		t.Errorf("%d attempts and log %q, want one attempt and no retry", p.attempts, log)
	}
}

// A cancelled context ends the wait, whatever the pings say.
func TestWaitCancelled(t *testing.T) {
	w, _, _ := newWaiter(time.Hour, errRefusedDial)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait = %v, want context.Canceled", err)
	}
}
