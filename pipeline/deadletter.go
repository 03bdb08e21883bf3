package pipeline

import (
	"context"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/internal/deadletter"
	"github.com/weir-etl/weir/record"
)

// deadLetter sends recs, each wrapped with its error and origin, to the dead
// letter sink. Their references go along: they are delivered once that sink
// has flushed them.
func (s *sinkRunner) deadLetter(ctx context.Context, recs []record.Record, err error) {
	p := s.rt.chunks.get()
	for i := range recs {
		env := deadLetterRecord(componentSink, s.spec.Name, &recs[i], err, s.rt.now())
		*refOf(&env) = *refOf(&recs[i])
		*refOf(&recs[i]) = checkpoint.AckRef{}
		*p = append(*p, env)
	}
	select {
	case s.dl.in <- chunk{recs: p}:
	case <-ctx.Done():
		s.fail(*p, checkpoint.Failed)
	}
}

// Kinds of component a dead letter names, as its envelope field and header.
const (
	componentSink      = "sink"
	componentTransform = "transform"
)

// deadLetterRecord wraps r with the error of the component (kind "sink" or
// "transform") that failed on it, in the envelope of package deadletter. The
// result has no reference: the caller moves or clones r's onto it.
func deadLetterRecord(kind, name string, r *record.Record, err error, now time.Time) record.Record {
	return deadletter.Record(kind, name, r, err, now)
}
