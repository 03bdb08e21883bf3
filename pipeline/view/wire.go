package view

import "time"

// StatusVersion is the version of the Status document, also its "version"
// field. It changes only when a field changes meaning or goes away; new
// fields may be added within a version.
const StatusVersion = 1

// Limits of the partitions a status read lists per source.
const (
	DefaultStatusPartitions = 100
	MaxStatusPartitions     = 10000
)

// Status is the body of GET /api/v1/status (docs/status.md).
type Status struct {
	Version    int       `json:"version"` // StatusVersion
	ServerTime time.Time `json:"server_time"`
	Started    time.Time `json:"started"`
	// State is "starting" (a source is still opening), "running",
	// "stopping" (shutting down: a signal, the end of input, or a failure)
	// or "stopped" (Run returned; only an embedder's mux still answers).
	State string `json:"state"`
	// Error is why the run stops or stopped, when a failure stops it.
	Error string `json:"error,omitempty"`
	// Ready and Reasons are what /readyz answers.
	Ready   bool     `json:"ready"`
	Reasons []Reason `json:"reasons,omitempty"`
	// StallWarningMillis is checkpoint.stall_warning: a partition or a sink
	// failing that long counts as stalled or failing.
	StallWarningMillis int64 `json:"stall_warning_ms"`
	// Nodes are every source, transform and sink, in the order of the
	// pipeline file; Edges connect them.
	Nodes   []StatusNode   `json:"nodes"`
	Edges   []StatusEdge   `json:"edges"`
	Sources []SourceStatus `json:"sources"`
	Events  []Event        `json:"events"` // newest first, at most 100
}

// StatusNode is one component of the pipeline and what goes through it.
type StatusNode struct {
	Name string `json:"name"` // unique across sources, transforms and sinks
	Kind string `json:"kind"` // "source", "transform" or "sink"
	// Type is a transform's kind (filter, map, flat_map, route), or a
	// source's or sink's registered type, the `type:` of the pipeline file
	// (file, kafka, postgres_cdc, http_server, blackhole, ...). A connector
	// built in Go without one is named by its Go package.
	Type       string   `json:"type"`
	Outputs    []string `json:"outputs,omitempty"`     // a route's outputs
	DeadLetter string   `json:"dead_letter,omitempty"` // a sink's dead letter sink
	// NoAcknowledgements is set for a sink that never holds the watermark.
	NoAcknowledgements bool `json:"no_acknowledgements,omitempty"`
	// ExactlyOnce is set for an exactly-once sink (a
	// connector.PositionKeeper); AlreadyHeld counts the records it already
	// held and was not given again.
	ExactlyOnce bool  `json:"exactly_once,omitempty"`
	AlreadyHeld int64 `json:"already_held,omitempty"`
	// In and Out are totals since the start: for a source both are the
	// records read; for a transform the records given to it and emitted;
	// for a sink the records it received and the records it made durable.
	// The rates are records per second over the last few seconds.
	In        int64   `json:"in"`
	Out       int64   `json:"out"`
	InPerSec  float64 `json:"in_per_sec"`
	OutPerSec float64 `json:"out_per_sec"`
	// Errors counts a sink's failed writes, flushes and persists before
	// retries, and a source's failed commits. Rejected counts the records a
	// transform or sink failed on for good.
	Errors   int64 `json:"errors"`
	Rejected int64 `json:"rejected"`
	// State is "ok"; for a source also "opening", "finished" or "stalled";
	// for a sink or a transform also "idle" (healthy, but moving nothing
	// while what it reads from waits on another component, named in
	// WaitingOn); for a sink, and a source whose commits fail, "retrying"
	// or "failing", and for a sink "given_up" (docs/status.md).
	State string `json:"state"`
	// Since is when the state other than ok began (a failure's first
	// attempt, the oldest stall).
	Since    *time.Time `json:"since,omitempty"`
	Failures int        `json:"consecutive_failures,omitempty"`
	Error    string     `json:"error,omitempty"` // the last error
	// StalledPartitions counts, for a sink, the partitions stalled for
	// stall_warning that it holds or that wait for it while it fails;
	// Holding names the first few.
	StalledPartitions int            `json:"stalled_partitions,omitempty"`
	Holding           []PartitionRef `json:"holding,omitempty"`
	// WaitingOn names, for a node in state "idle", the components its
	// input waits on.
	WaitingOn []string `json:"waiting_on,omitempty"`
}

// PartitionRef names a partition of a source.
type PartitionRef struct {
	Source    string `json:"source"`
	Partition string `json:"partition"`
}

// StatusEdge is a connection between two nodes.
type StatusEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Output is the route output the edge leaves from ("" for a source or a
	// plain transform).
	Output string `json:"output,omitempty"`
	// DeadLetter marks the edge from a sink to its dead letter sink.
	DeadLetter bool `json:"dead_letter,omitempty"`
}

