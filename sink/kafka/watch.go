package kafka

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/kafkaclient"
)

// maxQuietWait is the longest the sink waits for acknowledgements without a
// word: after it (or half of delivery_timeout, if that is shorter) the wait is
// logged, so that a broker outage is visible long before delivery_timeout
// fails the group.
const maxQuietWait = 5 * time.Second

// ackWatch says, once per outage, that the sink is waiting for the brokers:
// a wait for acknowledgements (Flush, Persist, Abort) or for buffer space
// (Write) that lasts longer than quiet is logged at WARN, with the broker
// that last failed and how long the wait has lasted. The next wait that ends
// with every acknowledgement in logs that they arrive again, at INFO, and
// re-arms the warning.
//
// It is also the client's hook for broker failures (kgo.HookBrokerConnect,
// HookBrokerWrite, HookBrokerRead), which the client calls from its own
// goroutines; every field is safe for concurrent use.
type ackWatch struct {
	name    string
	brokers []string
	quiet   time.Duration
	log     *slog.Logger

	warned  atomic.Bool
	lastErr atomic.Pointer[brokerErr] // the last failure talking to a broker
}

// brokerErr is one failure talking to a broker.
type brokerErr struct {
	addr string
	err  error
	at   time.Time
}

func newAckWatch(name string, brokers []string, deliveryTimeout time.Duration, log *slog.Logger) *ackWatch {
	return &ackWatch{name: name, brokers: brokers, quiet: min(maxQuietWait, deliveryTimeout/2), log: log}
}

// start begins watching one wait, what ("acknowledgements", "buffer space"),
// and returns the function that ends it: done(true) when the wait ended with
// everything acknowledged, done(false) otherwise. The watch costs one timer.
func (w *ackWatch) start(what string) (done func(ok bool)) {
	begin := time.Now()
	t := time.AfterFunc(w.quiet, func() { w.slow(what, begin) })
	return func(ok bool) {
		t.Stop()
		if ok && w.warned.CompareAndSwap(true, false) {
			w.log.Info("kafka: sink "+w.name+": the brokers acknowledge records again", "waited", time.Since(begin).Round(time.Millisecond))
		}
	}
}

func (w *ackWatch) slow(what string, begin time.Time) {
	if !w.warned.CompareAndSwap(false, true) {
		return
	}
	waited := time.Since(begin).Round(time.Millisecond)
	args := []any{"waited", waited, "brokers", w.brokers}
	if e := w.lastErr.Load(); e != nil && !e.at.Before(begin.Add(-time.Minute)) {
		args = append(args, "broker", e.addr, "broker_error", kafkaclient.Explain(e.err).Error(),
			"broker_error_age", time.Since(e.at).Round(time.Millisecond))
	} else {
		args = append(args, "broker_error", "none seen: the brokers accept requests but do not answer them")
	}
	w.log.Warn(fmt.Sprintf("kafka: sink %s: waiting %v for %s from the brokers; the group fails if the wait reaches delivery_timeout", w.name, waited, what), args...)
}

func (w *ackWatch) failed(meta kgo.BrokerMetadata, err error) {
	if err == nil {
		return
	}
	addr := net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
	w.lastErr.Store(&brokerErr{addr: addr, err: err, at: time.Now()})
}

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (w *ackWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	w.failed(meta, err)
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (w *ackWatch) OnBrokerWrite(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	w.failed(meta, err)
}

// OnBrokerRead implements kgo.HookBrokerRead.
func (w *ackWatch) OnBrokerRead(meta kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	w.failed(meta, err)
}

var (
	_ kgo.HookBrokerConnect = (*ackWatch)(nil)
	_ kgo.HookBrokerWrite   = (*ackWatch)(nil)
	_ kgo.HookBrokerRead    = (*ackWatch)(nil)
)
