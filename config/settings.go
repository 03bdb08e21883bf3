package config

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/pipeline"
)

// readCheckpoint reads the checkpoint section; n is nil when the file has
// none. What it leaves out is filled in by pipeline.FillDefaults.
func (p *pipelineFile) readCheckpoint(n *yaml.Node) {
	if isNull(n) {
		return
	}
	var c checkpointOptions
	before := len(p.errs)
	p.decode(n, reflect.ValueOf(&c).Elem(), "checkpoint")
	if len(p.errs) > before {
		return
	}
	for _, o := range []struct {
		key string
		v   int64
	}{
		{"commit_interval", int64(c.CommitInterval)},
		{"shutdown_timeout", int64(c.ShutdownTimeout)},
		{"drain_timeout", int64(c.DrainTimeout)},
		{"stall_warning", int64(c.StallWarning)},
		{"commit_failure_timeout", int64(c.CommitFailureTimeout)},
		{"commit_timeout", int64(c.CommitTimeout)},
		{"max_in_flight_batches", int64(c.MaxInFlightBatches)},
		{"max_in_flight_bytes", int64(c.MaxInFlightBytes)},
	} {
		p.setToZero(n, o.key, "checkpoint", o.v)
	}
	// The in-flight limits here are the loader's own: it copies them into
	// each source, where a negative one would be reported once per source.
	if c.MaxInFlightBatches < 0 {
		p.errorf(locate(n, "max_in_flight_batches"), "checkpoint.max_in_flight_batches", "must be more than 0; leave it out for the default")
		c.MaxInFlightBatches = 0
	}
	p.spec.Checkpoint = pipeline.CheckpointSettings{
		CommitInterval:       c.CommitInterval.D(),
		ShutdownTimeout:      c.ShutdownTimeout.D(),
		DrainTimeout:         c.DrainTimeout.D(),
		StallWarning:         c.StallWarning.D(),
		CommitFailureTimeout: c.CommitFailureTimeout.D(),
		CommitTimeout:        c.CommitTimeout.D(),
	}
	p.inFlight.batches, p.inFlight.bytes = c.MaxInFlightBatches, int64(c.MaxInFlightBytes)
}

// readMetrics reads the metrics section; n is nil when the file has none.
// A file that says nothing asks for pipeline.DefaultMetricsAddress, where a
// Spec's zero address would serve nothing: the command line serves metrics
// unless told not to.
func (p *pipelineFile) readMetrics(n *yaml.Node) {
	p.spec.Metrics.Address = pipeline.DefaultMetricsAddress
	if isNull(n) {
		return
	}
	var m metricsOptions
	p.decode(n, reflect.ValueOf(&m).Elem(), "metrics")
	p.spec.Metrics.Pprof = m.Pprof
	if m.TokenEnv != "" {
		v, ok := p.lookup(m.TokenEnv)
		switch {
		case ok && strings.TrimSpace(v) != "":
			p.spec.Metrics.Token = strings.TrimSpace(v)
		case p.check && ok:
			p.errorf(locate(n, "token_env"), "metrics.token_env", "names the environment variable %s, which is empty: set it to the token, or leave token_env out", m.TokenEnv)
		case p.check:
			p.errorf(locate(n, "token_env"), "metrics.token_env", "names the environment variable %s, which is not set: export it before starting weir, or leave token_env out", m.TokenEnv)
		}
	}
	switch {
	case m.Address == nil:
	case *m.Address == "":
		p.errorf(locate(n, "address"), "metrics.address", "is empty: write host:port, like 127.0.0.1:9464 or :9464, or off to disable metrics")
	default:
		p.spec.Metrics.Address = *m.Address
	}
}
