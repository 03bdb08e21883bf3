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
	Note      string   `json:"note,omitempty"`
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
		age, rewinds := s.pol.stall(ps.Partition, now)
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
		if len(st.HeldBy) == 0 {
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
	for _, p := range newly {
		name := s.partName(p)
		for _, st := range list {
			if st.Partition == name {
				s.log.Warn("partition stalled: its watermark has not moved", "partition", st.Partition, "batch", st.Batch,
					"age", time.Duration(st.AgeMillis)*time.Millisecond, "status", st.Status, "rewinds", st.Rewinds, "held_by", st.HeldBy)
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
