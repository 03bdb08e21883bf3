package weirtest

import (
	"testing"
	"time"
)

func TestKillBound(t *testing.T) {
	ms := time.Millisecond
	floor, ceiling := 100*ms, 2000*ms
	for _, c := range []struct {
		name        string
		bound       time.Duration
		done        float64
		kills, need int
		want        time.Duration
	}{
		// 5 kills of 20 needed: the schedule is at 5/30 of the work.
		{"ahead of the schedule: six tenths", 1000 * ms, 0.2, 5, 20, 600 * ms},
		{"behind it: 15% more", 1000 * ms, 0.1, 5, 20, 1150 * ms},
		{"on it exactly counts as behind", 1000 * ms, 5.0 / 30, 5, 20, 1150 * ms},
		{"never below the floor", 120 * ms, 0.9, 5, 20, floor},
		{"never above the ceiling", 1900 * ms, 0, 5, 20, ceiling},
	} {
		if got := KillBound(c.bound, c.done, c.kills, c.need, floor, ceiling); got != c.want {
			t.Errorf("%s: KillBound(%v, %.3f, %d, %d) = %v, want %v", c.name, c.bound, c.done, c.kills, c.need, got, c.want)
		}
	}
}
