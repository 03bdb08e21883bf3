package postgres

import "testing"

// Once a sealed group fails, no group sealed after it commits, and a
// synchronous Flush waits, until Abort finds every sealed group returned.
func TestChain(t *testing.T) {
	var c chain
	if err := c.begin(1); err != nil {
		t.Fatal(err)
	}
	c.end(1, errEarlierFailed) // group 1 failed
	if err := c.begin(2); err == nil {
		t.Fatal("group 2 may commit after group 1 failed")
	}
	c.end(2, errEarlierFailed)
	if err := c.begin(3); err == nil {
		t.Fatal("group 3 may commit after group 1 failed")
	}
	c.abort(4) // group 4 sealed too, not returned: the failure stays
	if err := c.flushable(4); err == nil {
		t.Fatal("a Flush may commit while group 4 is out")
	}
	c.end(3, errEarlierFailed)
	c.end(4, errEarlierFailed)
	if err := c.flushable(4); err == nil {
		t.Fatal("a Flush may commit before Abort took the failure back")
	}
	c.abort(4)
	if err := c.flushable(4); err != nil {
		t.Fatalf("after Abort with every group back: %v", err)
	}
	if err := c.begin(5); err != nil {
		t.Fatalf("group 5, sealed after the recovery: %v", err)
	}
}
