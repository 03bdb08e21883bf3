package pipeline

import (
	"strconv"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/transform"
)

// Spec is a pipeline built in Go: instantiated components and the edges
// between them. The configuration loader (package config) compiles a YAML file
// into a Spec; tests and embedders build one directly.
//
// Validate states the rules a Spec must follow, and Run refuses a Spec that
// breaks any. Zero settings mean their defaults (FillDefaults fills them in);
// the zero value of every field is a safe choice. The field docs give each
// setting's name in a pipeline file, which is how a Problem names it.
type Spec struct {
	// Name (name) names the pipeline among several in one process (weir
	// run -d DIR): letters, digits, '_' and '-'. Empty, the file's name
	// without its extension is used. The runtime itself does not use it.
	Name       string
	Sources    []SourceSpec
	Transforms []TransformSpec
	Sinks      []SinkSpec
	Checkpoint CheckpointSettings
	Metrics    MetricsSettings
}

// SourceSpec is one source and its in-flight limits.
type SourceSpec struct {
	// Name identifies the component in inputs, metrics and logs: letters,
	// digits, '_' and '-', unique across sources, transforms and sinks.
	Name string
	// Type is the source's registered type (connector.RegisterSource: the
	// `type:` of a pipeline file, postgres_cdc, kafka, ...), as the status
	// names it; empty for one built in Go, which is then named by its Go
	// package.
	Type   string
	Source connector.Source
	// MaxInFlightBatches and MaxInFlightBytes (max_in_flight_batches,
	// max_in_flight_bytes) bound the batches issued but not yet resolved;
	// when either is reached polling pauses (backpressure). Zero means the
	// default.
	MaxInFlightBatches int
	MaxInFlightBytes   int64
	// Settings are the connector's options as the configuration gave them
	// (the decoded config struct), or nil when unknown. A reload compares
	// them (SameSource) to hand a source whose settings did not change on
	// to the next run; nil is never equal to anything.
	Settings any
}

// TransformSpec is one transform. Exactly one of Transform and Router is set.
// Inputs (inputs) name sources, transforms, or route outputs ("route.output"),
// each once; a transform needs at least one, and must feed something: a
// record that reached a component with no consumer would be released as
// delivered and its position committed.
type TransformSpec struct {
	Name string
	// Type is the transform's registered type (transform.Register), as the
	// run summary and the status name it; empty for one built in Go, which
	// is named by its Go type in snake case (*transform.FlatMap: flat_map).
	Type      string
	Inputs    []string
	Transform transform.Transform
	Router    transform.Router
}

// SinkSpec is one sink with its batching, retry and failure settings.
type SinkSpec struct {
	Name string
	// Inputs (inputs) name sources, transforms or route outputs, each once.
	// Only a sink that is another sink's DeadLetter may have none.
	Inputs []string
	// Type is the sink's registered type (connector.RegisterSink), as the
	// status names it; empty for one built in Go, which is then named by its
	// Go package.
	Type string
	Sink connector.Sink
	// NoAcknowledgements means the sink never holds back the watermark:
	// records are released as delivered when handed to it (stdout for
	// debugging). The zero value, acknowledgements on, is the safe one.
	// In a pipeline file it is acknowledgements: false.
	NoAcknowledgements bool
	Batch              BatchSettings // batch
	Retry              RetrySettings // retry
	OnFailure          FailurePolicy // on_failure
	// DeadLetter (dead_letter) names the sink that receives failed records,
	// set when and only when OnFailure or OnGiveUp is DeadLetter. It names
	// another sink, which ends the chain: it does not send records to a dead
	// letter sink itself.
	DeadLetter string
	// GiveUpAfter (give_up_after) is how long a sink may fail without a single successful
	// flush before it stops retrying and rewinding and applies OnGiveUp:
	// a sink that fails for good (a full disk, a vanished directory) must
	// not loop for ever behind a healthy-looking process. Zero means the
	// default, DefaultGiveUpAfter; negative means never.
	GiveUpAfter time.Duration
	// OnGiveUp (on_give_up) is GiveUpHalt (the zero value: stop the run, exit code 3, naming
	// the sink and its error) or GiveUpDeadLetter (send what keeps failing to the
	// DeadLetter sink and go on).
	OnGiveUp GiveUpPolicy
}

