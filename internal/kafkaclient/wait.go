package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The backoff between attempts to reach a broker at start: it doubles from
// the first to the last, so a broker that is back is found within a few
// seconds while a long outage costs one log line every few seconds.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// WaitForBrokers returns nil once a broker of c answers cl. Until then it
// retries with backoff, logging every failed attempt to log at WARN (the
// brokers, the error, the time waited and the limit), for up to
// c.ConnectTimeout; then it returns an error that says so. An error no retry
// can fix (Refused, or a TLS certificate refused by either side) ends the wait
// at once, and so does ctx. who names the connector in errors ("source in").
func WaitForBrokers(ctx context.Context, cl *kgo.Client, c *Conn, who string, log *slog.Logger) error {
	w := waiter{ping: cl.Ping, clock: realClock{}, brokers: c.Brokers, limit: c.ConnectTimeout, who: who, log: log}
	return w.wait(ctx)
}

// clock is time as the waiter sees it; tests replace it.
type clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, and returns ctx's error then.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waiter is one wait for a broker at start.
type waiter struct {
	ping    func(context.Context) error
	clock   clock
	brokers []string
	limit   time.Duration
	who     string
	log     *slog.Logger
}

func (w *waiter) wait(ctx context.Context) error {
	start := w.clock.Now()
	deadline := start.Add(w.limit)
	backoff := firstBackoff
	var last error
	for attempt := 1; ; attempt++ {
		// One attempt may not outlive the limit: a broker that accepts
		// connections and never answers must not hold the start past it.
		actx, cancel := context.WithDeadline(ctx, deadline)
		err := w.ping(actx)
		cancel()
		waited := w.clock.Now().Sub(start)
		switch {
		case err == nil:
			if attempt > 1 {
				w.log.Info("kafka: a broker answered; starting", "brokers", w.brokers, "waited", waited.Round(time.Millisecond), "attempts", attempt)
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("kafka: %s: reaching brokers %v: %w", w.who, w.brokers, ctx.Err())
		case Refused(err) || tlsRefused(err):
			return fmt.Errorf("kafka: %s: reaching brokers %v: %w", w.who, w.brokers, Explain(err))
		case errors.Is(err, context.DeadlineExceeded) && last != nil:
			// The limit cut this attempt short; the attempts before it
			// say why no broker answered.
			err = last
		}
		last = err
		left := deadline.Sub(w.clock.Now())
		if left <= 0 {
			return fmt.Errorf("kafka: %s: no broker of %v answered within connect_timeout (%v), %d attempts; the last error: %w; check that the brokers are up and reachable from here, or raise connect_timeout",
				w.who, w.brokers, w.limit, attempt, Explain(err))
		}
		pause := min(backoff, left)
		w.log.Warn("kafka: no broker answers; retrying", "brokers", w.brokers, "err", Explain(err).Error(),
			"attempt", attempt, "waited", waited.Round(time.Millisecond), "retry_in", pause.Round(time.Millisecond), "connect_timeout", w.limit)
		if err := w.clock.Sleep(ctx, pause); err != nil {
			return fmt.Errorf("kafka: %s: reaching brokers %v: %w", w.who, w.brokers, err)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
