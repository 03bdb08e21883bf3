package s3client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The backoff between attempts to reach the server at start, and between a
// connector's retries at run time: it doubles from the first to the last,
// so a server that is back is found within seconds while a long outage
// costs one log line every few seconds.
const (
	FirstBackoff = 250 * time.Millisecond
	MaxBackoff   = 5 * time.Second
)

// Wait returns nil once the server answers a HeadBucket of c's bucket.
// Until then it retries with backoff, logging every failed attempt at WARN
// (the bucket and endpoint, the error, the time waited and the limit), for
// up to c.ConnectTimeout; then it returns an error that says so, in the same
// words. An answer no retry changes (Refused: bad credentials, a missing
// bucket) ends the wait at once, and so does ctx. who names the connector in
// errors ("sink lake").
func Wait(ctx context.Context, cl *s3.Client, c *Conn, who string, log *slog.Logger) error {
	head := func(ctx context.Context) error {
		_, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(c.Bucket)})
		return err
	}
	return wait(ctx, head, c, who, log, time.Now, sleep)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func wait(ctx context.Context, ping func(context.Context) error, c *Conn, who string, log *slog.Logger,
	now func() time.Time, sleep func(context.Context, time.Duration) error) error {
	start := now()
	deadline := start.Add(c.ConnectTimeout)
	backoff := FirstBackoff
	var last error
	for attempt := 1; ; attempt++ {
		// One attempt may not outlive the limit, nor request_timeout: a
		// server that accepts connections and never answers must not hold
		// the start past either.
		until := now().Add(c.RequestTimeout)
		if deadline.Before(until) {
			until = deadline
		}
		actx, cancel := context.WithDeadline(ctx, until)
		err := ping(actx)
		cancel()
		waited := now().Sub(start)
		switch {
		case err == nil:
			if attempt > 1 {
				log.Info("s3: the server answered; starting", "where", c.Where(), "waited", waited.Round(time.Millisecond), "attempts", attempt)
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("s3: %s: reaching %s: %w", who, c.Where(), ctx.Err())
		case Refused(err):
			return fmt.Errorf("s3: %s: %s: %w", who, c.Where(), Explain(err))
		case errors.Is(err, context.DeadlineExceeded) && last != nil:
			err = last // the limit cut this attempt short; the ones before say why
		}
		last = err
		left := deadline.Sub(now())
		if left <= 0 {
			return fmt.Errorf("s3: %s: %s did not answer within connect_timeout (%v), %d attempts; the last error: %w; check that the server is up and reachable from here, or raise connect_timeout",
				who, c.Where(), c.ConnectTimeout, attempt, Explain(err))
		}
		pause := min(backoff, left)
		log.Warn("s3: the server does not answer; retrying", "where", c.Where(), "err", Explain(err).Error(),
			"attempt", attempt, "waited", waited.Round(time.Millisecond), "retry_in", pause.Round(time.Millisecond), "connect_timeout", c.ConnectTimeout)
		if err := sleep(ctx, pause); err != nil {
			return fmt.Errorf("s3: %s: reaching %s: %w", who, c.Where(), err)
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// Timeout returns ctx bounded by c.RequestTimeout, for one request.
func (c *Conn) Timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.RequestTimeout)
}
