package checkpoint

import "testing"

// TestIssueAllocatesBySlab checks that batch state comes in slabs: issuing
// and resolving slabSize batches allocates one slab pair and the cleanup that
// watches it for leaks (four allocations with Go 1.26), not state for each
// batch. The ack path's promise of no allocation per record rests on it, since
// a poll batch can be a single record. The bound leaves the runtime room to
// change what a cleanup costs; state per batch would be 64 or more.
func TestIssueAllocatesBySlab(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	c.Drain()
	pos := Position(0)
	allocs := testing.AllocsPerRun(20, func() {
		for range slabSize {
			pos++
			r := is.Issue(0, pos)
			r.Release(Delivered)
		}
		c.Drain()
	})
	if allocs > slabSize/8 {
		t.Errorf("issuing %d batches allocated %.0f times, want a few for one slab, at most %d", slabSize, allocs, slabSize/8)
	}
	t.Logf("%.0f allocations per %d batches", allocs, slabSize)
}
