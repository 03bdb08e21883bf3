package kafkaclient

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/reach"
)

// WaitForBrokers returns nil once a broker of c answers cl, under the rule
// every connector follows at start (package reach): until then it retries
// with backoff, logging every failed attempt to log at WARN (the brokers,
// the error, the time waited and the limit), for up to c.ConnectTimeout;
// then it returns an error that says the same. An error no retry can fix
// (Refused, or a TLS certificate refused by either side) ends the wait at
// once, and so does ctx. who names the connector in errors ("source in").
func WaitForBrokers(ctx context.Context, cl *kgo.Client, c *Conn, who string, log *slog.Logger) error {
	w := waiter{ping: cl.Ping, brokers: c.Brokers, limit: c.ConnectTimeout, who: who, log: log}
	return w.wait(ctx)
}

// waiter is one wait for a broker at start.
type waiter struct {
	ping    func(context.Context) error
	clock   reach.Clock // nil: real time
	brokers []string
	limit   time.Duration
	who     string
	log     *slog.Logger
}

func (w *waiter) wait(ctx context.Context) error {
	return reach.Wait(ctx, reach.Target{
		Pkg: "kafka", Who: w.who, Problem: "no broker answers", Peer: fmt.Sprintf("brokers %v", w.brokers),
		Fix: "check that the brokers are up and reachable from here", Reached: "a broker answered",
		Limit: w.limit, Log: w.log, Attempt: w.ping, Clock: w.clock,
		Fatal:   func(err error) bool { return Refused(err) || reach.TLSRefused(err) },
		Explain: Explain,
	})
}
