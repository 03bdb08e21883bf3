// Package fleet runs many pipelines in one process, each isolated from the
// others: its own run, checkpointer, commits and failure, its own reloads,
// its own pause. One pipeline failing never stops another. The fleet keeps
// each pipeline's counters across its reloads, exports them under one
// /metrics with a pipeline label, and serves the pipelines API
// (/api/v1/pipelines, api.go) on the same listener.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weir-etl/weir/internal/statestore"
	"github.com/weir-etl/weir/pipeline"
)

// Loader turns a pipeline file (its name in errors, its bytes) into a
// Spec, or returns every problem it has (a *config.Errors).
type Loader func(name string, data []byte) (*pipeline.Spec, error)

// Options configure a Fleet.
type Options struct {
	Log  *slog.Logger
	Load Loader
	// RunOptions, when set, adds options to every run of every pipeline
	// (the fleet adds its own: logger, mux, handover, pause, report).
	RunOptions func(name string) []pipeline.Option
	// API says who may change the pipelines through the API (api.go).
	API APIOptions
}

// State is where a pipeline is.
type State string

// A pipeline's states.
const (
	Starting  State = "starting"  // its run is opening its sources and sinks
	Running   State = "running"   // polling
	Paused    State = "paused"    // started, polling held (Pause)
	Reloading State = "reloading" // stopping to start a new configuration
	Stopping  State = "stopping"  // stopping for good (delete, shutdown)
	Finished  State = "finished"  // its input ended, everything committed
	Stopped   State = "stopped"   // stopped on request
	Failed    State = "failed"    // its run failed; the others go on
)

// ended reports whether s is a state no run follows.
func (s State) ended() bool { return s == Finished || s == Stopped || s == Failed }

// Fleet is a set of named pipelines, each run on its own.
type Fleet struct {
	o     Options
	start time.Time

	mu       sync.Mutex
	pipes    map[string]*pipe
	removed  []*pipe // deleted pipelines, kept for the summary
	stopping bool
	changed  chan struct{} // a pipeline ended (buffered 1)
	wg       sync.WaitGroup

	reloads *prometheus.CounterVec
}

// New returns an empty fleet.
func New(o Options) *Fleet {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Fleet{o: o, start: time.Now(), pipes: map[string]*pipe{}, changed: make(chan struct{}, 1),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_pipeline_reloads_total",
			Help: "Reloads of a pipeline that started its new configuration, since the process started."}, []string{"pipeline"})}
}

// Problems is a configuration refused: its problems, one line each, as
// weir validate prints them.
type Problems struct {
	Name string
	Err  error
}

func (p *Problems) Error() string { return p.Err.Error() }
func (p *Problems) Unwrap() error { return p.Err }

// Apply loads data as the configuration of the pipeline name and starts it,
// or, when it runs already with another configuration, reloads it; the same
// configuration again changes nothing. A configuration with problems is
// refused with a *Problems, and what runs goes on. origin says where the
// configuration came from (a file's path, or "api").
func (f *Fleet) Apply(name, origin string, data []byte) (created bool, err error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	spec, err := f.o.Load(origin, data)
	if err != nil {
		return false, &Problems{Name: name, Err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping {
		return false, errors.New("fleet: shutting down: no pipeline is started or changed")
	}
	if p, ok := f.pipes[name]; ok {
		p.reload(origin, data, spec)
		return false, nil
	}
	p := newPipe(f, name, origin, data, spec)
	f.pipes[name] = p
	f.reloads.WithLabelValues(name)
	f.wg.Add(1)
	go func() { defer f.wg.Done(); p.loop() }()
	return true, nil
}

// CheckName says whether name can name a pipeline: letters, digits, '_'
// and '-', 1 to 64 of them (it is a URL path segment and a metric label).
func CheckName(name string) error {
	ok := name != "" && len(name) <= 64
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("pipeline name %q: use 1 to 64 letters, digits, '_' and '-' (a file's name without .yaml, or the name in the request path)", name)
	}
	return nil
}

// ErrNoPipeline is returned for a name the fleet does not run.
var ErrNoPipeline = errors.New("no such pipeline")

func (f *Fleet) get(name string) (*pipe, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pipes[name]
	if !ok {
		return nil, fmt.Errorf("pipeline %q: %w (GET /api/v1/pipelines lists them)", name, ErrNoPipeline)
	}
	return p, nil
}

// Names returns the names of the pipelines, sorted.
func (f *Fleet) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.pipes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Pause holds the pipeline's polling; what is in flight is still written
// and committed, and the sources keep their partitions.
func (f *Fleet) Pause(name string) error {
	p, err := f.get(name)
	if err != nil {
		return err
	}
	return p.setPaused(true)
}

// Resume lets a paused pipeline poll again.
func (f *Fleet) Resume(name string) error {
	p, err := f.get(name)
	if err != nil {
		return err
	}
	return p.setPaused(false)
}

// Delete stops the pipeline gracefully (what is in flight is written and
// committed) and forgets it once it stopped, or ctx ends.
func (f *Fleet) Delete(ctx context.Context, name string) error {
	f.mu.Lock()
	p, ok := f.pipes[name]
	if ok {
		delete(f.pipes, name)
		f.removed = append(f.removed, p)
	}
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("pipeline %q: %w", name, ErrNoPipeline)
	}
	p.stopForGood()
	p.mu.Lock()
	done := p.done // a reload of an ended pipeline makes a new one
	p.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pipeline %s: still stopping: %w", name, ctx.Err())
	}
}

