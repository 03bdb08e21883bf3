package config

import (
	"reflect"
	"slices"
)

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
	MaxInFlightBytes   Size   `yaml:"max_in_flight_bytes" doc:"Bytes of such batches before polling pauses. Default: checkpoint.max_in_flight_bytes."`
}

// transformOptions are the keys of every transform.
type transformOptions struct {
	Type   string   `yaml:"type" enum:"filter,map,flat_map,route" doc:"The transform type: filter, map, flat_map or route."`
	Inputs []string `yaml:"inputs" doc:"Sources, transforms or route outputs (<route>.<output>) whose records this transform takes. Required."`
}

// filterOptions are a filter's own keys.
type filterOptions struct {
	Condition string `yaml:"condition" doc:"Keep the record when this expression is true; anything else, null included, is a record error. Required."`
}

// mapOptions are a map's own keys; it needs at least one.
type mapOptions struct {
	Set    map[string]string `yaml:"set" doc:"field: expression, in order; each sees the fields the ones before it set. Dotted fields reach into objects."`
	Rename map[string]string `yaml:"rename" doc:"old: new field names, applied after every set. Renaming a missing field does nothing."`
	Delete []string          `yaml:"delete" doc:"Fields to remove, after the renames. Deleting a missing field does nothing."`
}

// flatMapOptions are a flat_map's own keys.
type flatMapOptions struct {
	Explode string `yaml:"explode" doc:"An array expression: each element becomes a record (an object element its fields; any other element stored under as). Null or missing drops the record. Required."`
	As      string `yaml:"as" doc:"The field a non-object element is stored under, in a copy of the parent's fields. Default: explode when it is a field path, value otherwise."`
}

// routeOptions are a route's own keys.
type routeOptions struct {
	Outputs map[string]string `yaml:"outputs" doc:"output name: condition, in order; a record goes to every output whose condition holds, and downstream an output is named <route>.<output>. Required."`
}

// transformTypeDefs are the transform types with their docs and own keys,
// in the order help lists them.
var transformTypeDefs = []struct {
	name, doc string
	options   reflect.Type
}{
	{"filter", "keeps the records for which a condition is true", reflect.TypeFor[filterOptions]()},
	{"map", "sets, renames and deletes fields, changing nothing else of the record", reflect.TypeFor[mapOptions]()},
	{"flat_map", "turns each element of an array into a record", reflect.TypeFor[flatMapOptions]()},
	{"route", "sends each record to the outputs whose conditions it meets", reflect.TypeFor[routeOptions]()},
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
	MaxRecords int      `yaml:"max_records" doc:"Flush after this many records."`
	MaxBytes   Size     `yaml:"max_bytes" doc:"Flush after this many bytes."`
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
	StallWarning         Duration `yaml:"stall_warning" doc:"A partition whose watermark has not moved, or a sink failing, this long is logged, named in /debug/stalls and makes /readyz answer 503."`
	CommitFailureTimeout Duration `yaml:"commit_failure_timeout" doc:"Commits that keep failing this long stop the run."`
	MaxInFlightBatches   int      `yaml:"max_in_flight_batches" doc:"Batches read but not resolved before a source's polling pauses, for every source that does not set its own."`
	MaxInFlightBytes     Size     `yaml:"max_in_flight_bytes" doc:"Bytes of such batches before polling pauses, for every source that does not set its own."`
}

// metricsOptions is the metrics section.
type metricsOptions struct {
	Address *string `yaml:"address" doc:"host:port of the HTTP endpoints (/metrics, /healthz, /readyz, /debug/stalls, /api/v1/status, the status page, tap), or off. Keep it on loopback unless a proxy guards it."`
	Pprof   bool    `yaml:"pprof" doc:"Also serve Go's profiles under /debug/pprof/."`
}

// keysOf lists the YAML names of struct type t's options, sorted.
func keysOf(t reflect.Type) []string { return optionNames(optionsOf(t)) }

var (
	sourceCommon       = keysOf(reflect.TypeFor[sourceOptions]())
	sinkCommon         = keysOf(reflect.TypeFor[sinkOptions]())
	transformCommon    = keysOf(reflect.TypeFor[transformOptions]())
	transformTypes     = map[string][]string{}
	transformTypeNames []string
)

func init() {
	for _, d := range transformTypeDefs {
		transformTypes[d.name] = keysOf(d.options)
		transformTypeNames = append(transformTypeNames, d.name)
	}
	slices.Sort(transformTypeNames)
}