// SourceStatus is one source's partitions: totals over all of them, and the
// worst few in full.
type SourceStatus struct {
	Name string `json:"name"`
	// AsOf is when the partitions were read from the source's checkpointer.
	AsOf            *time.Time `json:"as_of,omitempty"`
	PartitionCount  int        `json:"partition_count"`
	StalledCount    int        `json:"stalled_count"` // stalled for stall_warning or more
	InFlightBatches int64      `json:"in_flight_batches"`
	InFlightBytes   int64      `json:"in_flight_bytes"`
	// Lag is the sum of the partitions' lags where the source reports its
	// ends (connector.LagReporter); absent when it reports none.
	Lag *int64 `json:"lag,omitempty"`
	// Partitions are the worst partitions, at most the request's limit:
	// the longest stalled first (in whole seconds), then the largest lag,
	// then by name. PartitionsOmitted counts the others.
	Partitions        []PartitionStatus `json:"partitions"`
	PartitionsOmitted int               `json:"partitions_omitted"`
	// Failing is the failure the source is waiting out, for a source that
	// reports one.
	Failing *SourceFailure `json:"failing,omitempty"`
}

// PartitionStatus is one partition of a source.
type PartitionStatus struct {
	Name string `json:"name"`
	// Committed is the last position the source committed; Watermark the
	// position below which everything is delivered. Positions are in the
	// source's own unit.
	Committed int64 `json:"committed"`
	Watermark int64 `json:"watermark"`
	// InFlightBatches counts batches issued and not yet resolved.
	InFlightBatches int `json:"in_flight_batches"`
	// StallMillis is the watermark's age: how long it has not moved while
	// data was pending (0 when nothing waits). Stalled is set once it
	// reaches stall_warning.
	StallMillis int64 `json:"stall_ms"`
	Stalled     bool  `json:"stalled"`
	// Status is "ok", "pending", "failed", "rejected", "replaying" or
	// "revoking" (docs/status.md).
	Status  string `json:"status"`
	Batch   string `json:"batch,omitempty"` // the oldest unresolved batch
	Rewinds int    `json:"rewinds"`
	// End is where the source says the partition ends, and Lag the
	// distance from the committed position to it.
	End *int64 `json:"end,omitempty"`
	Lag *int64 `json:"lag,omitempty"`
	// HeldBy names the sinks whose current or sealed group holds the oldest
	// unresolved batch; FailingSinks the sinks the partition's records go
	// to that are failing now.
	HeldBy       []string      `json:"held_by,omitempty"`
	FailingSinks []SinkFailure `json:"failing_sinks,omitempty"`
	// Explanation says in words why the partition waits, for a partition
	// whose watermark has waited a second or more.
	Explanation string `json:"explanation,omitempty"`
}

// Readiness is the body of /readyz.
type Readiness struct {
	Ready   bool     `json:"ready"`
	Reasons []Reason `json:"reasons,omitempty"`
}

// Reason is one thing that keeps a pipeline from being ready.
type Reason struct {
	Kind      string `json:"kind"` // "stopping", "source", "partition" or "sink"
	Source    string `json:"source,omitempty"`
	Partition string `json:"partition,omitempty"`
	Sink      string `json:"sink,omitempty"`
	Message   string `json:"message"`
	ForMillis int64  `json:"for_ms,omitempty"`
}

// SinkFailure describes a sink that is failing, for /debug/stalls and
// /readyz.
type SinkFailure struct {
	Sink             string `json:"sink"`
	Error            string `json:"error"`
	Failures         int    `json:"consecutive_failures"`
	FailingForMillis int64  `json:"failing_for_ms"`
	GaveUp           bool   `json:"gave_up,omitempty"`
	// Waiting is a sink that has not failed but is in a call of its
	// connector that has not returned for stall_warning: Error says which,
	// and for how long.
	Waiting bool `json:"waiting,omitempty"`
}

// SourceFailure is a failure a source is waiting out.
type SourceFailure struct {
	Source           string    `json:"source"`
	Since            time.Time `json:"since"`
	FailingForMillis int64     `json:"failing_for_ms"`
	Attempts         int       `json:"attempts"`
	Error            string    `json:"error"`
}

// Stall is one entry of /debug/stalls: a partition whose watermark waits
// for an unresolved or failed batch, a source failing, or a checkpointer
// that waits.
type Stall struct {
	Source       string        `json:"source"`
	Partition    string        `json:"partition"`
	Batch        string        `json:"batch"`
	AgeMillis    int64         `json:"age_ms"`
	Rewinds      int           `json:"rewinds"`
	Status       string        `json:"status"`
	HeldBy       []string      `json:"held_by,omitempty"`
	FailingSinks []SinkFailure `json:"failing_sinks,omitempty"`
	Note         string        `json:"note,omitempty"`
}

// EventKind names what happened.
type EventKind string

// Event is one thing that happened to a run, as /api/v1/status lists it.
// Events of the same kind, component and message that come within a second
// of the first are merged into one: Count says how many, Partitions names the
// first few partitions involved.
type Event struct {
	Time       time.Time `json:"time"` // of the first occurrence
	Kind       EventKind `json:"kind"`
	Source     string    `json:"source,omitempty"`
	Sink       string    `json:"sink,omitempty"`
	Partitions []string  `json:"partitions,omitempty"`
	Count      int       `json:"count"`
	Message    string    `json:"message"`
}