// ErrNotPaused and ErrNoState refuse a reset.
var (
	ErrNotPaused = errors.New("positions are reset only while the pipeline is paused: pause it first")
	ErrNoState   = errors.New("the source keeps no state file weir can reset (its positions live elsewhere, such as a Kafka group or a replication slot)")
)

// Reset moves aside the state files of the pipeline's source (kept beside
// them as FILE.reset-TIME, as weir run --reset-state does), so that it
// starts afresh. Only while paused: the run stops (committing what is in
// flight), the files are moved, and the run starts again, still paused.
func (f *Fleet) Reset(ctx context.Context, name, source string) error {
	p, err := f.get(name)
	if err != nil {
		return err
	}
	return p.reset(ctx, source)
}

// Stop stops every pipeline gracefully and waits for them.
func (f *Fleet) Stop() {
	f.mu.Lock()
	f.stopping = true
	ps := make([]*pipe, 0, len(f.pipes))
	for _, p := range f.pipes {
		ps = append(ps, p)
	}
	f.mu.Unlock()
	for _, p := range ps {
		p.stopForGood()
	}
	f.wg.Wait()
}

// Changed receives (without a guarantee of one per event) when a pipeline
// ended.
func (f *Fleet) Changed() <-chan struct{} { return f.changed }

// Active reports how many pipelines have not ended.
func (f *Fleet) Active() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.pipes {
		if !p.info().State.ended() {
			n++
		}
	}
	return n
}

// Remove stops and forgets the pipelines that came from a file and whose
// name is not in keep (a file removed from the directory, or renamed); it
// returns their names.
func (f *Fleet) Remove(ctx context.Context, keep []string) []string {
	var gone []string
	f.mu.Lock()
	for n, p := range f.pipes {
		if p.fromFile() && !slices.Contains(keep, n) {
			gone = append(gone, n)
		}
	}
	f.mu.Unlock()
	sort.Strings(gone)
	for _, n := range gone {
		_ = f.Delete(ctx, n)
	}
	return gone
}

// Summary is what each pipeline did since the process started, and the
// fleet's verdict.
type Summary struct {
	Pipelines []PipelineSummary
}

// PipelineSummary is one pipeline's part of a Summary.
type PipelineSummary struct {
	Info
	Err    error            // why its last run failed
	Report *pipeline.Report // every run's counts summed; nil before a run ended
}

// Summary returns what every pipeline did, the deleted ones too, by name.
func (f *Fleet) Summary() Summary {
	f.mu.Lock()
	ps := slices.Collect(func(yield func(*pipe) bool) {
		for _, p := range f.pipes {
			if !yield(p) {
				return
			}
		}
	})
	ps = append(ps, f.removed...)
	f.mu.Unlock()
	var s Summary
	for _, p := range ps {
		p.mu.Lock()
		s.Pipelines = append(s.Pipelines, PipelineSummary{Info: p.infoLocked(), Err: p.err, Report: p.total.Report()})
		p.mu.Unlock()
	}
	sort.SliceStable(s.Pipelines, func(i, j int) bool { return s.Pipelines[i].Name < s.Pipelines[j].Name })
	return s
}

// Handler serves the fleet's endpoints (api.go).
func (f *Fleet) Handler(addrBeyondLoopback bool) http.Handler { return f.handler(addrBeyondLoopback) }

// resetState moves aside the state files of source in spec.
func resetState(spec *pipeline.Spec, source string, log *slog.Logger) error {
	i := slices.IndexFunc(spec.Sources, func(s pipeline.SourceSpec) bool { return s.Name == source })
	if i < 0 {
		var have []string
		for _, s := range spec.Sources {
			have = append(have, s.Name)
		}
		return fmt.Errorf("the pipeline has no source %q (its sources: %v)", source, have)
	}
	k, ok := spec.Sources[i].Source.(statestore.Keeper)
	var files []string
	if ok {
		files = k.StateFiles()
	}
	if len(files) == 0 {
		return fmt.Errorf("source %s: %w", source, ErrNoState)
	}
	for _, file := range files {
		if _, err := statestore.Reset(file, statestore.Options{Log: log, Source: source}); err != nil {
			return fmt.Errorf("source %s: %w", source, err)
		}
	}
	return nil
}

// checkResettable refuses, before anything stops, a reset that could not
// be done.
func checkResettable(spec *pipeline.Spec, source string) error {
	i := slices.IndexFunc(spec.Sources, func(s pipeline.SourceSpec) bool { return s.Name == source })
	if i < 0 {
		var have []string
		for _, s := range spec.Sources {
			have = append(have, s.Name)
		}
		return fmt.Errorf("the pipeline has no source %q (its sources: %v)", source, have)
	}
	if k, ok := spec.Sources[i].Source.(statestore.Keeper); !ok || len(k.StateFiles()) == 0 {
		return fmt.Errorf("source %s: %w", source, ErrNoState)
	}
	return nil
}
