package pipeline

import (
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// Stall is one partition whose oldest unresolved batch has waited long.
type Stall struct {
	Source    string   `json:"source"`
	Partition string   `json:"partition"`
	Batch     string   `json:"batch"`
	AgeMillis int64    `json:"age_ms"`
	Status    string   `json:"status"`            // "pending", or the failure that blocks it
	HeldBy    []string `json:"held_by,omitempty"` // sinks whose current group holds references of it
	Note      string   `json:"note,omitempty"`
}

// stalls appends the oldest unresolved batch of every partition older than
// minAge. It reads the Checkpointer, so only the checkpointer goroutine calls
// it; /debug/stalls gets a snapshot.
func (s *sourceRunner) stalls(dst []Stall, states []checkpoint.PartitionState, minAge time.Duration) []Stall {
	now := s.rt.now()
	for _, ps := range states {
		id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}
		s.tableMu.Lock()
		bi, ok := s.table[id]
		s.tableMu.Unlock()
		if !ok && !ps.Blocked {
			continue // nothing unresolved in this partition
		}
		var age time.Duration
		if ok {
			age = now.Sub(bi.issued)
		}
		if ok && age < minAge {
			continue
		}
		st := Stall{Source: s.spec.Name, Partition: s.partName(ps.Partition), Batch: id.String(), AgeMillis: age.Milliseconds(), Status: "pending"}
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

// warnStalls refreshes the /debug/stalls snapshot and logs, once per batch,
// every partition stalled longer than StallWarning.
func (s *sourceRunner) warnStalls(cs *cpState) {
	cs.states = s.cp.States(cs.states[:0])
	list := s.stalls(nil, cs.states, 0)
	s.rt.setStalls(s.idx, list)
	for _, st := range list {
		if time.Duration(st.AgeMillis)*time.Millisecond < s.rt.g.spec.Checkpoint.StallWarning {
			continue
		}
		if cs.warned[st.Batch] {
			continue
		}
		cs.warned[st.Batch] = true
		s.log.Warn("partition stalled: its oldest batch is unresolved", "partition", st.Partition, "batch", st.Batch, "age", time.Duration(st.AgeMillis)*time.Millisecond, "status", st.Status, "held_by", st.HeldBy)
	}
	if len(cs.warned) > 4096 {
		clear(cs.warned)
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
