package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// env returns a lookup function over vars, so tests do not touch the
// process environment.
func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func load(t *testing.T, file string, vars map[string]string) (*pipeline.Spec, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return parse(file, data, env(vars))
}

func TestFullExample(t *testing.T) {
	spec, err := load(t, "full.yaml", map[string]string{"ORDERS_PASSWORD": "hunter2-pw"})
	if err != nil {
		t.Fatal(err)
	}
	wantSrcCfg := &testSourceConfig{
		Path:         "/var/data/orders.jsonl",
		PollInterval: Duration(250 * time.Millisecond),
		Password:     "hunter2-pw",
	}
	wantSources := []pipeline.SourceSpec{{
		Name: "orders", Type: "test_source", Source: &testSource{name: "orders", cfg: wantSrcCfg},
		MaxInFlightBatches: 64, MaxInFlightBytes: 16 << 20, Settings: wantSrcCfg,
	}}
	if !reflect.DeepEqual(spec.Sources, wantSources) {
		t.Errorf("sources:\n got %+v\nwant %+v", spec.Sources, wantSources)
	}
	defRetry := pipeline.RetrySettings{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second, MaxElapsed: time.Minute}
	defBatch := pipeline.BatchSettings{MaxRecords: 10000, MaxBytes: 8 << 20, MaxAge: time.Second, Overlap: 2, AdaptRecords: true}
	wantSinks := []pipeline.SinkSpec{
		{
			Name: "warehouse", Inputs: []string{"items"}, Type: "test_sink",
			Sink:      &testSink{name: "warehouse", cfg: &testSinkConfig{Dir: "/var/out"}},
			Batch:     pipeline.BatchSettings{MaxRecords: 500, MaxBytes: 4 << 20, MaxAge: 2 * time.Second, Overlap: 3},
			Retry:     pipeline.RetrySettings{MaxAttempts: 3, InitialBackoff: 50 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxElapsed: 30 * time.Second},
			OnFailure: pipeline.DeadLetter, DeadLetter: "failed", GiveUpAfter: pipeline.DefaultGiveUpAfter,
		},
		{
			Name: "failed", Type: "test_sink", Sink: &testSink{name: "failed", cfg: &testSinkConfig{Dir: "/var/failed"}}, Batch: defBatch, Retry: defRetry, OnFailure: pipeline.Halt,
			GiveUpAfter: pipeline.DefaultGiveUpAfter,
		},
		{
			Name: "debug", Inputs: []string{"by_region.eu"}, Type: "test_sink",
			Sink:               &testSink{name: "debug", cfg: &testSinkConfig{Dir: "/tmp/debug"}},
			NoAcknowledgements: true, Batch: defBatch, Retry: defRetry, GiveUpAfter: pipeline.DefaultGiveUpAfter,
		},
	}
	if !reflect.DeepEqual(spec.Sinks, wantSinks) {
		t.Errorf("sinks:\n got %+v\nwant %+v", spec.Sinks, wantSinks)
	}
	wantCP := pipeline.CheckpointSettings{CommitInterval: 2 * time.Second, ShutdownTimeout: 20 * time.Second, DrainTimeout: 10 * time.Second, StallWarning: 2 * time.Minute,
		CommitFailureTimeout: pipeline.DefaultCommitFailureTimeout, CommitTimeout: pipeline.DefaultCommitTimeout}
	if spec.Checkpoint != wantCP {
		t.Errorf("checkpoint: got %+v, want %+v", spec.Checkpoint, wantCP)
	}
	if spec.Metrics.Address != "0.0.0.0:9464" {
		t.Errorf("metrics: %+v", spec.Metrics)
	}

	// Transforms hold compiled programs, so check their shape and behaviour.
	type shape struct {
		name   string
		inputs []string
		router bool
	}
	var got []shape
	for _, tr := range spec.Transforms {
		if (tr.Transform == nil) == (tr.Router == nil) {
			t.Fatalf("transform %s: want exactly one of Transform and Router", tr.Name)
		}
		got = append(got, shape{tr.Name, tr.Inputs, tr.Router != nil})
	}
	want := []shape{
		{"valid", []string{"orders"}, false},
		{"by_region", []string{"valid"}, true},
		{"enrich", []string{"by_region.eu"}, false},
		{"items", []string{"enrich", "by_region.other"}, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("transforms:\n got %+v\nwant %+v", got, want)
	}
	if outs := spec.Transforms[1].Router.Outputs(); !reflect.DeepEqual(outs, []string{"eu", "other"}) {
		t.Errorf("route outputs %v", outs)
	}
	r := record.New([]byte(`{"price":60,"qty":2,"cust_id":7,"internal":1,"items":[{"sku":"a"}]}`))
	r.Origin.Partition = "orders.jsonl"
	out, err := spec.Transforms[2].Transform.Process(&r, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := out[0].Value()
	// Untouched members keep their places; set ones are appended in order.
	const wantV = `{"price":60,"qty":2,"items":[{"sku":"a"}],"total":120,"customer":{"tier":"gold","id":7},"read_from":"orders.jsonl"}`
	if string(v) != wantV {
		t.Errorf("enrich gave %s\nwant %s", v, wantV)
	}
}

func TestMinimalTakesDefaults(t *testing.T) {
	spec, err := load(t, "minimal.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	src := spec.Sources[0]
	if src.MaxInFlightBatches != 1024 || src.MaxInFlightBytes != 64<<20 {
		t.Errorf("source limits %d %d, want the checkpoint defaults", src.MaxInFlightBatches, src.MaxInFlightBytes)
	}
	if got := src.Source.(*testSource).cfg.PollInterval; got != Duration(time.Second) {
		t.Errorf("connector default lost: poll_interval %v", got)
	}
	sk := spec.Sinks[0]
	if sk.NoAcknowledgements || sk.OnFailure != pipeline.Rewind || sk.Batch.MaxRecords != 10000 || sk.Retry.MaxAttempts != 5 {
		t.Errorf("sink defaults: %+v", sk)
	}
	want := pipeline.CheckpointSettings{CommitInterval: 5 * time.Second, ShutdownTimeout: 30 * time.Second, DrainTimeout: 30 * time.Second, StallWarning: time.Minute,
		CommitFailureTimeout: 5 * time.Minute, CommitTimeout: 30 * time.Second}
	if spec.Checkpoint != want || spec.Metrics.Address != "127.0.0.1:9464" {
		t.Errorf("defaults: %+v %+v", spec.Checkpoint, spec.Metrics)
	}
}

func TestCheckpointLimitsAreSourceDefaults(t *testing.T) {
	spec, err := parse("p.yaml", []byte(`
sources:
  a: { type: test_source, path: /a }
  b: { type: test_source, path: /b, max_in_flight_batches: 3 }
sinks:
  out: { type: test_sink, inputs: [a, b] }
checkpoint: { max_in_flight_batches: 7, max_in_flight_bytes: 1KiB }
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, b := spec.Sources[0], spec.Sources[1]
	if a.MaxInFlightBatches != 7 || a.MaxInFlightBytes != 1024 || b.MaxInFlightBatches != 3 || b.MaxInFlightBytes != 1024 {
		t.Fatalf("a %+v b %+v", a, b)
	}
}

// base is a valid pipeline the error cases below break one piece of; its
// lines are numbered for the expectations.
const base = `sources:
  in:
    type: test_source
    path: /data/in
transforms:
  f:
    type: filter
    inputs: [in]
    condition: id > 1
sinks:
  out:
    type: test_sink
    inputs: [f]
`

func TestBaseIsValid(t *testing.T) {
	if _, err := parse("p.yaml", []byte(base), env(nil)); err != nil {
		t.Fatal(err)
	}
}

// cycleYAML has a cycle of three transforms: a reads c, c reads b, b reads a.
const cycleYAML = `sources:
  in: { type: test_source, path: /x }
transforms:
  a: { type: filter, inputs: [in, c], condition: "true" }
  b: { type: filter, inputs: [a], condition: "true" }
  c: { type: filter, inputs: [b], condition: "true" }
sinks:
  out: { type: test_sink, inputs: [c] }
`

func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"unknown source type", strings.Replace(base, "type: test_source", "type: test_sorce", 1),
			3, "sources.in.type", `unknown source type "test_sorce" (did you mean "test_source"?); registered source types: generate, test_source`},
		{"unknown sink type", strings.Replace(base, "type: test_sink", "type: s3", 1),
			12, "sinks.out.type", "registered sink types: test_envsink, test_optionless, test_sink"},
		{"unknown transform type", strings.Replace(base, "type: filter", "type: filtre", 1),
			7, "transforms.f.type", `unknown transform type "filtre" (did you mean "filter"?); registered transform types: filter, flat_map, map, route`},
		{"missing type", strings.Replace(base, "    type: test_sink\n", "", 1),
			11, "sinks.out.type", "missing: set type to one of:"},
		{"unknown connector option", strings.Replace(base, "path: /data/in", "path: /data/in\n    pth: x", 1),
			5, "sources.in", `unknown option "pth" (did you mean "path"?); valid options: limit, max_in_flight_batches, max_in_flight_bytes, max_line_bytes, password, path, poll_interval, port, read_buffer, tls, topics, type`},
		{"unknown nested option", strings.Replace(base, "path: /data/in", "path: /data/in\n    tls: { verfy: true }", 1),
			5, "sources.in.tls", `unknown option "verfy" (did you mean "verify"?); valid options: ca_file, verify`},
		{"option of an optionless sink", strings.Replace(base, "type: test_sink", "type: test_optionless\n    dir: x", 1),
			13, "sinks.out", `unknown option "dir"; this component takes no options of its own; valid options: acknowledgements, batch, dead_letter, give_up_after, inputs, on_failure, on_give_up, retry, type`},
		{"unknown transform option", strings.Replace(base, "condition: id > 1", "condition: id > 1\n    conditon: x", 1),
			10, "transforms.f", `unknown option "conditon" (did you mean "condition"?); valid options: condition`},
		{"misspelt common option", strings.Replace(base, "type: test_sink", "type: test_sink\n    on_failur: halt", 1),
			13, "sinks.out", `unknown option "on_failur" (did you mean "on_failure"?)`},
		{"misspelt common option of a source", strings.Replace(base, "path: /data/in", "path: /data/in\n    max_in_flight_batchs: 3", 1),
			5, "sources.in", `unknown option "max_in_flight_batchs" (did you mean "max_in_flight_batches"?)`},
		{"unknown sink common option", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch: { max_recs: 1 }", 2),
			14, "sinks.out.batch", `unknown option "max_recs"`},
		{"missing required connector option", strings.Replace(base, "    path: /data/in\n", "", 1),
			2, "sources.in.path", "missing: set the file to read"},
		{"connector field error at its line", strings.Replace(base, "path: /data/in", "path: /data/in\n    tls:\n      ca_file: /bad", 1),
			6, "sources.in.tls.ca_file", "cannot be /bad"},
		{"missing condition", strings.Replace(base, "    condition: id > 1\n", "", 1),
			6, "transforms.f.condition", "missing: transforms.f needs a condition"},
		{"expression does not compile", strings.Replace(base, "condition: id > 1", "condition: id >", 1),
			9, "transforms.f.condition", `expression "id >" does not compile: unexpected end of the expression`},
		{"condition not bool", strings.Replace(base, "condition: id > 1", "condition: 1 + 2", 1),
			9, "transforms.f.condition", "a condition must give a bool"},
		{"bad duration", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch:\n      max_age: 5", 2),
			15, "sinks.out.batch.max_age", `"5" has no unit: write it like 5s`},
		{"bad size", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch:\n      max_bytes: 8XB", 2),
			15, "sinks.out.batch.max_bytes", `"8XB" is not a size: write it like 64MiB`},
		{"bad connector duration", strings.Replace(base, "path: /data/in", "path: /data/in\n    poll_interval: soon", 1),
			5, "sources.in.poll_interval", `"soon" is not a duration`},
		{"bad int", strings.Replace(base, "path: /data/in", "path: /data/in\n    port: eighty", 1),
			5, "sources.in.port", `"eighty" is not a whole number`},
		{"list expected", strings.Replace(base, "path: /data/in", "path: /data/in\n    topics: orders", 1),
			5, "sources.in.topics", `must be a list, like [a, b]; got "orders"`},
		{"linger not below max_age", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch:\n      max_age: 1s\n      linger: 1s", 2),
			16, "sinks.out.batch.linger", "must be less than max_age"},
		{"negative linger", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch:\n      linger: -5ms", 2),
			15, "sinks.out.batch.linger", `"-5ms" is negative`},
		{"zero batch", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch:\n      max_records: 0", 2),
			15, "sinks.out.batch.max_records", "must be more than 0"},
		{"zero overlap", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    batch:\n      overlap: 0", 2),
			15, "sinks.out.batch.overlap", "must be more than 0"},
		{"max_backoff below initial", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    retry: { initial_backoff: 2s, max_backoff: 1s }", 2),
			14, "sinks.out.retry.max_backoff", "is less than initial_backoff (2s)"},
		{"bad on_failure", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_failure: retry", 2),
			14, "sinks.out.on_failure", `must be rewind, dead_letter or halt; got "retry"`},
		{"bad on_give_up", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_give_up: rewind", 2),
			14, "sinks.out.on_give_up", `must be halt or dead_letter; got "rewind"`},
		{"negative give_up_after", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    give_up_after: -1m", 2),
			14, "sinks.out.give_up_after", `negative`},
		{"give_up dead_letter without a sink", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_give_up: dead_letter", 2),
			11, "sinks.out.dead_letter", "missing: on_give_up is dead_letter"},
		{"dangling input", strings.Replace(base, "inputs: [in]", "inputs: [inn]", 1),
			8, "transforms.f.inputs[0]", `"inn" names no source, transform or route output; did you mean "in"?`},
		{"input is a sink", base + "  out2:\n    type: test_sink\n    inputs: [out]\n",
			16, "sinks.out2.inputs[0]", `"out" is a sink, and sinks have no output`},
		{"input is a bare route", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: route\n    inputs: [in]\n    outputs: { big: id > 1 }\n", 1),
			13, "sinks.out.inputs[0]", `"f" is a route: name one of its outputs (f.big)`},
		{"unknown route output", strings.Replace(strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: route\n    inputs: [in]\n    outputs: { big: id > 1 }\n", 1), "inputs: [f]", "inputs: [f.small, f.big]", 1),
			13, "sinks.out.inputs[0]", `route "f" has no output "small"; its outputs are f.big`},
		{"unused route output", strings.Replace(strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: route\n    inputs: [in]\n    outputs: { big: id > 1, small: id < 1 }\n", 1), "inputs: [f]", "inputs: [f.big]", 1),
			9, "transforms.f.outputs.small", `route output "small" feeds nothing, so records matching only it would be dropped: name "f.small"`},
		{"dotted input of a non-route", strings.Replace(base, "inputs: [f]", "inputs: [f.x]", 1),
			13, "sinks.out.inputs[0]", `"f" is not a route, so "f.x" names nothing; write "f"`},
		{"sink fed by nothing", strings.Replace(base, "    inputs: [f]\n", "", 1),
			11, "sinks.out.inputs", "missing: the sink is fed by nothing"},
		{"transform fed by nothing", strings.Replace(base, "    inputs: [in]\n", "", 1) + "  o2: { type: test_sink, inputs: [in] }\n",
			6, "transforms.f.inputs", "missing: the transform is fed by nothing"},
		{"source feeds nothing", strings.Replace(base, "    path: /data/in\n", "    path: /data/in\n  extra: { type: test_source, path: /x }\n", 1),
			5, "sources.extra", "feeds nothing, so its records would be dropped"},
		{"empty inputs", strings.Replace(base, "inputs: [f]", "inputs: []", 1),
			13, "sinks.out.inputs", "missing: the sink is fed by nothing"},
		{"inputs not a list", strings.Replace(base, "inputs: [f]", "inputs: f", 1),
			13, "sinks.out.inputs", `must be a list of names, like [f]`},
		{"duplicate input", strings.Replace(base, "inputs: [f]", "inputs: [f, f]", 1),
			13, "sinks.out.inputs[1]", `"f" is listed twice`},
		{"cycle", cycleYAML, 4, "transforms.a.inputs", "inputs form a cycle, so no record could ever leave it: a -> b -> c -> a"},
		{"dead_letter unknown", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_failure: dead_letter\n    dead_letter: dlqq", 2) + "  dlq: { type: test_sink }\n",
			15, "sinks.out.dead_letter", `"dlqq" names no sink; did you mean "dlq"?`},
		{"dead_letter itself", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_failure: dead_letter\n    dead_letter: out", 2),
			15, "sinks.out.dead_letter", "names the sink itself"},
		{"dead_letter missing", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_failure: dead_letter", 2),
			11, "sinks.out.dead_letter", "missing: on_failure is dead_letter"},
		{"dead_letter without policy", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    dead_letter: dlq", 2) + "  dlq: { type: test_sink }\n",
			14, "sinks.out.dead_letter", "is set but neither on_failure nor on_give_up is dead_letter"},
		{"dead_letter chain", strings.Replace(base, "inputs: [f]", "inputs: [f]\n    on_failure: dead_letter\n    dead_letter: dlq", 2) +
			"  dlq: { type: test_sink, on_failure: dead_letter, dead_letter: out }\n",
			15, "sinks.out.dead_letter", `sink "dlq" itself sends records to a dead letter sink`},
		{"name used twice", strings.Replace(base, "  out:", "  f:", 1),
			11, "sinks.f", `the name "f" is already used by a transform`},
		{"key twice", strings.Replace(base, "path: /data/in", "path: /data/in\n    path: /again", 1),
			5, "sources.in.path", "is set twice (first on line 4)"},
		{"bad name", strings.Replace(base, "  out:", "  out.x:", 1),
			11, "sinks.out.x", "is not a valid component name"},
		{"unknown section", base + "metric: { address: off }\n",
			14, "", `unknown section "metric" (did you mean "metrics"?)`},
		{"missing sources", "sinks:\n  out: { type: test_sink }\n",
			0, "sources", "missing: a pipeline needs at least one source"},
		{"bad metrics address", base + "metrics: { address: localhost }\n",
			14, "metrics.address", `"localhost" is not host:port`},
		{"bad checkpoint duration", base + "checkpoint:\n  commit_interval: -1s\n",
			15, "checkpoint.commit_interval", `"-1s" is negative`},
		{"zero checkpoint", base + "checkpoint:\n  commit_interval: 0s\n",
			15, "checkpoint.commit_interval", "must be more than 0"},
		{"negative commit_timeout", base + "checkpoint:\n  commit_timeout: -5s\n",
			15, "checkpoint.commit_timeout", `"-5s" is negative`},
		{"zero commit_timeout", base + "checkpoint:\n  commit_timeout: 0s\n",
			15, "checkpoint.commit_timeout", "must be more than 0"},
		{"commit_timeout not a duration", base + "checkpoint:\n  commit_timeout: soon\n",
			15, "checkpoint.commit_timeout", "soon"},
		{"map set does not compile", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: map\n    inputs: [in]\n    set:\n      a: 1 +\n", 1),
			10, "transforms.f.set.a", `expression "1 +" does not compile`},
		{"map renames twice to one field", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: map\n    inputs: [in]\n    rename: { a: c, b: c }\n", 1),
			6, "transforms.f", `map renames both "a" and "b" to "c"`},
		{"map with nothing", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: map\n    inputs: [in]\n", 1),
			6, "transforms.f", "missing: a map needs set, rename or delete"},
		{"flat_map needs explode", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: flat_map\n    inputs: [in]\n", 1),
			6, "transforms.f.explode", "missing: transforms.f needs an array expression"},
		{"route needs outputs", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: route\n    inputs: [in]\n", 1),
			6, "transforms.f.outputs", "missing: a route needs outputs"},
		{"route output with a dot", strings.Replace(base, "    type: filter\n    inputs: [in]\n    condition: id > 1\n",
			"    type: route\n    inputs: [in]\n    outputs:\n      a.b: true\n", 1),
			10, "transforms.f.outputs.a.b", "contains a dot"},
		{"not YAML", "sources: [\n", 1, "", "not valid YAML"},
		{"empty file", "", 0, "", "the file is empty"},
		{"build fails", strings.Replace(base, "path: /data/in", "path: /fail-build", 1),
			2, "sources.in", "test_source: cannot open /fail-build"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse("p.yaml", []byte(c.yaml), env(nil))
			var es *Errors
			if !errors.As(err, &es) {
				t.Fatalf("err %v, want *Errors", err)
			}
			for _, e := range es.List {
				if e.Line == c.line && e.Field == c.field && strings.Contains(e.Msg, c.msg) {
					wantPrefix := "p.yaml:"
					if !strings.HasPrefix(e.Error(), wantPrefix) {
						t.Errorf("%q does not start with %q", e.Error(), wantPrefix)
					}
					return
				}
			}
			t.Errorf("no error at line %d, field %q, containing %q; got:\n%v", c.line, c.field, c.msg, err)
		})
	}
}

func TestAllErrorsAtOnce(t *testing.T) {
	_, err := load(t, "invalid.yaml", nil)
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("err %v, want *Errors", err)
	}
	want := []string{
		`invalid.yaml:4: sources.orders: unknown option "pathh" (did you mean "path"?)`,
		`invalid.yaml:5: sources.unused: feeds nothing`,
		`invalid.yaml:11: transforms.even.inputs[0]: "order" names no source, transform or route output; did you mean "orders"?`,
		`invalid.yaml:12:25: transforms.even.condition: expression "id % 2 ==" does not compile`,
		`invalid.yaml:15: transforms.a.inputs: inputs form a cycle, so no record could ever leave it: a -> b -> a`,
		`invalid.yaml:25: sinks.out.batch.max_age: "5" has no unit`,
		`invalid.yaml:27: sinks.out.dead_letter: "nowhere" names no sink`,
	}
	text := err.Error()
	if !strings.HasPrefix(text, "config: ") {
		t.Errorf("Errors text lacks the package prefix: %q", text)
	}
	var lines []string // a problem's own lines (an expression's excerpt) are indented
	for _, l := range strings.Split(text, "\n")[1:] {
		if !strings.HasPrefix(l, " ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(es.List) {
		t.Errorf("Error() has %d problem lines for %d problems", len(lines), len(es.List))
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("missing %q in:\n%s", w, text)
		}
	}
	for i := 1; i < len(es.List); i++ {
		if es.List[i].Line < es.List[i-1].Line {
			t.Errorf("problems out of file order: %v", text)
		}
	}
}

func TestEnvSubstitution(t *testing.T) {
	vars := map[string]string{"DIR": "/data", "PORT": "8080", "EMPTY": ""}
	spec, err := parse("p.yaml", []byte(`
sources:
  in:
    type: test_source
    path: ${DIR}/in.jsonl
    port: ${PORT}
    password: "${MISSING:-fallback}"
    topics: ["${EMPTY:-dflt}", "${EMPTY}x", "$${NOT_A_VAR}", "${DIR}${DIR}"]
sinks:
  out: { type: test_sink, inputs: [in], dir: "${DIR:-unused}" }
`), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	cfg := spec.Sources[0].Source.(*testSource).cfg
	if cfg.Path != "/data/in.jsonl" || cfg.Port != 8080 || cfg.Password != "fallback" {
		t.Errorf("got %+v", cfg)
	}
	if want := []string{"dflt", "x", "${NOT_A_VAR}", "/data/data"}; !reflect.DeepEqual(cfg.Topics, want) {
		t.Errorf("topics %q, want %q", cfg.Topics, want)
	}
	if d := spec.Sinks[0].Sink.(*testSink).cfg.Dir; d != "/data" {
		t.Errorf("dir %q", d)
	}
}

func TestEnvErrors(t *testing.T) {
	_, err := parse("p.yaml", []byte(`sources:
  in: { type: test_source, path: "${NOPE}" }
sinks:
  out: { type: test_sink, inputs: [in], dir: "${BAD-NAME}", }
checkpoint: { commit_interval: "${OPEN" }
`), env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		"p.yaml:2: sources.in.path: environment variable NOPE is not set: set it, or give a default as ${NOPE:-value}",
		"p.yaml:4: sinks.out.dir: ${BAD-NAME} does not name an environment variable",
		`p.yaml:5: checkpoint.commit_interval: "${OPEN" is not closed`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

func TestSecretsNotInErrors(t *testing.T) {
	// Every value below comes from the environment and is wrong in some way,
	// so each appears in an error; none may show.
	vars := map[string]string{
		"PORT":     "p0rt-secret-1",
		"PW":       "reject-me",
		"AGE":      "5x",
		"COND":     "token-secret-2 >",
		"ADDR":     "addr-secret-3",
		"TOPIC":    "t0pic-secret-4",
		"CA":       "/bad",
		"BATCHSEC": "9",
	}
	_, err := parse("p.yaml", []byte(`sources:
  in:
    type: test_source
    path: /in
    port: ${PORT}
    poll_interval: ${AGE}
    topics: ${TOPIC}
  in2:
    type: test_source
    path: /in2
    password: ${PW}
    tls: { ca_file: "${CA}" }
transforms:
  f: { type: filter, inputs: [in, in2], condition: "${COND}" }
sinks:
  out: { type: test_sink, inputs: [f], batch: { max_age: "${BATCHSEC}" } }
metrics: { address: "${ADDR}" }
`), env(vars))
	if err == nil {
		t.Fatal("no error")
	}
	text := err.Error()
	for name, v := range vars {
		if name == "CA" || name == "BATCHSEC" {
			continue // too short to scrub everywhere; checked by their own messages below
		}
		if strings.Contains(text, v) {
			t.Errorf("secret %s=%q leaked:\n%s", name, v, text)
		}
	}
	for _, w := range []string{
		`sources.in.port: "${PORT}" is not a whole number`,
		`sources.in2: password ${PW} is not accepted`,
		`p.yaml:12: sources.in2.tls.ca_file: cannot be ${CA}`,
		`sources.in.poll_interval: "${AGE}" is not a duration`,
		`sources.in.topics: must be a list, like [a, b]; got "${TOPIC}"`,
		`transforms.f.condition: expression "${COND}" does not compile`,
		`sinks.out.batch.max_age: "${BATCHSEC}" has no unit`,
		`metrics.address: "${ADDR}" is not host:port`,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in:\n%s", w, text)
		}
	}
	if strings.Contains(text, `"9"`) || strings.Contains(text, `"5x"`) {
		t.Errorf("a short secret leaked quoted:\n%s", text)
	}
}

func TestAliases(t *testing.T) {
	spec, err := parse("p.yaml", []byte(`
sources:
  in: { type: test_source, path: /in }
sinks:
  a: { type: test_sink, inputs: [in], batch: &b { max_records: 7 } }
  b: { type: test_sink, inputs: [in], batch: *b }
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Sinks[1].Batch.MaxRecords != 7 {
		t.Fatalf("alias not followed: %+v", spec.Sinks[1].Batch)
	}
}

func TestLoadAndValidate(t *testing.T) {
	if _, err := Load(filepath.Join("testdata", "minimal.yaml")); err != nil {
		t.Fatal(err)
	}
	if errs := Validate(filepath.Join("testdata", "minimal.yaml")); errs != nil {
		t.Fatalf("valid file: %v", errs)
	}
	errs := Validate(filepath.Join("testdata", "invalid.yaml"))
	if len(errs) < 7 {
		t.Fatalf("got %d problems, want every one: %v", len(errs), errs)
	}
	var e *Error
	if !errors.As(errs[0], &e) || e.File != filepath.Join("testdata", "invalid.yaml") || e.Line == 0 {
		t.Fatalf("first problem %#v", errs[0])
	}
	_, err := Load("testdata/nope.yaml")
	if err == nil || !strings.HasPrefix(err.Error(), "config: ") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestOneProblemPerSetting checks that a setting the loader finds wrong is
// not reported again by pipeline.Validate, which sees what the loader made of
// it: inputs that are not a list leave the sink without inputs.
func TestOneProblemPerSetting(t *testing.T) {
	_, err := parse("p.yaml", []byte(strings.Replace(base, "inputs: [f]", "inputs: f", 1)), env(nil))
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("err %v, want *Errors", err)
	}
	var inputs []*Error
	for _, e := range es.List {
		if strings.HasPrefix(e.Field, "sinks.out.inputs") {
			inputs = append(inputs, e)
		}
	}
	if len(inputs) != 1 || !strings.Contains(inputs[0].Msg, "must be a list of names") {
		t.Errorf("want one problem with sinks.out.inputs, that it is not a list; got\n%v", err)
	}
}

// give_up_after in a file: a duration, or 0 for never (in a Spec, zero is
// the default and a negative duration never); on_give_up names the fallback.
func TestGiveUpSettings(t *testing.T) {
	doc := func(sink string) []byte {
		return []byte("sources:\n  in: { type: test_source, path: /data }\nsinks:\n  out: { type: test_sink, inputs: [in], " + sink + " }\n  dlq: { type: test_sink }\n")
	}
	for _, c := range []struct {
		sink  string
		after time.Duration
		pol   pipeline.GiveUpPolicy
	}{
		{"dir: /x", pipeline.DefaultGiveUpAfter, pipeline.GiveUpHalt},
		{"give_up_after: 90s", 90 * time.Second, pipeline.GiveUpHalt},
		{"give_up_after: 0", -1, pipeline.GiveUpHalt},
		{"give_up_after: 5m, on_give_up: dead_letter, dead_letter: dlq", 5 * time.Minute, pipeline.GiveUpDeadLetter},
	} {
		d := doc(c.sink)
		if !strings.Contains(c.sink, "dead_letter") {
			d = []byte(strings.Replace(string(d), "  dlq: { type: test_sink }\n", "", 1))
		}
		spec, err := parse("p.yaml", d, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.sink, err)
		}
		if sk := spec.Sinks[0]; sk.GiveUpAfter != c.after || sk.OnGiveUp != c.pol {
			t.Errorf("%s: give_up_after %v, on_give_up %v; want %v, %v", c.sink, sk.GiveUpAfter, sk.OnGiveUp, c.after, c.pol)
		}
	}
}
