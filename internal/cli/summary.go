package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weir-etl/weir/pipeline"
)

// summary formats the report `weir run` prints when it ends, one line per
// component:
//
//	run summary (1.2s):
//	  source  orders       1000 records read, 3 skipped (bad record), 512 bytes unread (files gone)  committed 2 partitions, positions summing to 118342
//	  filter  paid         1000 in        373 out, 627 dropped
//	  sink    paid_orders  373 written    ./out/paid: 2 chunks, 373 records
//
// A source's skipped records and unread bytes appear when there are any, by
// reason: nothing a source passed over goes unsaid.
func summary(r *pipeline.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run summary (%s):\n", r.Elapsed.Round(time.Millisecond))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, s := range r.Sources {
		read := fmt.Sprintf("%d records read", s.Read)
		if n := total(s.Skipped); n > 0 {
			read += fmt.Sprintf(", %d skipped (%s)", n, reasons(s.Skipped))
		}
		if n := total(s.Unread); n > 0 {
			read += fmt.Sprintf(", %d bytes unread (%s)", n, reasons(s.Unread))
		}
		if n := len(s.Behind); n > 0 {
			read += fmt.Sprintf(", %d partitions left behind what was read (read again next time)", n)
		}
		fmt.Fprintf(tw, "  source\t%s\t%s\tcommitted %d partitions, positions summing to %d\n", s.Name, read, s.Partitions, s.Committed)
	}
	for _, t := range r.Transforms {
		fmt.Fprintf(tw, "  %s\t%s\t%d in\t%d out", t.Kind, t.Name, t.In, t.Out)
		if d := t.Dropped(); d >= 0 {
			fmt.Fprintf(tw, ", %d dropped", d)
		}
		if t.Rejected > 0 {
			fmt.Fprintf(tw, ", %d rejected", t.Rejected)
		}
		fmt.Fprintln(tw)
	}
	for _, s := range r.Sinks {
		fmt.Fprintf(tw, "  sink\t%s\t%d written\t", s.Name, s.Written)
		var parts []string
		if s.Failed > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", s.Failed))
		}
		if s.Skipped > 0 {
			parts = append(parts, fmt.Sprintf("%d already held, not written again", s.Skipped))
		}
		if s.Failing != "" {
			parts = append(parts, "failing at the end: "+s.Failing)
		}
		if s.Output != "" {
			parts = append(parts, s.Output)
		}
		fmt.Fprintln(tw, strings.Join(parts, "; "))
	}
	tw.Flush()
	return b.String()
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// reasons says why, in words: "bad record", or "2 bad record, 1 too long"
// when there are several reasons.
func reasons(m map[string]int64) string {
	keys := slices.Sorted(maps.Keys(m))
	words := func(k string) string { return strings.ReplaceAll(k, "_", " ") }
	if len(keys) == 1 {
		return words(keys[0])
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], words(k))
	}
	return strings.Join(parts, ", ")
}