// GiveUpPolicy is what a sink does once it has failed for GiveUpAfter.
type GiveUpPolicy uint8

const (
	// GiveUpHalt stops the run with a *HaltError.
	GiveUpHalt GiveUpPolicy = iota
	// GiveUpDeadLetter sends the failing records to the DeadLetter sink.
	GiveUpDeadLetter
)

// BatchSettings say when a sink's current group is flushed. Zero fields mean
// the defaults; negative ones are invalid.
type BatchSettings struct {
	MaxRecords int           // batch.max_records
	MaxBytes   int64         // batch.max_bytes
	MaxAge     time.Duration // batch.max_age
	// Linger (batch.linger), when positive, also flushes the current group
	// once the sink's input has been idle that long: its sources have caught
	// up, and waiting for MaxAge would only delay the last records. It is off
	// by default (0), because a trickling input would then be flushed in tiny
	// groups (a file per few records); see docs/runtime.md. It must be below
	// MaxAge, or it would have no effect.
	Linger time.Duration
	// Overlap (batch.overlap) is how many sealed groups may be waiting to become durable
	// while the next group is written, for a sink that implements
	// connector.Sealer (the file and Kafka sinks). Other sinks flush
	// synchronously and ignore it. Zero means the default,
	// DefaultBatchOverlap.
	Overlap int
	// AdaptRecords is set by FillDefaults when MaxRecords was left at zero:
	// the group size then follows the sink's pace from MaxRecords up (see
	// nextGroupTarget in linger.go).
	AdaptRecords bool
}

// RetrySettings bound the retries of a failed write: exponential backoff with
// jitter from InitialBackoff up to MaxBackoff, at most MaxAttempts attempts and
// MaxElapsed in all, whichever comes first. Zero fields mean the defaults;
// a default backoff never contradicts one that is set (see FillDefaults), but
// a MaxBackoff below the InitialBackoff is invalid.
type RetrySettings struct {
	MaxAttempts    int           // retry.max_attempts
	InitialBackoff time.Duration // retry.initial_backoff
	MaxBackoff     time.Duration // retry.max_backoff
	MaxElapsed     time.Duration // retry.max_elapsed
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

// String returns the policy's name in a pipeline file.
func (f FailurePolicy) String() string {
	switch f {
	case Rewind:
		return "rewind"
	case DeadLetter:
		return "dead_letter"
	case Halt:
		return "halt"
	}
	return "FailurePolicy(" + strconv.Itoa(int(f)) + ")"
}

// CheckpointSettings configure commits and shutdown (the checkpoint section
// of a pipeline file). Zero fields mean the defaults; negative ones are
// invalid.
type CheckpointSettings struct {
	CommitInterval  time.Duration // commit_interval, default 5s
	ShutdownTimeout time.Duration // shutdown_timeout, default 30s: in-flight batches' time to finish on shutdown
	DrainTimeout    time.Duration // drain_timeout, default 30s: a revoked partition's time to finish
	StallWarning    time.Duration // stall_warning, default 60s: log a stalled partition after this long
	// CommitFailureTimeout (commit_failure_timeout, default 5m) stops the run
	// when Source.Commit has failed for that long without a success (a full
	// disk, an unreachable broker): failed commits are retried with backoff
	// meanwhile.
	CommitFailureTimeout time.Duration
	// CommitTimeout (commit_timeout, default 30s) is how long one
	// Source.Commit may take: its context ends then, and a commit that has
	// not answered by then counts as failed (nothing is marked committed; it
	// is retried with backoff, as any failed commit).
	CommitTimeout time.Duration
}

// MetricsSettings configure the HTTP endpoint.
type MetricsSettings struct {
	// Address (metrics.address) is where /metrics, /healthz, /readyz and
	// /debug/stalls are served: host:port. Empty (the zero value) or "off"
	// serves nothing: a pipeline embedded in a program opens no port unless
	// asked to. The command line's default is DefaultMetricsAddress.
	Address string
	// Pprof (metrics.pprof) serves Go's profiles under /debug/pprof/ on the same listener.
	// Off by default: profiles show the program's internals.
	Pprof bool
	// Token (read from the variable metrics.token_env names), when set, is
	// the bearer token without which the taps, /api/v1/status and the
	// profiles are refused. Without it they are served on a loopback
	// address only. Never logged.
	Token string
}
