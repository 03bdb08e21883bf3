package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"orders", "refunds", "metrics"}
	for _, c := range []struct{ in, want string }{
		{"order", "orders"},
		{"ORDERS", "orders"},
		{"metric", "metrics"},
		{"refnuds", "refunds"},
		{"payments", ""}, // too far from every name to be a typo
		{"", ""},
	} {
		if got := Closest(c.in, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
