package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/source/kafka"
)

// syncBuffer is a log destination safe for the source's goroutines and the
// test's.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newDownSource builds a source for a broker address nothing listens on yet,
// with a Host that keeps its log.
func newDownSource(t *testing.T, addr string, connectTimeout time.Duration) (*kafka.Source, *kafkatest.Host, *syncBuffer) {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = []string{addr}
	cfg.Group = "g"
	cfg.Topics = []string{"t"}
	cfg.SessionTimeout = 6 * time.Second
	cfg.RebalanceTimeout = 10 * time.Second
	cfg.ConnectTimeout = connectTimeout
	src, err := kafka.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	var log syncBuffer
	h := kafkatest.NewHost()
	h.Source = src
	h.Log = slog.New(slog.NewTextHandler(&log, nil))
	return src, h, &log
}

// A member started while no broker answers waits: it retries with backoff,
// logging every attempt, and proceeds once the broker is up, here 20s later
// (a broker restart). It then reads and commits as usual.
func TestStartWhileBrokerDown(t *testing.T) {
	t.Parallel() // twenty seconds of waiting, beside the other tests
	ctx := testCtx(t)
	port := kafkatest.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	src, h, log := newDownSource(t, addr, time.Minute)
	opened := make(chan error, 1)
	go func() { opened <- src.Open(ctx, h) }()

	// The broker starts 20s after the member. This wait is the scenario,
	// not a synchronisation: the member must hold on for all of it.
	select {
	case err := <-opened:
		t.Fatalf("Open returned %v while no broker answered; log:\n%s", err, log)
	case <-time.After(20 * time.Second):
	}
	// Backoff from 250ms doubling to 5s: seven or eight attempts in 20s,
	// each failure logged with the broker, the wait and the next try.
	if n := log.count("kafka: no broker answers; retrying"); n < 5 || n > 12 {
		t.Errorf("%d retry warnings in 20s, want a backed-off handful; log:\n%s", n, log)
	}
	if n := log.count(addr); n == 0 || log.count("retry_in=") == 0 {
		t.Errorf("the retry warnings do not name the broker and the next try; log:\n%s", log)
	}

	c := kafkatest.FakeOn(t, port, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 5)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("Open once the broker is up: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("Open did not return once the broker was up; log:\n%s", log)
	}
	if log.count("kafka: a broker answered; starting") != 1 {
		t.Errorf("no line says the member proceeds; log:\n%s", log)
	}
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	wait := kafkatest.PollLoop(loopCtx, src, h)
	if err := h.WaitFor(ctx, "5 records", func() bool { return h.Count() == 5 }); err != nil {
		t.Fatal(err)
	}
	if err := h.CommitAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 1); got[0] != 5 {
		t.Errorf("committed %v, want 5", got)
	}
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// The wait has a limit: with no broker at all, Open fails at connect_timeout
// with an error naming the source, the brokers and the option to raise.
func TestStartGivesUpAtConnectTimeout(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	addr := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePort(t))
	src, h, log := newDownSource(t, addr, time.Second)
	err := src.Open(ctx, h)
	if err == nil {
		t.Fatal("Open succeeded with no broker")
	}
	for _, part := range []string{"kafka: source in:", addr, "connect_timeout (1s)", "raise connect_timeout"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Open error %q does not say %q", err, part)
		}
	}
	if log.count("level=WARN") == 0 {
		t.Errorf("no retry logged before giving up; log:\n%s", log)
	}
}
