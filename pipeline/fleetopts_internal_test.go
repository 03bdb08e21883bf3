package pipeline

import (
	"context"
	"testing"
	"time"
)

// A Pause holds a poller until Resume, or until the poll context ends; a
// second Pause does not make a second channel (one Resume frees every
// waiter), and a Resume without a Pause is nothing.
func TestPauseHoldsUntilResume(t *testing.T) {
	var p Pause
	p.Resume()
	if p.Paused() || !p.wait(context.Background()) {
		t.Fatal("a fresh Pause holds")
	}
	p.Pause()
	p.Pause()
	if !p.Paused() {
		t.Fatal("not paused after Pause")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan bool, 2)
	go func() { ended <- p.wait(ctx) }()
	go func() { ended <- p.wait(context.Background()) }()
	select {
	case <-ended:
		t.Fatal("a paused wait returned")
	case <-time.After(50 * time.Millisecond): // nothing may arrive: the wait holds
	}
	cancel()
	if got := <-ended; got {
		t.Fatal("a wait whose context ended reported true")
	}
	p.Resume()
	if got := <-ended; !got || p.Paused() {
		t.Fatalf("after Resume: wait %v, paused %v; want true, false", got, p.Paused())
	}
}
