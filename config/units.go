package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in Go syntax in a pipeline file:
// 5s, 100ms, 1h30m. Zero may be written 0; negative durations are rejected.
// Connector configuration structs use it for their own options.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses a duration scalar.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("config: must be a duration, like 5s or 100ms")
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses s as a non-negative Go duration, with an error that
// says how to write one.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		if _, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil && s != "0" {
			return 0, fmt.Errorf("config: %q has no unit: write it like 5s, 100ms or 1m", s)
		}
		return 0, fmt.Errorf("config: %q is not a duration: write it like 5s, 100ms or 1h30m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("config: %q is negative: a duration must be 0 or more", s)
	}
	return d, nil
}

// Size is a number of bytes in a pipeline file: 1024, 64KiB, 8MiB, 8MB, 1GiB.
// KB, MB, GB and TB are powers of 1000; KiB, MiB, GiB and TiB powers of 1024;
// units are case-insensitive and B alone means bytes. Connector configuration
// structs use it for their own options.
type Size int64

// UnmarshalYAML parses a size scalar.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("config: must be a size, like 8MiB or 1024")
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first, so that "kib" is not read as "b".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// ParseSize parses a byte size such as 64MiB, 8MB or 1024.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	bad := fmt.Errorf("config: %q is not a size: write it like 64MiB, 8MB or 1024 (bytes)", s)
	if t == "" {
		return 0, bad
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("config: %q is negative: a size must be 0 or more", s)
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("config: %q is too large", s)
		}
		return n * mult, nil
	}
	// Fractions are allowed with a unit (1.5GiB) but must come to whole bytes.
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	if f < 0 {
		return 0, fmt.Errorf("config: %q is negative: a size must be 0 or more", s)
	}
	b := f * float64(mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("config: %q is too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("config: %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}
