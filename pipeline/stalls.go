package pipeline

import (
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// Stall is one partition whose watermark waits for an unresolved or failed
// batch.
type Stall struct {
	Source    string `json:"source"`
	Partition string `json:"partition"`
	Batch     string `json:"batch"` // the oldest unresolved batch
	// AgeMillis is the age of the watermark: how long it has not moved
	// while data was pending. Rewinds and new epochs do not reset it.
	AgeMillis int64    `json:"age_ms"`
	Rewinds   int      `json:"rewinds"`           // rewinds of the partition so far
	Status    string   `json:"status"`            // "pending", or the failure that blocks it
	HeldBy    []string `json:"held_by,omitempty"` // sinks whose current group, or a sealed group, holds references of it
	// FailingSinks are the sinks the partition's records go to that are
	// failing now: the error, how often and for how long.
	FailingSinks []SinkFailure `json:"failing_sinks,omitempty"`
	Note         string        `json:"note,omitempty"`
}

// stalls appends every partition whose watermark waits for a batch. It reads
// the Checkpointer and the policy, so only the checkpointer goroutine calls
// it; /debug/stalls gets a snapshot.
func (s *sourceRunner) stalls(dst []Stall, states []checkpoint.PartitionState) []Stall {
	now := s.rt.now()
	for _, ps := range states {
		if _, pending := s.pending(ps.Partition); !ps.Blocked && !pending {
			continue // nothing unresolved in this partition
		}
		id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}
		age, rewinds := s.pol.Stall(ps.Partition, now)
		st := Stall{Source: s.spec.Name, Partition: s.partName(ps.Partition), Batch: id.String(), AgeMillis: age.Milliseconds(), Rewinds: rewinds, Status: "pending"}
		if ps.Blocked {
			st.Status = ps.FailedStatus.String()
		}
		var held []checkpoint.BatchID
		for _, sk := range s.rt.sinks {
			held = sk.heldBatches(held[:0])
			for _, h := range held {
				if h == id {
					st.HeldBy = append(st.HeldBy, sk.spec.Name)
					break
				}
			}
		}
		for _, k := range s.reachable() {
			if f, failing := s.rt.sinks[k].health.failure(s.rt.sinks[k].spec.Name, now); failing {
				st.FailingSinks = append(st.FailingSinks, f)
			}
		}
		switch {
		case len(st.HeldBy) == 0 && len(st.FailingSinks) > 0:
			st.Note = "waiting for a failing sink: its records are replayed or retried until it recovers or gives up"
		case len(st.HeldBy) == 0:
			st.Note = "no sink's current group holds it: it is queued before a transform or sink"
		}
		dst = append(dst, st)
	}
	return dst
}

// refreshStalls refreshes the /debug/stalls snapshot and logs a warning for
// each partition in newly, whose stall just passed StallWarning (once per
// stall: the policy says when).
func (s *sourceRunner) refreshStalls(l *cpLoop, newly []checkpoint.Partition) {
	l.states = s.cp.States(l.states[:0])
	list := s.stalls(nil, l.states)
	s.rt.setStalls(s.idx, list)
	now := s.rt.now()
	for _, ps := range l.states {
		age, _ := s.pol.Stall(ps.Partition, now)
		s.rt.m.stalled.WithLabelValues(s.spec.Name, s.partName(ps.Partition)).Set(age.Seconds())
	}
	for _, p := range newly {
		name := s.partName(p)
		for _, st := range list {
			if st.Partition == name {
				args := []any{"partition", st.Partition, "batch", st.Batch,
					"age", time.Duration(st.AgeMillis) * time.Millisecond, "status", st.Status, "rewinds", st.Rewinds, "held_by", st.HeldBy}
				for _, f := range st.FailingSinks {
					args = append(args, "failing_sink", f.Sink, "sink_error", f.Error)
				}
				s.log.Warn("partition stalled: its watermark has not moved", args...)
			}
		}
	}
}

func (rt *runtime) setStalls(src int, list []Stall) {
	rt.stallMu.Lock()
	rt.stallBy[src] = list
	rt.stallMu.Unlock()
}

// Stalls returns the latest stall snapshot of every source.
func (rt *runtime) snapshotStalls() []Stall {
	rt.stallMu.Lock()
	defer rt.stallMu.Unlock()
	out := []Stall{}
	for _, l := range rt.stallBy {
		out = append(out, l...)
	}
	return out
}

// reachable returns the sinks that s's records can reach, through any
// transform, and their dead letter sinks. It is computed once.
func (s *sourceRunner) reachable() []int {
	if s.reach != nil {
		return s.reach
	}
	g := s.rt.g
	seen := make([]bool, len(g.transforms))
	reach := make([]bool, len(g.sinks))
	for _, t := range g.sourceOut[s.idx] {
		if t.sink {
			reach[t.idx] = true
		} else {
			g.downstream(t.idx, seen, reach)
		}
	}
	s.reach = []int{}
	for k, ok := range reach {
		if ok {
			s.reach = append(s.reach, k)
			if d := g.deadLetter[k]; d >= 0 && !reach[d] {
				s.reach = append(s.reach, d)
			}
		}
	}
	return s.reach
}
