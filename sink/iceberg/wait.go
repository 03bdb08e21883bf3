package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The backoff between attempts to reach the catalog or the storage at
// start: it doubles from the first to the last, so a server that is back is
// found within a few seconds while a long outage costs one log line every
// few seconds.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// waiter waits at start for something the sink needs to answer, for up to
// limit, logging every failed attempt at WARN with what is unreachable and
// why; then it fails with the same words. An error no retry can fix (a bad
// password, a missing table) ends the wait at once, and so does ctx.
type waiter struct {
	log   *slog.Logger
	limit time.Duration
	sink  string
	now   func() time.Time                                 // nil: time.Now
	sleep func(ctx context.Context, d time.Duration) error // nil: a timer
}

func (w *waiter) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

func (w *waiter) pause(ctx context.Context, d time.Duration) error {
	if w.sleep != nil {
		return w.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait calls try until it returns nil or an error that is not retryable,
// or until the limit passes. what names the thing waited for ("sql catalog
// at postgres://db:5432/cat").
func (w *waiter) wait(ctx context.Context, what string, try func(context.Context) error) error {
	start := w.clock()
	deadline := start.Add(w.limit)
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithDeadline(ctx, deadline)
		err := try(actx)
		cancel()
		waited := w.clock().Sub(start)
		switch {
		case err == nil:
			if attempt > 1 {
				w.log.Info("iceberg: reached "+what+"; starting", "waited", waited.Round(time.Millisecond), "attempts", attempt)
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("sink/iceberg: sink %s: reaching %s: %w", w.sink, what, ctx.Err())
		case !retryable(err):
			var p *permanentError
			if errors.As(err, &p) {
				err = p.err
			}
			return fmt.Errorf("sink/iceberg: sink %s: %s: %w", w.sink, what, err)
		}
		left := deadline.Sub(w.clock())
		if left <= 0 {
			return fmt.Errorf("sink/iceberg: sink %s: %s did not answer within connect_timeout (%v), %d attempts; the last error: %w; check that it is up and reachable from here, or raise connect_timeout",
				w.sink, what, w.limit, attempt, err)
		}
		p := min(backoff, left)
		w.log.Warn("iceberg: "+what+" is unreachable; retrying", "err", err.Error(),
			"attempt", attempt, "waited", waited.Round(time.Millisecond), "retry_in", p.Round(time.Millisecond), "connect_timeout", w.limit)
		if err := w.pause(ctx, p); err != nil {
			return fmt.Errorf("sink/iceberg: sink %s: reaching %s: %w", w.sink, what, err)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
