// Package reach is the one rule every connector follows when its peer (a
// broker, a database server, a replication slot) cannot be reached at
// start, carried out in one place so that connectors cannot drift apart
// again (issue 25 found three behaviours: wait five minutes, exit at once,
// retry for ever):
//
//  1. try; on a failure that waiting can fix (a refused or timed-out
//     connection, a server starting up, a slot another consumer holds), log
//     a WARN that names what is unreachable and why, and try again with
//     backoff (250 ms doubling to 5 s);
//  2. give up after connect_timeout with an error that says the same (the
//     same problem, peer and cause, the time waited, the attempts, and what
//     to check): the run stops with exit code 3;
//  3. a failure no wait can fix (bad credentials, a missing database, a
//     refused certificate) ends the wait at once with its error.
//
// docs/connectors.md states the rule for connector authors.
package reach

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The backoff between attempts: it doubles from the first to the last, so a
// peer that is back is found within a few seconds, while a long outage costs
// a log line every few seconds.
const (
	FirstBackoff = 250 * time.Millisecond
	MaxBackoff   = 5 * time.Second
)

// DefaultTimeout is connect_timeout's default for every connector: long
// enough to ride out a restart or a rolling upgrade of the peer, short
// enough that a wrong address fails the run within minutes.
const DefaultTimeout = 5 * time.Minute

// Clock is time as Wait sees it; tests replace it.
type Clock interface {
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

// Target is one wait: what is tried, how its failures are told, and for how
// long.
type Target struct {
	// Pkg prefixes the error ("kafka", "sink/postgres", "pgcdc"); Who names
	// the connector ("source in", "sink db").
	Pkg, Who string
	// Problem is what is wrong, in words: "no broker answers", "the server
	// does not answer", "the replication slot is in use".
	Problem string
	// Peer names what is unreachable: "brokers [b1:9092]", "127.0.0.1:5432",
	// "slot weir_orders".
	Peer string
	// Fix says what to check, for the final error.
	Fix string
	// Reached is the INFO line's words once an attempt succeeds after
	// failures ("a broker answered"); empty means "reached PEER".
	Reached string
	// Limit is connect_timeout.
	Limit time.Duration
	Log   *slog.Logger
	// Attempt tries once. Its context ends at the limit.
	Attempt func(ctx context.Context) error
	// Fatal reports a failure no wait can fix; nil means none is.
	Fatal func(error) bool
	// Explain returns the error as the log and the final error tell it
	// (spelling out a code, naming a slot's holder); nil leaves it.
	Explain func(error) error
	// Clock is nil for real time.
	Clock Clock
}

// Wait runs the rule: it returns nil once an attempt succeeds, an attempt's
// explained error at once when it is Fatal or ctx ends, and otherwise, once
// Limit has passed, an error naming Problem, Peer, the last cause, the
// limit, the attempts and Fix, which wraps the last cause.
func Wait(ctx context.Context, t Target) error {
	clock := t.Clock
	if clock == nil {
		clock = realClock{}
	}
	log := t.Log
	if log == nil {
		log = slog.Default()
	}
	explain := t.Explain
	if explain == nil {
		explain = func(err error) error { return err }
	}
	start := clock.Now()
	deadline := start.Add(t.Limit)
	backoff := FirstBackoff
	var last error
	for attempt := 1; ; attempt++ {
		// One attempt may not outlive the limit: a peer that accepts
		// connections and never answers must not hold the start past it.
		actx, cancel := context.WithDeadline(ctx, deadline)
		err := t.Attempt(actx)
		cancel()
		waited := clock.Now().Sub(start)
		switch {
		case err == nil:
			if attempt > 1 {
				reached := t.Reached
				if reached == "" {
					reached = "reached " + t.Peer
				}
				log.Info(t.Pkg+": "+reached+"; starting", "who", t.Who, "peer", t.Peer, "waited", waited.Round(time.Millisecond), "attempts", attempt)
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %s: reaching %s: %w", t.Pkg, t.Who, t.Peer, ctx.Err())
		case t.Fatal != nil && t.Fatal(err):
			return fmt.Errorf("%s: %s: reaching %s: %w", t.Pkg, t.Who, t.Peer, explain(err))
		case errors.Is(err, context.DeadlineExceeded) && last != nil:
			// The limit cut this attempt short; the attempts before it
			// say why the peer did not answer.
			err = last
		default:
			err = explain(err)
		}
		last = err
		left := deadline.Sub(clock.Now())
		if left <= 0 {
			return fmt.Errorf("%s: %s: %s (%s): %w; gave up after connect_timeout (%v), %d attempts: %s, or raise connect_timeout",
				t.Pkg, t.Who, t.Problem, t.Peer, err, t.Limit, attempt, t.Fix)
		}
		pause := min(backoff, left)
		log.Warn(t.Pkg+": "+t.Problem+"; retrying", "who", t.Who, "peer", t.Peer, "err", err.Error(),
			"attempt", attempt, "waited", waited.Round(time.Millisecond), "retry_in", pause.Round(time.Millisecond), "connect_timeout", t.Limit)
		if err := clock.Sleep(ctx, pause); err != nil {
			return fmt.Errorf("%s: %s: reaching %s: %w", t.Pkg, t.Who, t.Peer, err)
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}
