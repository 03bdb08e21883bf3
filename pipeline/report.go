package pipeline

import (
	"context"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/view"
)

// Report is what one run did (view.Report): records read, transformed and
// written, the positions committed at the end, and where each sink's output
// is. The command line prints it when `weir run` ends; WithReport hands it
// to an embedder.
type (
	Report          = view.Report
	SourceReport    = view.SourceReport
	TransformReport = view.TransformReport
	SinkReport      = view.SinkReport
)

// WithReport calls f with the run's Report when Run is about to return, once
// every goroutine of the pipeline has stopped and the final commit is done,
// whether the run ended well or not. It is not called when the spec is
// invalid or the sinks could not be opened.
func WithReport(f func(*Report)) Option {
	return func(o *options) { o.report = f }
}

func kindOf(ts *compiledTransform) string {
	if ts.typ != "" {
		return ts.typ
	}
	var v any = ts.t
	if ts.r != nil {
		v = ts.r
	}
	return goKind(reflect.TypeOf(v))
}

// goKind names a transform built in Go without a registered type by its Go
// type, in the pipeline file's spelling: *transform.FlatMap is flat_map,
// *mask.Mask is mask. The runtime knows no transform by name: the names are
// the registry's (transform.Register), which the loader sets as Type.
func goKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Name() == "" {
		return "transform"
	}
	var b strings.Builder
	for i, r := range t.Name() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// report builds the Report from the final read model, with what only the
// end of a run knows: what each source read and committed last, what it
// skipped, and what each sink failed to write and where its output is. It
// runs after every pipeline goroutine has returned, so the counters they
// kept need no synchronisation beyond that.
func (rt *runtime) report(start time.Time) *Report {
	m := rt.model(context.Background(), false)
	r := &Report{Elapsed: time.Since(start)}
	for _, s := range rt.sources {
		skipped, unread := s.skips.snapshot()
		r.Sources = append(r.Sources, SourceReport{Name: s.spec.Name, Read: s.poller.read,
			Partitions: s.ck.finalParts, Committed: s.ck.finalPos, Skipped: skipped, Unread: unread, Behind: s.ck.leftBehind})
	}
	k := len(rt.sources)
	for range rt.g.transforms {
		n := &m.Nodes[k]
		r.Transforms = append(r.Transforms, TransformReport{Name: n.Name, Kind: n.Type, In: n.In, Out: n.Out, Rejected: n.Rejected})
		k++
	}
	for _, s := range rt.sinks {
		n := &m.Nodes[k]
		sr := SinkReport{Name: n.Name, Written: n.Out, Failed: s.failed, Skipped: s.skipped.Load(), ExactlyOnce: n.ExactlyOnce}
		if n.Failures > 0 || n.State == "given_up" {
			sr.Failing = n.Error
		}
		if d, ok := s.spec.Sink.(connector.Describer); ok {
			sr.Output = d.Describe()
		}
		r.Sinks = append(r.Sinks, sr)
		k++
	}
	return r
}

// skipCounts is what a source reported through Host.Skip and Host.Unread. It
// changes rarely (per skipped line, per file gone), so a mutex is enough.
type skipCounts struct {
	mu      sync.Mutex
	skipped map[string]int64 // records, by reason
	unread  map[string]int64 // bytes, by reason
}

func (c *skipCounts) add(m *map[string]int64, reason string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[reason] += n
}

func (c *skipCounts) snapshot() (skipped, unread map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.skipped), maps.Clone(c.unread)
}
