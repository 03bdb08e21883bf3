package view

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// holdingNames is how many stalled partitions a sink node names.
const holdingNames = 8

// Render is the Status document of m, listing at most limit partitions per
// source.
func Render(m *Model, limit int) *Status {
	st := &Status{Version: StatusVersion, ServerTime: m.At, Started: m.Started, State: m.State, Error: m.Error,
		Ready: m.Readiness.Ready, Reasons: slices.Clone(m.Readiness.Reasons), StallWarningMillis: m.StallWarning.Milliseconds(),
		Nodes: slices.Clone(m.Nodes), Edges: slices.Clone(m.Edges), Sources: []SourceStatus{}, Events: slices.Clone(m.Events)}
	if st.Nodes == nil {
		st.Nodes = []StatusNode{}
	}
	if st.Edges == nil {
		st.Edges = []StatusEdge{}
	}
	if st.Events == nil {
		st.Events = []Event{}
	}
	holding := map[string][]PartitionRef{} // by sink: the stalled partitions it holds
	for i := range m.Sources {
		src := &m.Sources[i]
		ss := sourceStatus(src, m.At, m.StallWarning, limit, holding)
		st.Sources = append(st.Sources, ss)
		sourceState(&st.Nodes[i], src, ss.StalledCount, m.At, m.StallWarning)
	}
	for i := range st.Nodes {
		n := &st.Nodes[i]
		if hs := holding[n.Name]; n.Kind == "sink" && len(hs) > 0 {
			n.StalledPartitions = len(hs)
			n.Holding = hs[:min(len(hs), holdingNames)]
		}
	}
	markIdle(st, m)
	return st
}

// sourceState sets the state of a source's node: stalled while a partition
// has been stalled for warn, retrying or failing while its commits fail or
// it waits out a failure, failing while a commit does not answer.
func sourceState(node *StatusNode, src *Source, stalled int, now time.Time, warn time.Duration) {
	if stalled > 0 && node.State == "ok" {
		node.State = "stalled"
		for _, p := range src.Partitions {
			if !p.StalledSince.IsZero() && now.Sub(p.StalledSince) >= warn && (node.Since == nil || p.StalledSince.Before(*node.Since)) {
				since := p.StalledSince
				node.Since = &since
			}
		}
	}
	failing := func(since time.Time, n int, err string) {
		node.State, node.Since, node.Failures, node.Error = "retrying", &since, n, err
		if now.Sub(since) >= warn {
			node.State = "failing"
		}
	}
	if src.CommitFailures > 0 {
		failing(src.CommitSince, src.CommitFailures, src.CommitError)
	} else if f := src.Failing; f != nil {
		failing(f.Since, f.Attempts, f.Error)
	}
	if src.Hung {
		since := src.HungSince
		node.State, node.Since, node.Error = "failing", &since, src.HungMessage
	}
}

// sourceStatus renders a source's partitions: totals, and the worst limit
// in full. It adds the stalled partitions to holding, by the sinks that
// hold them or that they wait for.
func sourceStatus(src *Source, now time.Time, warn time.Duration, limit int, holding map[string][]PartitionRef) SourceStatus {
	ss := SourceStatus{Name: src.Name, PartitionCount: len(src.Partitions), Partitions: []PartitionStatus{},
		InFlightBatches: src.InFlightBatches, InFlightBytes: src.InFlightBytes, Failing: src.Failing}
	if !src.AsOf.IsZero() {
		at := src.AsOf
		ss.AsOf = &at
	}
	type key struct {
		i     int
		stall time.Duration
		lag   int64
	}
	keys := make([]key, len(src.Partitions))
	var lagSum int64
	lagKnown := false
	for i := range src.Partitions {
		p := &src.Partitions[i]
		keys[i] = key{i: i, lag: -1, stall: p.Stall(now)}
		if l, ok := p.Lag(); ok {
			keys[i].lag, lagSum, lagKnown = l, lagSum+l, true
		}
		if keys[i].stall >= warn && keys[i].stall > 0 {
			ss.StalledCount++
			ref := PartitionRef{Source: src.Name, Partition: p.Name}
			for _, h := range p.HeldBy {
				holding[h] = append(holding[h], ref)
			}
			for _, f := range src.FailingSinks {
				if !slices.Contains(p.HeldBy, f.Sink) {
					holding[f.Sink] = append(holding[f.Sink], ref)
				}
			}
		}
	}
	if lagKnown {
		ss.Lag = &lagSum
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.stall/time.Second != b.stall/time.Second:
			return -cmp.Compare(a.stall, b.stall)
		case a.lag != b.lag:
			return -cmp.Compare(a.lag, b.lag)
		}
		return strings.Compare(src.Partitions[a.i].Name, src.Partitions[b.i].Name)
	})
	n := min(limit, len(keys))
	ss.PartitionsOmitted = len(keys) - n
	for _, k := range keys[:n] {
		ss.Partitions = append(ss.Partitions, partitionStatus(&src.Partitions[k.i], k.stall, warn, src.FailingSinks))
	}
	return ss
}

