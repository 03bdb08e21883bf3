package view

import "time"

// Model is one reading of a running pipeline: what every view renders. The
// runtime builds a new one on request and publishes it; a published Model
// and everything it points to are never changed again.
type Model struct {
	// At is the runtime's clock when the model was built (a test's clock
	// in tests), Started when the run began on it.
	At, Started time.Time
	// State and Error are Status.State and Status.Error.
	State, Error string
	// StallWarning is checkpoint.stall_warning.
	StallWarning time.Duration
	// Readiness is what /readyz answers.
	Readiness Readiness
	// Nodes are every component in the order sources, transforms, sinks,
	// with their totals, rates and own state (a source's stall and a
	// sink's holding are derived by Render from Sources).
	Nodes []StatusNode
	Edges []StatusEdge
	// Sources are by source, in the order of the source nodes.
	Sources []Source
	// Stalls are the entries of /debug/stalls.
	Stalls []Stall
	// Events are the recent events, newest first.
	Events []Event
}

// Source is one source's partitions as its checkpointer last published
// them, and the facts about the source that say why it stands still.
type Source struct {
	Name string
	// AsOf is when the partitions were read (zero: not yet).
	AsOf                           time.Time
	InFlightBatches, InFlightBytes int64
	// AtLimit is set while the source has not read to its end and is at
	// its in-flight limit: it waits for its batches to resolve.
	AtLimit bool
	// Failing is the failure the source reports it waits out.
	Failing *SourceFailure
	// CommitFailures counts its consecutive failed commits, since
	// CommitSince, the last with CommitError.
	CommitFailures int
	CommitSince    time.Time
	CommitError    string
	// Hung is set when a commit has not answered for stall_warning:
	// HungSince is when it was called, HungMessage says so in words.
	Hung        bool
	HungSince   time.Time
	HungMessage string
	// FailingSinks are the sinks the source's records reach that are
	// failing now.
	FailingSinks []SinkFailure
	Partitions   []Partition
}

// Partition is one partition of a source.
type Partition struct {
	Name                 string
	Committed, Watermark int64
	InFlight             int
	// StalledSince is when the watermark last moved while data waits
	// (zero when nothing waits).
	StalledSince time.Time
	Rewinds      int
	Status       string // as PartitionStatus.Status
	Batch        string // the oldest unresolved batch, "" if none
	HeldBy       []string
	// End is where the source says the partition ends (nil: it does not).
	End *int64
}

// Lag is the distance from p's committed position to its end, and whether
// the end is known.
func (p *Partition) Lag() (int64, bool) {
	if p.End == nil {
		return 0, false
	}
	return max(*p.End-p.Committed, 0), true
}

// Stall is how long p's watermark has waited at now (0 when nothing waits).
func (p *Partition) Stall(now time.Time) time.Duration {
	if p.StalledSince.IsZero() {
		return 0
	}
	return now.Sub(p.StalledSince)
}

// Node returns the node named name, or nil.
func (m *Model) Node(name string) *StatusNode {
	for i := range m.Nodes {
		if m.Nodes[i].Name == name {
			return &m.Nodes[i]
		}
	}
	return nil
}
