package checkpoint

import "testing"

func TestSmokeFlow(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	r1 := is.Issue(0, 10)
	r2 := is.Issue(0, 20)
	a := r1.Clone()
	r1.Release(Delivered)
	r2.Release(Delivered)
	st := c.Drain()
	if got := c.Committable(nil); len(got) != 0 {
		t.Fatalf("committable before batch 0 resolved: %v %+v", got, st)
	}
	a.Release(Delivered)
	c.Drain()
	got := c.Committable(nil)
	if len(got) != 1 || got[0].Position != 20 {
		t.Fatalf("got %v", got)
	}
}
