//go:build !modelcheck

package acksync

// Wake is a level-triggered wake-up signal from many producers to one consumer.
// Signal never blocks: it is a non-blocking send on a channel of capacity one, so
// a burst of signals while the consumer is busy collapses into a single token.
//
// The consumer must re-check its queue after every wake-up and before waiting
// again; producers must make their work visible before calling Signal. With that
// order no wake-up is lost: a token sent after the consumer's last check is still
// in the channel when it waits.
type Wake struct{ ch chan struct{} }

// NewWake returns a ready Wake.
func NewWake() *Wake { return &Wake{ch: make(chan struct{}, 1)} }

// Signal records that there is work. It never blocks.
func (w *Wake) Signal() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// C returns the channel the consumer waits on.
func (w *Wake) C() <-chan struct{} { return w.ch }
