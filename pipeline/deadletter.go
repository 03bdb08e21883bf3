package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/record"
)

// deadLetter sends recs, each wrapped with its error and origin, to the dead
// letter sink. Their references go along: they are delivered once that sink
// has flushed them.
func (s *sinkRunner) deadLetter(ctx context.Context, recs []record.Record, err error) {
	p := s.rt.chunks.get()
	for i := range recs {
		env := deadLetterRecord(componentSink, s.spec.Name, &recs[i], err)
		env.Ack = recs[i].Ack
		recs[i].Ack = checkpoint.AckRef{}
		*p = append(*p, env)
	}
	select {
	case s.dl.in <- chunk{recs: p}:
	case <-ctx.Done():
		s.fail(*p, checkpoint.Failed)
	}
}

// deadLetterEnvelope is the value of a dead letter record. Exactly one of
// Sink and Transform names the component that failed on the record.
type deadLetterEnvelope struct {
	Error     string          `json:"error"`
	Sink      string          `json:"sink,omitempty"`
	Transform string          `json:"transform,omitempty"`
	Source    string          `json:"source"`
	Partition string          `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value,omitempty"`
	Raw       string          `json:"raw,omitempty"`
}

// Kinds of component a dead letter names, as its envelope field and header.
const (
	componentSink      = "sink"
	componentTransform = "transform"
)

// deadLetterRecord wraps r with the error of the component (kind "sink" or
// "transform") that failed on it. The result has no reference: the caller
// moves or clones r's onto it.
func deadLetterRecord(kind, name string, r *record.Record, err error) record.Record {
	env := deadLetterEnvelope{Error: err.Error(), Source: r.Origin.Source, Partition: r.Origin.Partition, Offset: r.Origin.Offset}
	if kind == componentTransform {
		env.Transform = name
	} else {
		env.Sink = name
	}
	if v, verr := r.Value(); verr != nil {
		env.Raw = fmt.Sprintf("unencodable value: %v", verr)
	} else if json.Valid(v) {
		env.Value = v
	} else {
		env.Raw = string(v)
	}
	b, _ := json.Marshal(env) // a struct of strings and valid raw JSON always encodes
	out := record.New(b)
	out.Key, out.Time, out.Origin = r.Key, r.Time, r.Origin
	out.Headers = append(append([]record.Header(nil), r.Headers...),
		record.Header{Key: "weir.error", Value: []byte(err.Error())},
		record.Header{Key: "weir." + kind, Value: []byte(name)})
	return out
}
