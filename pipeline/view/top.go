package view

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weir-etl/weir/internal/words"
)

// Top writes one screen of `weir top` from st, the status document it
// read: the run's state, every component with its rates, errors and state,
// the last errors, the stalled partitions and why they wait, and the last
// five events.
func Top(w io.Writer, st *Status) {
	ready := "ready"
	if !st.Ready {
		ready = "not ready"
	}
	fmt.Fprintf(w, "weir %s, %s, up %s, at %s\n", st.State, ready, st.ServerTime.Sub(st.Started).Round(time.Second), st.ServerTime.Local().Format(time.TimeOnly))
	if st.Error != "" {
		fmt.Fprintf(w, "stopping because: %s\n", st.Error)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "component\tkind\tin/s\tout/s\tout\terrors\tstate")
	for _, n := range st.Nodes {
		state := strings.ReplaceAll(n.State, "_", " ")
		if len(n.WaitingOn) > 0 {
			state += ": waiting on " + strings.Join(n.WaitingOn, ", ")
		}
		if n.Since != nil && n.State != "ok" {
			state += " since " + n.Since.Local().Format(time.TimeOnly)
		}
		kind := n.Kind
		if n.Type != "" {
			kind += " " + n.Type
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%d\t%d\t%s\n", n.Name, kind, n.InPerSec, n.OutPerSec, n.Out, n.Errors, state)
	}
	tw.Flush()
	for _, n := range st.Nodes {
		if n.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", n.Name, n.Error)
		}
	}
	for _, s := range st.Sources {
		fmt.Fprintf(w, "\n%s: %s, %d stalled, %s in flight", s.Name, words.Plural(s.PartitionCount, "partition"), s.StalledCount, words.Count(s.InFlightBatches, "batch", "batches"))
		if s.Lag != nil {
			fmt.Fprintf(w, ", lag %d", *s.Lag)
		}
		fmt.Fprintln(w)
		for _, p := range s.Partitions {
			if !p.Stalled {
				continue
			}
			fmt.Fprintf(w, "  %s  committed %d  watermark %d  stalled %s\n", p.Name, p.Committed, p.Watermark,
				(time.Duration(p.StallMillis) * time.Millisecond).Round(time.Second))
			if p.Explanation != "" {
				fmt.Fprintf(w, "    %s\n", p.Explanation)
			}
		}
	}
	if len(st.Events) > 0 {
		fmt.Fprintln(w, "\nrecent events:")
		for _, e := range st.Events[:min(len(st.Events), 5)] {
			where := strings.Join(append([]string{e.Source, e.Sink}, e.Partitions...), " ")
			fmt.Fprintf(w, "  %s  %s  %s  %s", e.Time.Local().Format(time.TimeOnly), e.Kind, strings.Join(strings.Fields(where), " "), e.Message)
			if e.Count > 1 {
				fmt.Fprintf(w, " (x%d)", e.Count)
			}
			fmt.Fprintln(w)
		}
	}
}
