package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
)

var failurePolicies = map[string]pipeline.FailurePolicy{
	"rewind":      pipeline.Rewind,
	"dead_letter": pipeline.DeadLetter,
	"halt":        pipeline.Halt,
}

func (p *pipelineFile) readSink(k, v *yaml.Node, field string) {
	common, rest := p.split(v, field, sinkCommon)
	spec := pipeline.SinkSpec{Name: k.Value, Inputs: p.inputs(common, field), Sink: standInSink{}}
	acks := true
	p.decodeField(common, "acknowledgements", &acks, field)
	spec.NoAcknowledgements = !acks

	spec.Batch, spec.Retry = p.batchAndRetry(common, field)
	if n, ok := common["on_failure"]; ok {
		n = resolve(n)
		pol, ok := failurePolicies[n.Value]
		if n.Kind != yaml.ScalarNode || !ok {
			p.errorf(n, field+".on_failure", "must be rewind, dead_letter or halt; got %s", p.describe(n))
		}
		spec.OnFailure = pol
	}
	if n, ok := common["on_give_up"]; ok {
		n = resolve(n)
		switch {
		case n.Kind == yaml.ScalarNode && n.Value == "halt":
			spec.OnGiveUp = pipeline.GiveUpHalt
		case n.Kind == yaml.ScalarNode && n.Value == "dead_letter":
			spec.OnGiveUp = pipeline.GiveUpDeadLetter
		default:
			p.errorf(n, field+".on_give_up", "must be halt or dead_letter; got %s", p.describe(n))
		}
	}
	// give_up_after: 0 means never in a file (a Spec's zero is the default).
	if n, ok := common["give_up_after"]; ok && !isNull(n) {
		var d Duration
		if p.decodeField(common, "give_up_after", &d, field) {
			switch {
			case d < 0:
				p.errorf(resolve(n), field+".give_up_after", "must not be negative: a duration like 10m, or 0 to never give up")
			case d == 0:
				spec.GiveUpAfter = -1
			default:
				spec.GiveUpAfter = d.D()
			}
		}
	}
	if n, ok := common["dead_letter"]; ok && !isNull(n) {
		if n = resolve(n); n.Kind != yaml.ScalarNode {
			p.errorf(n, field+".dead_letter", "must be the name of a sink; got %s", p.describe(n))
		} else {
			spec.DeadLetter = n.Value
		}
	}
	p.spec.Sinks = append(p.spec.Sinks, spec)
	idx := len(p.spec.Sinks) - 1

	registered := connector.SinkTypes()
	typ, tn, ok := p.typeOf(k, common, field, registered)
	if !ok {
		return
	}
	st, ok := connector.LookupSink(typ)
	if !ok {
		p.unknownType(tn, field, "sink", registered)
		return
	}
	p.spec.Sinks[idx].Type = typ
	cfg := st.NewConfig()
	if !p.decodeOptions(cfg, rest, k, field) {
		return
	}
	sink, err := st.Build(k.Value, cfg)
	if err != nil {
		p.errorf(k, field, "%s", err)
		return
	}
	p.checkComponent(sink, rest, k, field)
	p.spec.Sinks[idx].Sink = sink
}

// batchAndRetry reads a sink's batch and retry mappings.
func (p *pipelineFile) batchAndRetry(common map[string]*yaml.Node, field string) (pipeline.BatchSettings, pipeline.RetrySettings) {
	type setting struct {
		key string
		v   int64
	}
	var b batchOptions
	if p.decodeField(common, "batch", &b, field) {
		for _, o := range []setting{{"max_records", int64(b.MaxRecords)}, {"max_bytes", int64(b.MaxBytes)}, {"max_age", int64(b.MaxAge)}, {"overlap", int64(b.Overlap)}} {
			p.setToZero(common["batch"], o.key, field+".batch", o.v)
		}
	}
	var r retryOptions
	if p.decodeField(common, "retry", &r, field) {
		for _, o := range []setting{{"max_attempts", int64(r.MaxAttempts)}, {"initial_backoff", int64(r.InitialBackoff)}, {"max_backoff", int64(r.MaxBackoff)}, {"max_elapsed", int64(r.MaxElapsed)}} {
			p.setToZero(common["retry"], o.key, field+".retry", o.v)
		}
	}
	return pipeline.BatchSettings{MaxRecords: b.MaxRecords, MaxBytes: int64(b.MaxBytes), MaxAge: b.MaxAge.D(), Linger: b.Linger.D(), Overlap: b.Overlap},
		pipeline.RetrySettings{MaxAttempts: r.MaxAttempts, InitialBackoff: r.InitialBackoff.D(), MaxBackoff: r.MaxBackoff.D(), MaxElapsed: r.MaxElapsed.D()}
}
