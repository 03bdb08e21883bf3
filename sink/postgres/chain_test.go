package postgres

import "testing"

// Once a sealed group fails, no group sealed after it commits, until Abort.
func TestChain(t *testing.T) {
	var c chain
	if err := c.begin(1); err != nil {
		t.Fatal(err)
	}
	c.end(1, errEarlierFailed) // group 1 failed
	for _, seq := range []uint64{2, 3} {
		if err := c.begin(seq); err == nil {
			t.Fatalf("group %d may commit after group 1 failed", seq)
		}
		c.end(seq, errEarlierFailed)
	}
	c.abort()
	if err := c.begin(4); err != nil {
		t.Fatalf("group 4, sealed after the recovery: %v", err)
	}
}
