package iceberg

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

// fakeClock moves only when the waiter sleeps.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return nil
}

func newTestWaiter(limit time.Duration) (*waiter, *bytes.Buffer) {
	var logs bytes.Buffer
	clk := &fakeClock{now: time.Unix(0, 0)}
	return &waiter{log: slog.New(slog.NewTextHandler(&logs, nil)), limit: limit, sink: "lake", now: clk.Now, sleep: clk.Sleep}, &logs
}

// An unreachable catalog is waited for up to connect_timeout, each failed
// attempt a WARN naming what and why; then the error says the same words.
func TestWaitWarnsThenFailsWithTheSameWords(t *testing.T) {
	w, logs := newTestWaiter(30 * time.Second)
	refused := fmt.Errorf("dial tcp 127.0.0.1:5: %w", syscall.ECONNREFUSED)
	attempts := 0
	err := w.wait(context.Background(), "sql catalog at postgres://db:5432/cat", func(context.Context) error {
		attempts++
		return refused
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, part := range []string{"sink/iceberg: sink lake:", "sql catalog at postgres://db:5432/cat", "did not answer within connect_timeout (30s)", "connection refused", "raise connect_timeout"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the error %q lacks %q", err, part)
		}
	}
	warns := strings.Count(logs.String(), "level=WARN")
	if warns != attempts-1 || warns < 5 {
		t.Errorf("%d WARN lines for %d attempts:\n%s", warns, attempts, logs.String())
	}
	for _, part := range []string{"sql catalog at postgres://db:5432/cat is unreachable", "connection refused", "retry_in=", "connect_timeout=30s"} {
		if !strings.Contains(logs.String(), part) {
			t.Errorf("the log lacks %q:\n%s", part, logs.String())
		}
	}
}

// A catalog back before the limit ends the wait with an INFO line.
func TestWaitEndsWhenTheCatalogAnswers(t *testing.T) {
	w, logs := newTestWaiter(30 * time.Second)
	n := 0
	err := w.wait(context.Background(), "rest catalog at http://cat", func(context.Context) error {
		if n++; n < 3 {
			return fmt.Errorf("dial: %w", syscall.ECONNREFUSED)
		}
		return nil
	})
	if err != nil || !strings.Contains(logs.String(), "reached rest catalog at http://cat") {
		t.Fatalf("err %v, log:\n%s", err, logs.String())
	}
}

// An error no retry can fix (a missing table, a bad password) ends the wait
// at once.
func TestWaitStopsAtAPermanentError(t *testing.T) {
	w, logs := newTestWaiter(30 * time.Second)
	n := 0
	err := w.wait(context.Background(), "sql catalog", func(context.Context) error {
		n++
		return permanent(errors.New("table db.t does not exist: create it, or set create_table: true"))
	})
	if n != 1 || err == nil || !strings.Contains(err.Error(), "create_table") || logs.Len() != 0 {
		t.Fatalf("%d attempts, err %v, log %q", n, err, logs.String())
	}
}
