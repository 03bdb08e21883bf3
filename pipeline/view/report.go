package view

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weir-etl/weir/internal/words"
	"github.com/weir-etl/weir/transform"
)

// Report is what one run did: records read, transformed and written, the
// positions committed at the end, and where each sink's output is. The
// command line prints it when `weir run` ends; WithReport hands it to an
// embedder.
type Report struct {
	Elapsed    time.Duration
	Sources    []SourceReport
	Transforms []TransformReport
	Sinks      []SinkReport
}

// SourceReport is one source's part of a Report.
type SourceReport struct {
	Name string
	Read int64 // records polled (read again after a rewind or restart counts again)
	// Partitions is how many partitions the final commit round knew, and
	// Committed the sum of their committed positions (for a file source, the
	// bytes of input known safe; for Kafka, offsets).
	Partitions int
	Committed  int64
	// Skipped is the records the source passed over on purpose (see
	// connector.Host.Skip), by reason; Unread the bytes it will never read
	// (connector.Host.Unread), by reason. Both are nil when there were none.
	Skipped map[string]int64
	Unread  map[string]int64
	// Behind lists the partitions whose committed position stopped before
	// data that was read (a sink failing at the end, writes cut short by the
	// shutdown timeout): that data is read again next time.
	Behind []string
}

// committed says what the final commit held, for String: "committed 2
// partitions, positions summing to 118342", and when no position moved
// past a partition's start, that nothing was.
func (s SourceReport) committed() string {
	switch {
	case s.Partitions == 0:
		return "no partitions to commit"
	case s.Committed == 0:
		return "nothing committed past the start of " + words.Plural(s.Partitions, "partition")
	}
	return fmt.Sprintf("committed %s, positions summing to %d", words.Plural(s.Partitions, "partition"), s.Committed)
}

// UnreadBytes returns the bytes of input left unread by every source.
func (r *Report) UnreadBytes() int64 {
	var n int64
	for _, s := range r.Sources {
		for _, b := range s.Unread {
			n += b
		}
	}
	return n
}

// TransformReport is one transform's part of a Report.
type TransformReport struct {
	Name string
	Kind string // its registered type: filter, map, flat_map, route or another
	In   int64  // records given to it
	// Out is the records it emitted; for a route, the records that matched at
	// least one output.
	Out      int64
	Rejected int64 // records it failed on (then routed by the failure policy)
}

// Dropped returns the records a transform dropped on purpose (a filter's
// condition was false, no route output matched, a map called drop()), and
// -1 for a type that may emit several records for one (transform.Def's
// Expands), whose output count is not one per input.
func (t TransformReport) Dropped() int64 {
	if tt, ok := transform.Lookup(t.Kind); t.Kind == "transform" || ok && tt.Expands {
		return -1
	}
	return t.In - t.Out - t.Rejected
}

// SinkReport is one sink's part of a Report.
type SinkReport struct {
	Name    string
	Written int64 // records made durable by a successful Flush
	// Failed is the records whose write failed for good, or that could not
	// be written before the shutdown deadline; the failure policy decided
	// what became of them.
	Failed int64
	// Skipped is the replayed records the sink already held durably and
	// was not given again (see docs/runtime.md, per-sink progress).
	Skipped int64
	// ExactlyOnce is set for an exactly-once sink (a connector.PositionKeeper
	// with acknowledgements on): Skipped is then what its stored positions
	// held already.
	ExactlyOnce bool
	// Failing is the sink's last error when it was failing at the end, ""
	// otherwise.
	Failing string
	// Output is the sink's own line from connector.Describer, or "".
	Output string
}

// String formats the report as `weir run` prints it when it ends, one line
// per component:
//
//	run summary (1.2s):
//	  source  orders       1000 records read, 3 skipped (bad record), 512 bytes unread (files gone)  committed 2 partitions, positions summing to 118342
//	  filter  paid         1000 in        373 out, 627 dropped
//	  sink    paid_orders  373 written    ./out/paid: 2 chunks, 373 records
//
// A source's skipped records and unread bytes appear when there are any, by
// reason: nothing a source passed over goes unsaid.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run summary (%s):\n", r.Elapsed.Round(time.Millisecond))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, s := range r.Sources {
		read := words.Plural(s.Read, "record") + " read"
		if n := total(s.Skipped); n > 0 {
			read += fmt.Sprintf(", %d skipped (%s)", n, reasons(s.Skipped))
		}
		if n := total(s.Unread); n > 0 {
			read += fmt.Sprintf(", %s unread (%s)", words.Plural(n, "byte"), reasons(s.Unread))
		}
		if n := len(s.Behind); n > 0 {
			read += fmt.Sprintf(", %s left behind what was read (read again next time)", words.Plural(n, "partition"))
		}
		fmt.Fprintf(tw, "  source\t%s\t%s\t%s\n", s.Name, read, s.committed())
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
		if s.ExactlyOnce {
			parts = append(parts, fmt.Sprintf("exactly once, %d already held, not written again", s.Skipped))
		} else if s.Skipped > 0 {
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
