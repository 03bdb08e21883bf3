package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"1024", 1024}, {"0", 0}, {"64MiB", 64 << 20}, {"8MB", 8e6}, {"8mb", 8e6},
		{"1KiB", 1024}, {"1kb", 1000}, {"2GiB", 2 << 30}, {"1TiB", 1 << 40},
		{"10B", 10}, {"1.5KiB", 1536}, {" 4 MiB ", 4 << 20},
	}
	for _, c := range cases {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "MiB", "8XB", "-1", "1.5", "0.1B", "9999999TiB", "abc"} {
		if _, err := ParseSize(bad); err == nil || !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("ParseSize(%q): %v, want an error with the package prefix", bad, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"5s": 5 * time.Second, "100ms": 100 * time.Millisecond, "1h30m": 90 * time.Minute, "0": 0} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v", in, got, err)
		}
	}
	for in, msg := range map[string]string{"5": "has no unit", "-1s": "is negative", "soon": "is not a duration"} {
		if _, err := ParseDuration(in); err == nil || !strings.HasPrefix(err.Error(), "config: ") || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseDuration(%q): %v, want %q", in, err, msg)
		}
	}
}
