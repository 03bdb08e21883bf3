package configtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/words"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// Timeout is how long one test may run: a pipeline of test records that
// does not end by then is stuck (a sink that never acknowledges, say).
const Timeout = time.Minute

// Result is what one test found.
type Result struct {
	Case     *Case
	Elapsed  time.Duration
	Failures []Failure
	// Err is a problem that kept the test from running: the configuration
	// does not load, or names the test uses are not in it.
	Err error
}

// Failure is one thing a test found wrong.
type Failure struct {
	What string // "outputs.priced (line 14)"
	Msg  string
	Diff string // for records that differ: - wanted, + got, lines in common indented
}

// Passed reports whether the test ran and found nothing wrong.
func (r *Result) Passed() bool { return r.Err == nil && len(r.Failures) == 0 }

// Run runs test c of f.
func (f *File) Run(ctx context.Context, c *Case) *Result {
	start := time.Now()
	res := &Result{Case: c}
	defer func() { res.Elapsed = time.Since(start) }()
	data, err := os.ReadFile(f.Config)
	if err != nil {
		res.Err = fmt.Errorf("configtest: the configuration: %w", err)
		return res
	}
	lookup := func(name string) (string, bool) {
		if v, ok := c.Env[name]; ok {
			return v, true
		}
		if v, ok := f.Env[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}
	spec, err := config.ParseWith(f.Config, data, config.Options{Lookup: lookup, Sets: c.Sets, Offline: true})
	if err != nil {
		res.Err = err
		return res
	}
	captures, err := f.standIns(spec, c)
	if err != nil {
		res.Err = err
		return res
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	runErr := pipeline.Run(ctx, spec, pipeline.WithLogger(log))
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
		res.Failures = append(res.Failures, Failure{What: "the run", Msg: fmt.Sprintf("did not end within %v: a sink that never flushes, or a source that never ends?", Timeout)})
		return res
	}
	switch {
	case c.Error != "" && runErr == nil:
		res.Failures = append(res.Failures, Failure{What: "the run", Msg: fmt.Sprintf("ended without an error; want one with %q", c.Error)})
	case c.Error != "" && !strings.Contains(runErr.Error(), c.Error):
		res.Failures = append(res.Failures, Failure{What: "the run", Msg: fmt.Sprintf("failed with %q; want an error with %q", runErr, c.Error)})
	case c.Error == "" && runErr != nil:
		logMu.Lock()
		msg := runErr.Error()
		if l := strings.TrimSpace(logs.String()); l != "" {
			msg += "\n" + l
		}
		logMu.Unlock()
		res.Failures = append(res.Failures, Failure{What: "the run", Msg: "failed: " + msg})
	}
	for _, name := range c.order {
		f.check(res, name, c.Outputs[name], captures[name])
	}
	return res
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// capture is where a component's output is caught, and whether its order
// is defined (one source feeds it).
type capture struct {
	sink    *memSink
	ordered bool
}

// standIns replaces spec's sources by memory sources giving c's inputs, its
// sinks by memory sinks (keeping their settings: batching, failure
// policies, dead letters), and adds a capture sink behind every transform
// and route output whose output c checks. Captures do not acknowledge, so
// they change neither the watermark nor where a record a transform fails
// on goes.
func (f *File) standIns(spec *pipeline.Spec, c *Case) (map[string]capture, error) {
	var problems []string
	sources := map[string]bool{}
	for i := range spec.Sources {
		ss := &spec.Sources[i]
		sources[ss.Name] = true
		ss.Source = &memSource{name: ss.Name, recs: c.Inputs[ss.Name]}
	}
	for name := range c.Inputs {
		if !sources[name] {
			problems = append(problems, fmt.Sprintf("inputs.%s: the configuration has no source %q (its sources: %s)", name, name, strings.Join(slices.Sorted(maps.Keys(sources)), ", ")))
		}
	}
	captures := map[string]capture{}
	sinks := map[string]*memSink{}
	for i := range spec.Sinks {
		m := &memSink{}
		spec.Sinks[i].Sink = m
		sinks[spec.Sinks[i].Name] = m
	}
	outputs := map[string]bool{} // transforms and route outputs
	for _, t := range spec.Transforms {
		if t.Router != nil {
			for _, o := range t.Router.Outputs() {
				outputs[t.Name+"."+o] = true
			}
		} else {
			outputs[t.Name] = true
		}
	}
	for k, name := range c.order {
		ordered := len(upstreamSources(spec, name, c.Inputs)) <= 1
		if m, ok := sinks[name]; ok {
			captures[name] = capture{m, ordered}
			continue
		}
		if !outputs[name] {
			var valid []string
			for n := range outputs {
				valid = append(valid, n)
			}
			for n := range sinks {
				valid = append(valid, n)
			}
			slices.Sort(valid)
			problems = append(problems, fmt.Sprintf("outputs.%s: %q is no transform, route output or sink of the configuration (there are: %s)", name, name, strings.Join(valid, ", ")))
			continue
		}
		m := &memSink{}
		spec.Sinks = append(spec.Sinks, pipeline.SinkSpec{Name: fmt.Sprintf("weir_test_output_%d", k), Inputs: []string{name}, Sink: m, NoAcknowledgements: true})
		captures[name] = capture{m, ordered}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("configtest: %s", strings.Join(problems, "; "))
	}
	// Test records are few: commit often so that the run ends at once, and
	// serve nothing.
	spec.Checkpoint.CommitInterval = 5 * time.Millisecond
	spec.Metrics = pipeline.MetricsSettings{Address: "off"}
	return captures, nil
}

// upstreamSources returns the sources with test records that feed
// component name, directly or through transforms.
func upstreamSources(spec *pipeline.Spec, name string, inputs map[string][]Rec) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(n string)
	walk = func(n string) {
		n, _, _ = strings.Cut(n, ".") // a route output comes from its route
		if seen[n] {
			return
		}
		seen[n] = true
		for _, s := range spec.Sources {
			if s.Name == n && len(inputs[n]) > 0 {
				out = append(out, n)
			}
		}
		for _, t := range spec.Transforms {
			if t.Name == n {
				for _, in := range t.Inputs {
					walk(in)
				}
			}
		}
		for _, s := range spec.Sinks {
			if s.Name == n {
				for _, in := range s.Inputs {
					walk(in)
				}
				// A dead letter sink is fed by the sinks that name it.
				for _, o := range spec.Sinks {
					if o.DeadLetter == n {
						walk(o.Name)
					}
				}
			}
		}
	}
	walk(name)
	return out
}

// check compares what came out of component name with e.
func (f *File) check(res *Result, name string, e Expect, c capture) {
	got := c.sink.flushed()
	what := fmt.Sprintf("outputs.%s (line %d)", name, e.Line)
	if e.Count != nil && len(got) != *e.Count {
		res.Failures = append(res.Failures, Failure{What: what, Msg: fmt.Sprintf("%s, want %d", words.Plural(len(got), "record"), *e.Count), Diff: listing(got)})
	}
	for _, cond := range e.Each {
		flt, err := transform.NewFilter(cond)
		if err != nil {
			res.Failures = append(res.Failures, Failure{What: what, Msg: fmt.Sprintf("each: %q does not compile: %v", cond, err)})
			continue
		}
		for i := range got {
			r := record.New(got[i].Value)
			out, err := flt.Process(&r, nil)
			switch {
			case err != nil:
				res.Failures = append(res.Failures, Failure{What: what, Msg: fmt.Sprintf("record %d: each %q: %v\n  %s", i+1, cond, err, got[i].Value)})
			case len(out) == 0:
				res.Failures = append(res.Failures, Failure{What: what, Msg: fmt.Sprintf("record %d is not %q:\n  %s", i+1, cond, got[i].Value)})
			}
		}
	}
	if !e.HasRecords {
		return
	}
	want := e.Records
	ordered := c.ordered
	if !ordered {
		want = slices.Clone(want)
		got = slices.Clone(got)
		slices.SortStableFunc(want, func(a, b Rec) int { return bytes.Compare(canonical(a.Value), canonical(b.Value)) })
		slices.SortStableFunc(got, func(a, b gotRec) int { return bytes.Compare(canonical(a.Value), canonical(b.Value)) })
	}
	if d, same := diff(want, got); !same {
		msg := "the records differ"
		if !ordered {
			msg += " (several sources feed it, so they are compared in no order)"
		}
		res.Failures = append(res.Failures, Failure{What: what, Msg: msg + " (- want, + got):", Diff: d})
	}
}

// canonical is a value as JSON with sorted members when it is JSON, to
// sort records that are compared in no order.
func canonical(v []byte) []byte {
	x, err := decodeJSON(v)
	if err != nil {
		return v
	}
	b, err := json.Marshal(x) // members sorted, numbers as their literals
	if err != nil {
		return v
	}
	return b
}

// listing lists records one a line, for a failure about them.
func listing(got []gotRec) string {
	var b strings.Builder
	for _, g := range got {
		b.WriteString("  " + string(g.Value) + "\n")
	}
	return b.String()
}

// memSource gives its records as one partition, whose positions are the
// records' indexes, and ends.
type memSource struct {
	name string
	recs []Rec
	next int // the index of the next record to give
	p    connector.Partition
}

func (s *memSource) Open(ctx context.Context, h connector.Host) error {
	s.p = h.Assign(s.name+"/test", 0)
	return nil
}

func (s *memSource) Poll(ctx context.Context, b *connector.Batch) error {
	if s.next >= len(s.recs) {
		return connector.ErrEndOfInput
	}
	b.Partition, b.End = s.p, connector.Position(len(s.recs))
	for i := s.next; i < len(s.recs); i++ {
		r := s.recs[i]
		rec := record.New(bytes.Clone(r.Value))
		if r.Key != nil {
			rec.Key = []byte(*r.Key)
		}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, record.Header{Key: h[0], Value: []byte(h[1])})
		}
		rec.Time = r.Time
		rec.Origin = record.Origin{Source: s.name, Partition: s.name + "/test", Offset: int64(i)}
		b.Records = append(b.Records, rec)
	}
	s.next = len(s.recs)
	return nil
}

