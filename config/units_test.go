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

// An integer option named *_bytes, or tagged unit:"bytes", takes a size with
// any unit ParseSize takes, and reports what does not fit its type at its
// line.
func TestSizeOptions(t *testing.T) {
	doc := func(opts string) []byte {
		return []byte("sources:\n  in: { type: test_source, path: /x, " + opts + " }\nsinks:\n  out: { type: test_sink, inputs: [in] }\n")
	}
	spec, err := parse("p.yaml", doc("max_line_bytes: 200MiB, limit: 1.5GiB, read_buffer: 64KB, port: 80"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Sources[0].Source.(*testSource).cfg
	if c.MaxLineBytes != 200<<20 || c.Limit != 3<<29 || c.ReadBuffer != 64000 || c.Port != 80 {
		t.Errorf("decoded %+v", c)
	}
	for opts, want := range map[string]string{
		"max_line_bytes: 4GiB":           `p.yaml:2: sources.in.max_line_bytes: "4GiB" is too large for this option`,
		"max_line_bytes: lots":           `p.yaml:2: sources.in.max_line_bytes: "lots" is not a size`,
		"max_line_bytes: -1":             `p.yaml:2: sources.in.max_line_bytes: "-1" is negative`,
		"max_line_bytes: [1]":            `p.yaml:2: sources.in.max_line_bytes: must be a size, like 8MiB or 1024; got a list`,
		`max_line_bytes: "${SECRET}MiB"`: `"${SECRET}MiB" is not a size`,
		"port: 1KiB":                     `"1KiB" is not a whole number`, // not a size: its name says nothing of bytes
	} {
		_, err := parse("p.yaml", doc(opts), env(map[string]string{"SECRET": "hunter2"}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", opts, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows a secret: %v", opts, err)
		}
	}
}
