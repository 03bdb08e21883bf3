package checkpoint

import "testing"

var allStatuses = []AckStatus{Delivered, Failed, Rejected}

// TestAckStatusMerge checks the worst-of lattice: a batch resolves with the worst
// status any of its records saw, whatever the order of the releases (Benthos kept
// the last error instead of the worst; weir must not).
func TestAckStatusMerge(t *testing.T) {
	tests := []struct {
		a, b, want AckStatus
	}{
		{Delivered, Delivered, Delivered},
		{Delivered, Failed, Failed},
		{Delivered, Rejected, Rejected},
		{Failed, Delivered, Failed},
		{Failed, Failed, Failed},
		{Failed, Rejected, Rejected},
		{Rejected, Delivered, Rejected},
		{Rejected, Failed, Rejected},
		{Rejected, Rejected, Rejected},
	}
	for _, tc := range tests {
		if got := tc.a.Merge(tc.b); got != tc.want {
			t.Errorf("%v.Merge(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	// Lattice laws, so that concurrent releases may merge in any order.
	for _, a := range allStatuses {
		if a.Merge(a) != a {
			t.Errorf("Merge not idempotent on %v", a)
		}
		if Delivered.Merge(a) != a {
			t.Errorf("Delivered is not the bottom: Delivered.Merge(%v) = %v", a, Delivered.Merge(a))
		}
		for _, b := range allStatuses {
			if a.Merge(b) != b.Merge(a) {
				t.Errorf("Merge not commutative on %v, %v", a, b)
			}
			for _, c := range allStatuses {
				if a.Merge(b).Merge(c) != a.Merge(b.Merge(c)) {
					t.Errorf("Merge not associative on %v, %v, %v", a, b, c)
				}
			}
		}
	}
}

func TestAckStatusStringValid(t *testing.T) {
	tests := []struct {
		s     AckStatus
		str   string
		valid bool
	}{
		{Delivered, "delivered", true},
		{Failed, "failed", true},
		{Rejected, "rejected", true},
		{3, "AckStatus(3)", false},
		{255, "AckStatus(255)", false},
	}
	for _, tc := range tests {
		if got := tc.s.String(); got != tc.str {
			t.Errorf("AckStatus(%d).String() = %q, want %q", uint8(tc.s), got, tc.str)
		}
		if got := tc.s.Valid(); got != tc.valid {
			t.Errorf("AckStatus(%d).Valid() = %v, want %v", uint8(tc.s), got, tc.valid)
		}
	}
}

// TestAckStatusMask checks the ack path's encoding: OR-ing the masks of any set
// of releases decodes to the worst of them, and Delivered needs no write.
func TestAckStatusMask(t *testing.T) {
	if Delivered.mask() != 0 {
		t.Fatalf("Delivered.mask() = %#x, want 0", Delivered.mask())
	}
	for set := 0; set < 1<<len(allStatuses); set++ {
		var m uint32
		want := Delivered
		for i, s := range allStatuses {
			if set&(1<<i) != 0 {
				m |= s.mask()
				want = want.Merge(s)
			}
		}
		if got := statusOfMask(m); got != want {
			t.Errorf("statusOfMask(%#x) = %v, want %v", m, got, want)
		}
	}
}

func TestResolveOutcomeString(t *testing.T) {
	want := map[ResolveOutcome]string{
		Advanced: "advanced", Buffered: "buffered", Blocked: "blocked", FailedBatch: "failed",
		Stale: "stale", Duplicate: "duplicate", Impossible: "impossible", 7: "ResolveOutcome(7)",
	}
	for o, s := range want {
		if got := o.String(); got != s {
			t.Errorf("ResolveOutcome(%d).String() = %q, want %q", uint8(o), got, s)
		}
	}
}

func TestBatchIDString(t *testing.T) {
	id := BatchId{Partition: 3, Epoch: 7, Seq: 42}
	if got := id.String(); got != "p3/e7/s42" {
		t.Errorf("String() = %q, want p3/e7/s42", got)
	}
}