func (s *memSource) Commit(context.Context, []connector.Commit) error { return nil }

// Seek replays from pos, as a rewind asks.
func (s *memSource) Seek(_ context.Context, _ connector.Partition, pos connector.Position) error {
	s.next = int(pos)
	return nil
}

func (s *memSource) Close(context.Context) error { return nil }

// gotRec is a record a stand-in sink made durable.
type gotRec struct {
	Value   []byte
	Key     []byte
	Headers [][2]string
	Time    time.Time
}

// memSink keeps what it flushed; an aborted group is forgotten.
type memSink struct {
	group []gotRec
	mu    sync.Mutex
	done  []gotRec
}

func (m *memSink) Open(context.Context) error { return nil }
func (m *memSink) Write(_ context.Context, recs []record.Record) error {
	for i := range recs {
		g := gotRec{Value: bytes.Clone(recs[i].Bytes()), Key: bytes.Clone(recs[i].Key), Time: recs[i].Time}
		for _, h := range recs[i].Headers {
			g.Headers = append(g.Headers, [2]string{h.Key, string(h.Value)})
		}
		m.group = append(m.group, g)
	}
	return nil
}
func (m *memSink) Flush(context.Context) error {
	m.mu.Lock()
	m.done = append(m.done, m.group...)
	m.mu.Unlock()
	m.group = nil
	return nil
}
func (m *memSink) Abort(context.Context) error { m.group = nil; return nil }
func (m *memSink) Close(context.Context) error { return nil }

func (m *memSink) flushed() []gotRec {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.done)
}
