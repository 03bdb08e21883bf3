package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/kafka"
)

// logBuffer is a concurrency-safe log destination a test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines(level string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, "level="+level) {
			out = append(out, l)
		}
	}
	return out
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// newLoggedSink builds a sink on brokers whose log goes to the returned
// buffer; it is not opened.
func newLoggedSink(t *testing.T, brokers []string, change func(*kafka.Config)) (*kafka.Sink, *logBuffer) {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Topic = "out"
	if change != nil {
		change(cfg)
	}
	s, err := kafka.New("out", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var log logBuffer
	kafka.SetLogger(s, log.logger())
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, &log
}

var waitedRE = regexp.MustCompile(`waited=([0-9.]+m?s)`)

// The sink speaks during a broker outage: when the broker goes away, the
// first wait for acknowledgements that lasts longer than the quiet period
// (half of delivery_timeout here, 5s at most) is logged once at WARN, naming
// the broker, its error and the wait, before delivery_timeout fails the
// group. A second wait in the same outage logs nothing more.
func TestOutageLoggedOnceBeforeDeliveryTimeout(t *testing.T) {
	t.Parallel() // most of it is waiting for timers
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "out", 1)
	addr := c.ListenAddrs()[0]
	const deliveryTimeout = time.Second
	s, log := newLoggedSink(t, c.ListenAddrs(), func(c *kafka.Config) { c.DeliveryTimeout = deliveryTimeout })
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []record.Record{rec("before", "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if w := log.lines("WARN"); len(w) != 0 {
		t.Fatalf("warnings while the broker answers: %v", w)
	}

	c.Close() // the outage
	if err := s.Write(ctx, []record.Record{rec("during", "")}); err != nil {
		t.Fatal(err)
	}
	g, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Persist(ctx); err == nil || !strings.Contains(err.Error(), "delivery_timeout") {
		t.Fatalf("Persist during the outage = %v, want a delivery_timeout error", err)
	}
	warns := log.lines("WARN")
	if len(warns) != 1 {
		t.Fatalf("%d warnings by the time delivery_timeout failed the group, want 1: %v", len(warns), warns)
	}
	for _, part := range []string{"sink out: waiting", "acknowledgements", "broker=" + addr, "broker_error=", "delivery_timeout"} {
		if !strings.Contains(warns[0], part) {
			t.Errorf("warning %q does not say %q", warns[0], part)
		}
	}
	m := waitedRE.FindStringSubmatch(warns[0])
	if m == nil {
		t.Fatalf("warning %q does not say how long it waited", warns[0])
	}
	if waited, err := time.ParseDuration(m[1]); err != nil || waited >= deliveryTimeout {
		t.Errorf("warned after %s, want before delivery_timeout (%v)", m[1], deliveryTimeout)
	}

	// Still down: the next wait does not warn again.
	// Abort waits for the client to fail what it buffers, up to
	// delivery_timeout too: a broker that does not answer must not hold the
	// sink until the pipeline stops.
	if err := s.Abort(ctx); err == nil || !strings.Contains(err.Error(), "delivery_timeout") {
		t.Fatalf("Abort with the broker down = %v, want an error at delivery_timeout", err)
	}
	if warns := log.lines("WARN"); len(warns) != 1 {
		t.Errorf("%d warnings after a second wait in the same outage, want still 1: %v", len(warns), warns)
	}
}

// A broker that takes produce requests and holds them: the wait is logged
// once, saying that no broker failed; when the acknowledgements come, an INFO
// line says so and the warning is armed again for the next stall.
func TestStallWarnedAgainAfterRecovery(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	c, ids := fakeTopics(ctx, t, "out")
	s, log := newLoggedSink(t, c.ListenAddrs(), func(c *kafka.Config) { c.DeliveryTimeout = 2 * time.Second })
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	stall := func(value string) {
		t.Helper()
		hold, release := releaser(t)
		arrived := holdProduce(c, ids, "out", hold)
		if err := s.Write(ctx, []record.Record{rec(value, "")}); err != nil {
			t.Fatal(err)
		}
		g, err := s.Seal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		persisted := make(chan error, 1)
		go func() { persisted <- g.Persist(ctx) }()
		wait(ctx, t, arrived, "the held produce")
		n := len(log.lines("WARN"))
		for len(log.lines("WARN")) == n {
			select {
			case err := <-persisted:
				t.Fatalf("Persist returned %v before the stall was logged", err)
			case <-ctx.Done():
				t.Fatal("the stall was never logged")
			case <-time.After(10 * time.Millisecond): // polling the sink's log
			}
		}
		release()
		if err := <-persisted; err != nil {
			t.Fatalf("Persist once the broker answers: %v", err)
		}
	}
	stall("first")
	warns := log.lines("WARN")
	if len(warns) != 1 || !strings.Contains(warns[0], "none seen") {
		t.Fatalf("warnings %v, want one saying no broker failed", warns)
	}
	if infos := log.lines("INFO"); len(infos) != 1 || !strings.Contains(infos[0], "acknowledge records again") {
		t.Fatalf("INFO lines %v, want one saying the acknowledgements arrive again", infos)
	}
	stall("second")
	if warns := log.lines("WARN"); len(warns) != 2 {
		t.Fatalf("warnings %v, want a second one for the second stall", warns)
	}
}

// A sink started while no broker answers waits, retrying and logging, and
// starts once a broker comes up on the configured address.
func TestSinkOpenWaitsForBroker(t *testing.T) {
	t.Parallel() // most of it is waiting for timers
	ctx := testCtx(t)
	port := kafkatest.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s, log := newLoggedSink(t, []string{addr}, nil)
	opened := make(chan error, 1)
	go func() { opened <- s.Open(ctx) }()
	// Two refused attempts logged, then the broker starts.
	for len(log.lines("WARN")) < 2 {
		select {
		case err := <-opened:
			t.Fatalf("Open returned %v with no broker up", err)
		case <-ctx.Done():
			t.Fatalf("no retry logged: %v", ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling the sink's log
		}
	}
	if w := log.lines("WARN")[0]; !strings.Contains(w, addr) || !strings.Contains(w, "retry_in=") {
		t.Errorf("retry warning %q does not name the broker and the next attempt", w)
	}
	kafkatest.FakeOn(t, port, "out", 1)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("Open once the broker is up: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Open did not return once the broker was up")
	}
	if err := s.Write(ctx, []record.Record{rec("v", "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// With no broker at all, Open gives up at connect_timeout with an error that
// names the sink, the brokers and the limit.
func TestSinkOpenGivesUpAtConnectTimeout(t *testing.T) {
	t.Parallel() // most of it is waiting for timers
	ctx := testCtx(t)
	addr := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePort(t))
	s, _ := newLoggedSink(t, []string{addr}, func(c *kafka.Config) { c.ConnectTimeout = time.Second })
	err := s.Open(ctx)
	if err == nil {
		t.Fatal("Open succeeded with no broker")
	}
	for _, part := range []string{"kafka: sink out:", addr, "connect_timeout (1s)"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Open error %q does not say %q", err, part)
		}
	}
}
