package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/weir-etl/weir/connector"
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
	Kind string // filter, map, flat_map or route
	In   int64  // records given to it
	// Out is the records it emitted; for a route, the records that matched at
	// least one output.
	Out      int64
	Rejected int64 // records it failed on (then routed by the failure policy)
}

// Dropped returns the records a filter or route dropped on purpose (the
// condition was false, or no output matched), and -1 for other kinds, whose
// output count is not one per input.
func (t TransformReport) Dropped() int64 {
	if t.Kind != "filter" && t.Kind != "route" {
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
	// Failing is the sink's last error when it was failing at the end, ""
	// otherwise.
	Failing string
	// Output is the sink's own line from connector.Describer, or "".
	Output string
}

// WithReport calls f with the run's Report when Run is about to return, once
// every goroutine of the pipeline has stopped and the final commit is done,
// whether the run ended well or not. It is not called when the spec is
// invalid or the sinks could not be opened.
func WithReport(f func(*Report)) Option {
	return func(o *options) { o.report = f }
}

func kindOf(ts *compiledTransform) string {
	if ts.r != nil {
		return "route"
	}
	switch ts.t.(type) {
	case *transform.Filter:
		return "filter"
	case *transform.Map:
		return "map"
	case *transform.FlatMap:
		return "flat_map"
	}
	return "transform"
}

// report builds the Report. It runs after every pipeline goroutine has
// returned, so the counters they kept need no synchronisation beyond that.
func (rt *runtime) report(start time.Time) *Report {
	r := &Report{Elapsed: time.Since(start)}
	for _, s := range rt.sources {
		skipped, unread := s.skips.snapshot()
		r.Sources = append(r.Sources, SourceReport{Name: s.spec.Name, Read: s.read,
			Partitions: s.finalParts, Committed: s.finalPos, Skipped: skipped, Unread: unread, Behind: s.leftBehind})
	}
	for i := range rt.g.transforms {
		ct := &rt.g.transforms[i]
		c := &rt.trCounts[i]
		r.Transforms = append(r.Transforms, TransformReport{Name: ct.name, Kind: kindOf(ct),
			In: c.in.Load(), Out: c.out.Load(), Rejected: c.rej.Load()})
	}
	for _, s := range rt.sinks {
		sr := SinkReport{Name: s.spec.Name, Written: s.written.Load(), Failed: s.failed, Skipped: s.skipped.Load()}
		if f, failing := s.health.failure(s.spec.Name, rt.now()); failing {
			sr.Failing = f.Error
		}
		if d, ok := s.spec.Sink.(connector.Describer); ok {
			sr.Output = d.Describe()
		}
		r.Sinks = append(r.Sinks, sr)
	}
	return r
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

// skipCounts is what a source reported through Host.Skip and Host.Unread. It
// changes rarely (per skipped line, per file gone), so a mutex is enough.
type skipCounts struct {
	mu      sync.Mutex
	skipped map[string]int64 // records, by reason
	unread  map[string]int64 // bytes, by reason
}

func (c *skipCounts) add(m *map[string]int64, reason string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[reason] += n
}

func (c *skipCounts) snapshot() (skipped, unread map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.skipped), maps.Clone(c.unread)
}
