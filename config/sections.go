package config

import "reflect"

// The keys of a pipeline file outside the connectors' own options, as
// structs whose `yaml` and `doc` tags are the one description of them: the
// loader takes its lists of valid keys from them (below), and `weir help`,
// `weir schema` and the reference in docs/config.md describe them from the
// same tags (Describe). The checkpoint section, and a sink's batch and retry
// mappings, are decoded into their structs directly (settings.go, sinks.go).

// sourceOptions are the keys of every source, beside its type's options.
type sourceOptions struct {
	Type               string `yaml:"type" doc:"The source type: a registered source type (weir list)."`
	MaxInFlightBatches int    `yaml:"max_in_flight_batches" doc:"Batches read but not yet resolved before polling pauses. Default: checkpoint.max_in_flight_batches."`
	MaxInFlightBytes   Size   `yaml:"max_in_flight_bytes" doc:"Memory of such batches before polling pauses: their records' bytes and structs (200 bytes a record). Default: checkpoint.max_in_flight_bytes."`
}

// transformOptions are the keys of every transform.
type transformOptions struct {
	Type   string   `yaml:"type" doc:"The transform type: a registered transform type (weir list)."`
	Inputs []string `yaml:"inputs" doc:"Sources, transforms or route outputs (<route>.<output>) whose records this transform takes. Required."`
}

// sinkOptions are the keys of every sink, beside its type's options.
type sinkOptions struct {
	Type             string       `yaml:"type" doc:"The sink type: a registered sink type (weir list)."`
	Inputs           []string     `yaml:"inputs" doc:"Sources, transforms or route outputs whose records this sink writes. Required, except for a dead letter sink."`
	Acknowledgements bool         `yaml:"acknowledgements" doc:"false: records are released as delivered when handed to the sink, so it never holds the watermark back (and may lose what it did not write)."`
	Batch            batchOptions `yaml:"batch" doc:"When the sink flushes a group of records (makes it durable)."`
	Retry            retryOptions `yaml:"retry" doc:"How a failed write or flush is retried before on_failure applies."`
	OnFailure        string       `yaml:"on_failure" enum:"rewind,dead_letter,halt" doc:"After the retries: rewind (read the data again), dead_letter (send the failed records to the dead_letter sink) or halt (stop the pipeline)."`
	DeadLetter       string       `yaml:"dead_letter" doc:"The sink that receives failed records; required with, and only with, on_failure: dead_letter."`
	GiveUpAfter      Duration     `yaml:"give_up_after" doc:"How long the sink may fail without one successful flush before on_give_up applies; 0 means never."`
	OnGiveUp         string       `yaml:"on_give_up" enum:"halt,dead_letter" doc:"When give_up_after passes: halt (stop with exit code 3) or dead_letter (send what keeps failing to the dead letter sink and go on)."`
}

// batchOptions is the batch mapping of a sink: pipeline.BatchSettings in a
// file. What it leaves out is filled in by pipeline.FillDefaults.
type batchOptions struct {
	MaxRecords int      `yaml:"max_records" doc:"Flush after this many records. Left unset, the count follows the sink's pace, from 10000 up to 100000 within max_bytes (docs/runtime.md, Group size)."`
	MaxBytes   Size     `yaml:"max_bytes" doc:"Flush once the group holds this much: its records' bytes and their structs (200 bytes a record, record.Overhead)."`
	MaxAge     Duration `yaml:"max_age" doc:"Flush a group this old."`
	Linger     Duration `yaml:"linger" doc:"Also flush once the sink's input has been idle this long (below max_age): lower latency when caught up, more flushes on a trickle. 0 is off."`
	Overlap    int      `yaml:"overlap" doc:"For sinks that seal (file, kafka): groups that may wait for their fsync or acknowledgements while the next is written."`
}

// retryOptions is the retry mapping of a sink: pipeline.RetrySettings in a
// file.
type retryOptions struct {
	MaxAttempts    int      `yaml:"max_attempts" doc:"Attempts of a failed write."`
	InitialBackoff Duration `yaml:"initial_backoff" doc:"The first backoff, doubling with jitter; at most max_backoff."`
	MaxBackoff     Duration `yaml:"max_backoff" doc:"The backoff ceiling; at least initial_backoff."`
	MaxElapsed     Duration `yaml:"max_elapsed" doc:"Total time for retries."`
}

// checkpointOptions is the checkpoint section: pipeline.CheckpointSettings,
// and the in-flight limits of every source that does not set its own.
type checkpointOptions struct {
	CommitInterval       Duration `yaml:"commit_interval" doc:"How often committable positions are committed to the sources."`
	ShutdownTimeout      Duration `yaml:"shutdown_timeout" doc:"On a graceful stop, how long in-flight data gets to become durable before what is unwritten is abandoned (and read again next time)."`
	DrainTimeout         Duration `yaml:"drain_timeout" doc:"How long a revoked partition (a Kafka rebalance) gets to finish its batches in flight."`
	StallWarning         Duration `yaml:"stall_warning" doc:"A partition whose watermark has not moved, a commit not answering or failing, a sink failing, or a sink call (a flush, a write) not returning, this long is logged once, named in /debug/stalls and makes /readyz answer 503."`
	CommitFailureTimeout Duration `yaml:"commit_failure_timeout" doc:"Commits that keep failing this long stop the run."`
	CommitTimeout        Duration `yaml:"commit_timeout" doc:"How long one commit to a source may take: one that has not answered by then fails and is retried with backoff, committing nothing."`
	MaxInFlightBatches   int      `yaml:"max_in_flight_batches" doc:"Batches read but not resolved before a source's polling pauses, for every source that does not set its own."`
	MaxInFlightBytes     Size     `yaml:"max_in_flight_bytes" doc:"Memory of such batches before polling pauses (their records' bytes and structs, 200 bytes a record), for every source that does not set its own."`
}

// metricsOptions is the metrics section.
type metricsOptions struct {
	Address *string `yaml:"address" doc:"host:port of the HTTP endpoints (/metrics, /healthz, /readyz, /debug/stalls, /api/v1/status, the status page, tap), or off. Beyond loopback, what shows records needs token_env."`
	Pprof   bool    `yaml:"pprof" doc:"Also serve Go's profiles under /debug/pprof/."`
	// TokenEnv names the variable that holds the bearer token of the
	// endpoints that show records (pipeline/guard.go).
	TokenEnv string `yaml:"token_env" doc:"The environment variable holding a bearer token. With it, taps, /api/v1/status and profiles answer only requests that carry it, on any address; without it they are served on loopback only. weir tap and weir top send WEIR_METRICS_TOKEN."`
}

// keysOf lists the YAML names of struct type t's options, sorted.
func keysOf(t reflect.Type) []string { return optionNames(optionsOf(t)) }

var (
	sourceCommon    = keysOf(reflect.TypeFor[sourceOptions]())
	sinkCommon      = keysOf(reflect.TypeFor[sinkOptions]())
	transformCommon = keysOf(reflect.TypeFor[transformOptions]())
)
