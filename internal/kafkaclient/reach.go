package kafkaclient

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Reach follows, from the client's own connection events, whether a client
// reaches its cluster: a client that cannot dial or read from any broker
// retries by itself and returns nothing, so without it a consumer whose
// brokers went away looks idle, not failing.
//
// The client is failing from its first failed dial or read after its last
// successful read, from any broker, until the next one. So one broker of
// several that is down while the others answer is not a failure of the
// client (the cluster moves its partitions' leadership to the others; the
// partitions that cannot move stall, and show as stalled); a cluster that
// answers nothing is. A healthy client reads at least every fetch max wait
// and heartbeat interval, so a failure clears within seconds of the brokers'
// return, and a lone failed read (a connection closed for idling) clears at
// the next response.
//
// Add it to a client with kgo.WithHooks(r). The hooks run on the client's
// goroutines once per connection or response, never per record; Failing may
// be called from any goroutine.
type Reach struct {
	st atomic.Pointer[reachFailure]
	// now is the clock (time.Now; a test's otherwise).
	now func() time.Time
}

// reachFailure is one state of a failing client, never changed once
// published; nil is a client that reaches its cluster.
type reachFailure struct {
	since time.Time
	n     int
	err   error
}

var (
	_ kgo.HookBrokerConnect = (*Reach)(nil)
	_ kgo.HookBrokerRead    = (*Reach)(nil)
)

// OnBrokerConnect notes a failed dial (a successful one proves nothing yet:
// a read must follow).
func (r *Reach) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		r.failed(err)
	}
}

// OnBrokerRead notes a response read, or a failed read.
func (r *Reach) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		r.failed(err)
		return
	}
	if r.st.Load() != nil {
		r.st.Store(nil)
	}
}

func (r *Reach) failed(err error) {
	now := time.Now
	if r.now != nil {
		now = r.now
	}
	t := now()
	for {
		old := r.st.Load()
		f := &reachFailure{since: t, n: 1, err: Explain(err)}
		if old != nil {
			f.since, f.n = old.since, old.n+1
		}
		if r.st.CompareAndSwap(old, f) {
			return
		}
	}
}

// Failing reports since when the client has reached no broker, how many
// dials and reads failed since, and the last error; a zero time when it
// reaches its cluster (pipeline.FailureReporter's shape).
func (r *Reach) Failing() (since time.Time, attempts int, err error) {
	f := r.st.Load()
	if f == nil {
		return time.Time{}, 0, nil
	}
	return f.since, f.n, f.err
}
