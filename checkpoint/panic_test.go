package checkpoint

import (
	"fmt"
	"strings"
	"testing"
)

// mustPanic runs f and fails t unless it panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want one containing %q", want)
			return
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Errorf("panic %q, want one containing %q", msg, want)
		}
	}()
	f()
}

// TestMisusePanics checks that every misuse of a reference that would corrupt
// the count, and so a watermark, is caught at once with a precise message
// rather than resolving a batch twice or too early.
func TestMisusePanics(t *testing.T) {
	newRef := func() (*Checkpointer, *AckIssuer, AckRef) {
		c := New()
		is := c.NewIssuer()
		is.Assign(0, 0)
		return c, is, is.Issue(0, 10)
	}
	tests := []struct {
		name string
		want string
		f    func()
	}{
		{"double Release", "Release of a zero or already released AckRef", func() {
			_, _, r := newRef()
			r.Release(Delivered)
			r.Release(Delivered)
		}},
		{"Release of a copy of a released reference", "released more times than it was cloned", func() {
			_, _, r := newRef()
			cp := r
			r.Release(Delivered)
			cp.Release(Delivered)
		}},
		{"Release of a zero reference", "Release of a zero or already released AckRef", func() {
			var r AckRef
			r.Release(Delivered)
		}},
		{"Release with an invalid status", "Release with invalid status 3", func() {
			_, _, r := newRef()
			r.Release(AckStatus(3))
		}},
		{"Clone after resolution", "already resolved", func() {
			_, _, r := newRef()
			cp := r
			r.Release(Failed)
			cp.Clone()
		}},
		{"Clone of a released reference", "Clone of a zero or released AckRef", func() {
			_, _, r := newRef()
			r.Release(Delivered)
			r.Clone()
		}},
		{"CloneN after resolution", "already resolved", func() {
			_, _, r := newRef()
			cp := r
			r.Release(Failed)
			cp.CloneN(3)
		}},
		{"CloneN of a released reference", "CloneN of a zero or released AckRef", func() {
			_, _, r := newRef()
			r.Release(Delivered)
			r.CloneN(2)
		}},
		{"CloneN of no references", "CloneN of 0 references", func() {
			_, _, r := newRef()
			r.CloneN(0)
		}},
		{"Batch of a released reference", "Batch of a zero or released AckRef", func() {
			_, _, r := newRef()
			r.Release(Delivered)
			r.Batch()
		}},
		{"release count below zero through an AckSet", "released more times than it was cloned", func() {
			_, _, r := newRef()
			cp := r
			var s AckSet
			s.Add(&r)
			cp.Release(Delivered)
			s.Ack()
		}},
		{"AckSet.Add of a released reference", "AckSet.Add of a zero or released AckRef", func() {
			_, _, r := newRef()
			var s AckSet
			s.Add(&r)
			s.Add(&r)
		}},
		{"AckSet.Fail with an invalid status", "AckSet.Fail with invalid status 9", func() {
			_, _, r := newRef()
			var s AckSet
			s.Add(&r)
			s.Fail(AckStatus(9))
		}},
		{"Issue on a partition never assigned", "Issue on partition 1, which is not assigned", func() {
			_, is, _ := newRef()
			is.Issue(1, 10)
		}},
		{"Issue on a partition beyond any assigned", "Issue on partition 70, which is not assigned", func() {
			_, is, _ := newRef()
			is.Issue(70, 10)
		}},
		{"Issue after Revoke", "Issue on partition 0, which is not assigned", func() {
			_, is, _ := newRef()
			is.Revoke(0)
			is.Issue(0, 20)
		}},
		{"Issue going backwards", "at position 9, before the previous batch's end 10", func() {
			_, is, _ := newRef()
			is.Issue(0, 9)
		}},
		{"Issue before the assigned start", "at position 4, before the previous batch's end 5", func() {
			c := New()
			is := c.NewIssuer()
			is.Assign(0, 5)
			is.Issue(0, 4)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { mustPanic(t, tc.want, tc.f) })
	}
}

// TestMisuseLeavesBatchResolvedOnce checks that a caught double release does
// not also queue the batch a second time.
func TestMisuseLeavesBatchResolvedOnce(t *testing.T) {
	c := New()
	is := c.NewIssuer()
	is.Assign(0, 0)
	r := is.Issue(0, 10)
	cp := r
	r.Release(Delivered)
	mustPanic(t, "released more times", func() { cp.Release(Delivered) })
	st := c.Drain()
	if st.Messages != 1 || st.Outcome(Advanced) != 1 {
		t.Fatalf("Drain = %+v, want exactly one resolution", st)
	}
}