// partitionStatus renders one partition whose watermark has waited stall.
func partitionStatus(p *Partition, stall, warn time.Duration, failing []SinkFailure) PartitionStatus {
	ps := PartitionStatus{Name: p.Name, Committed: p.Committed, Watermark: p.Watermark, InFlightBatches: p.InFlight,
		StallMillis: stall.Milliseconds(), Stalled: stall > 0 && stall >= warn, Status: p.Status, Batch: p.Batch,
		Rewinds: p.Rewinds, HeldBy: slices.Clone(p.HeldBy)}
	if l, ok := p.Lag(); ok {
		e := *p.End
		ps.End, ps.Lag = &e, &l
	}
	if p.Status != "ok" && p.Status != "revoking" {
		ps.FailingSinks = slices.Clone(failing)
	}
	if stall >= time.Second && p.Status != "ok" {
		ps.Explanation = Explain(ps, stall, failing)
	}
	return ps
}

// markIdle marks "idle" the healthy sinks and transforms that move nothing
// (a sink writing 0/s, a transform given 0/s) because a source they read
// from stands still, and names what it waits on. A source stands still when
// it is at its in-flight limit, has a partition stalled, or fails itself; it
// waits on itself when it fails, otherwise on the sinks that hold its
// unresolved batches and the failing sinks its records go to. Dead letter
// edges do not count: a dead letter sink is idle by design.
func markIdle(st *Status, m *Model) {
	index := make(map[string]int, len(st.Nodes))
	for i, n := range st.Nodes {
		index[n.Name] = i
	}
	next := make([][]int, len(st.Nodes))
	for _, e := range st.Edges {
		if !e.DeadLetter {
			next[index[e.From]] = append(next[index[e.From]], index[e.To])
		}
	}
	waits := make([][]string, len(st.Nodes)) // by node: what it waits on
	for i := range m.Sources {
		on := waitsOn(&st.Nodes[i], &m.Sources[i])
		if len(on) == 0 {
			continue
		}
		// Everything downstream of the source waits on what it waits on.
		seen := make([]bool, len(st.Nodes))
		queue := slices.Clone(next[i])
		for len(queue) > 0 {
			k := queue[0]
			queue = queue[1:]
			if seen[k] {
				continue
			}
			seen[k] = true
			for _, name := range on {
				if !slices.Contains(waits[k], name) {
					waits[k] = append(waits[k], name)
				}
			}
			queue = append(queue, next[k]...)
		}
	}
	for k := range st.Nodes {
		n := &st.Nodes[k]
		moving := (n.Kind == "sink" && n.OutPerSec > 0) || (n.Kind == "transform" && n.InPerSec > 0)
		if n.State != "ok" || moving || n.Kind == "source" {
			continue
		}
		on := slices.DeleteFunc(waits[k], func(name string) bool { return name == n.Name })
		if len(on) > 0 {
			n.State, n.WaitingOn = "idle", on
		}
	}
}

// waitsOn names what a source standing still waits on (nil: it moves).
func waitsOn(node *StatusNode, src *Source) []string {
	var on []string
	switch {
	case node.State == "retrying" || node.State == "failing":
		on = []string{node.Name}
	case node.State == "stalled" || src.AtLimit:
		for _, p := range src.Partitions {
			for _, h := range p.HeldBy {
				if !slices.Contains(on, h) {
					on = append(on, h)
				}
			}
		}
		for _, f := range src.FailingSinks {
			if !slices.Contains(on, f.Sink) {
				on = append(on, f.Sink)
			}
		}
	}
	return on
}
