package pipeline

import (
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/transform"
)

// Spec is a pipeline built in Go: instantiated components and the edges
// between them. The configuration loader (package config) compiles a YAML file
// into a Spec; tests and embedders build one directly.
type Spec struct {
	Sources    []SourceSpec
	Transforms []TransformSpec
	Sinks      []SinkSpec
	Checkpoint CheckpointSettings
	Metrics    MetricsSettings
}

// SourceSpec is one source and its in-flight limits.
type SourceSpec struct {
	Name   string
	Source connector.Source
	// MaxInFlightBatches and MaxInFlightBytes bound the batches issued but not
	// yet resolved; when either is reached polling pauses (backpressure).
	// Zero means the default.
	MaxInFlightBatches int
	MaxInFlightBytes   int64
}

// TransformSpec is one transform. Exactly one of Transform and Router is set.
// Inputs name sources, transforms, or route outputs ("route.output").
type TransformSpec struct {
	Name      string
	Inputs    []string
	Transform transform.Transform
	Router    transform.Router
}

// SinkSpec is one sink with its batching, retry and failure settings.
type SinkSpec struct {
	Name   string
	Inputs []string
	Sink   connector.Sink
	// NoAcknowledgements means the sink never holds back the watermark:
	// records are released as delivered when handed to it (stdout for
	// debugging). The zero value, acknowledgements on, is the safe one.
	NoAcknowledgements bool
	Batch            BatchSettings
	Retry            RetrySettings
	OnFailure        FailurePolicy
	// DeadLetter names the sink that receives failed records when OnFailure is
	// DeadLetter.
	DeadLetter string
}

// BatchSettings say when a sink's current group is flushed. Zero fields mean
// the defaults.
type BatchSettings struct {
	MaxRecords int
	MaxBytes   int64
	MaxAge     time.Duration
	// Linger, when positive, also flushes the current group once the sink's
	// input has been idle that long: its sources have caught up, and waiting
	// for MaxAge would only delay the last records. It is off by default (0),
	// because a trickling input would then be flushed in tiny groups (a file
	// per few records); see docs/runtime.md. A Linger not below MaxAge has no
	// effect.
	Linger time.Duration
	// Overlap is how many sealed groups may be waiting to become durable
	// while the next group is written, for a sink that implements
	// connector.Sealer (the file and Kafka sinks). Other sinks flush
	// synchronously and ignore it. Zero means the default,
	// DefaultBatchOverlap.
	Overlap int
}

// RetrySettings bound the retries of a failed write: exponential backoff with
// jitter from InitialBackoff up to MaxBackoff, at most MaxAttempts attempts and
// MaxElapsed in all, whichever comes first.
type RetrySettings struct {
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	MaxElapsed     time.Duration
}

// FailurePolicy is what a sink does with records whose write failed after
// retries.
type FailurePolicy uint8

const (
	// Rewind resolves the records as failed; the source seeks the partition
	// back to its watermark under a new epoch and replays.
	Rewind FailurePolicy = iota
	// DeadLetter sends the failed records, with the error and origin attached,
	// to the DeadLetter sink; they count as delivered once written there.
	DeadLetter
	// Halt stops the pipeline with an error naming the sink, partition and
	// batch; nothing past the failure is committed.
	Halt
)

// CheckpointSettings configure commits and shutdown.
type CheckpointSettings struct {
	CommitInterval  time.Duration // default 5s
	ShutdownTimeout time.Duration // default 30s: in-flight batches' time to finish on shutdown
	DrainTimeout    time.Duration // default 30s: a revoked partition's time to finish
	StallWarning    time.Duration // default 60s: log a stalled partition after this long
	// CommitFailureTimeout (default 5m) stops the run when Source.Commit has
	// failed for that long without a success (a full disk, an unreachable
	// broker): failed commits are retried with backoff meanwhile.
	CommitFailureTimeout time.Duration
}

// MetricsSettings configure the HTTP endpoint.
type MetricsSettings struct {
	// Address is where /metrics, /healthz, /readyz and /debug/stalls are
	// served. Empty (the zero value) or "off" serves nothing: a pipeline
	// embedded in a program opens no port unless asked to. The command
	// line's default is DefaultMetricsAddress.
	Address string
}
