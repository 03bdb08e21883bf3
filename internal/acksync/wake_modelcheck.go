//go:build modelcheck

package acksync

import "github.com/weir-etl/weir/internal/modelcheck"

// Wake is a level-triggered wake-up signal from many producers to one consumer.
// Signal never blocks: it is a non-blocking send on a channel of capacity one, so
// a burst of signals while the consumer is busy collapses into a single token.
//
// Under the modelcheck tag the channel's one buffered slot is the token, and a
// model goroutine waits for it with Wait, which parks the goroutine in the
// scheduler instead of blocking on the channel: a goroutine blocked on a real
// channel would stall the whole exploration, and the scheduler could not tell
// a lost wake-up (the consumer parked forever) from a slow producer. Outside an
// exploration Wake behaves exactly as in a normal build.
type Wake struct {
	ch      chan struct{}
	waiters modelcheck.WaitQueue // model goroutines parked in Wait
}

// NewWake returns a ready Wake.
func NewWake() *Wake { return &Wake{ch: make(chan struct{}, 1)} }

// Signal records that there is work. It never blocks. Sending and waking the
// parked consumer are one step, as the channel send that readies a blocked
// receiver is.
func (w *Wake) Signal() {
	modelcheck.Yield("Wake.Signal")
	select {
	case w.ch <- struct{}{}:
	default:
	}
	if modelcheck.Active() {
		w.waiters.Notify()
	}
}

// C returns the channel the consumer waits on. A model goroutine must use Wait
// instead: receiving from C would block outside the scheduler's control.
func (w *Wake) C() <-chan struct{} {
	if modelcheck.Active() {
		panic("acksync: Wake.C used inside a model; model goroutines wait with Wake.Wait")
	}
	return w.ch
}

// Wait takes the token, waiting for a Signal if there is none: a receive from
// C. Inside an exploration the wait parks the calling model goroutine until a
// Signal; taking the token is a scheduling point.
func (w *Wake) Wait() {
	if !modelcheck.Active() {
		<-w.ch
		return
	}
	for {
		modelcheck.Yield("Wake.Wait")
		select {
		case <-w.ch:
			return
		default:
		}
		w.waiters.Park("wake")
	}
}
