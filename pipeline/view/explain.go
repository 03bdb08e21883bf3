package view

import (
	"fmt"
	"strings"
	"time"
)

// Explain says why p's watermark waits, in the words of /debug/stalls: age
// is how long it has, failing the sinks its records go to that fail now.
func Explain(p PartitionStatus, age time.Duration, failing []SinkFailure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The watermark has not moved for %s", roundDur(age))
	if p.Batch != "" {
		fmt.Fprintf(&b, ": it waits for batch %s", p.Batch)
	}
	switch p.Status {
	case "replaying":
		fmt.Fprintf(&b, ": it was rewound to position %d and its data is read again.", p.Watermark)
	case "failed":
		fmt.Fprintf(&b, ", which failed: the partition is replayed from position %d.", p.Watermark)
	case "rejected":
		b.WriteString(", which holds a rejected record: replay cannot fix it, the run halts.")
	default:
		b.WriteString(", not yet resolved.")
	}
	if len(p.HeldBy) > 0 {
		fmt.Fprintf(&b, " %s %s %s it in a group not yet durable.", plural(len(p.HeldBy), "Sink", "Sinks"), strings.Join(p.HeldBy, ", "), plural(len(p.HeldBy), "holds", "hold"))
	}
	for _, f := range failing {
		if f.GaveUp {
			fmt.Fprintf(&b, " Sink %s gave up after %d failures: %s.", f.Sink, f.Failures, f.Error)
			continue
		}
		if f.Waiting {
			fmt.Fprintf(&b, " Sink %s waits: %s.", f.Sink, f.Error)
			continue
		}
		fmt.Fprintf(&b, " Sink %s has been failing for %s (%d attempts): %s.", f.Sink, roundDur(time.Duration(f.FailingForMillis)*time.Millisecond), f.Failures, f.Error)
	}
	switch {
	case len(p.HeldBy) == 0 && len(failing) > 0:
		b.WriteString(" Its records are replayed or retried until the sink recovers or gives up.")
	case len(p.HeldBy) == 0:
		b.WriteString(" No sink's group holds it: it is queued before a transform or a sink.")
	}
	if p.Rewinds > 0 {
		fmt.Fprintf(&b, " Rewound %d %s so far.", p.Rewinds, plural(p.Rewinds, "time", "times"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// roundDur rounds d for reading: to the second from a second on.
func roundDur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
