package fleet

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/weir-etl/weir/pipeline"
)

// pipe is one pipeline of the fleet: its configuration, and the loop that
// runs it, one run after another as reloads and resets ask.
type pipe struct {
	f    *Fleet
	name string

	mu     sync.Mutex
	origin string // a file's path, or "api"
	data   []byte
	spec   *pipeline.Spec // of the running (or last) run
	state  State
	err    error // why the last run failed
	since  time.Time
	// next is a configuration a reload waits to start, once the run
	// stopped; resetSrc a source whose state a reset moves aside then.
	next       *pipeline.Spec
	nextData   []byte
	nextOrigin string
	resetSrc   string
	resetDone  chan error
	forGood    bool // stop for good (delete, shutdown)
	stop       context.CancelFunc
	handover   *pipeline.Handover
	pause      pipeline.Pause
	reloads    int
	runs       int
	generation int // counts the runs started, for the API's readers
	unread     int64

	// gather is the running run's registry; carried holds the counters
	// of the runs before, summed (metrics.go).
	gather  prometheus.Gatherer
	carried map[string]*dto.MetricFamily
	mux     http.Handler // the running run's endpoints
	total   *Totals
	done    chan struct{} // closed when the loop returned
}

func newPipe(f *Fleet, name, origin string, data []byte, spec *pipeline.Spec) *pipe {
	return &pipe{f: f, name: name, origin: origin, data: data, spec: spec, state: Starting, since: time.Now(),
		handover: pipeline.NewHandover(), carried: map[string]*dto.MetricFamily{}, total: &Totals{}, done: make(chan struct{})}
}

// Info is a pipeline's state as the API shows it.
type Info struct {
	Name   string `json:"name"`
	Origin string `json:"origin"` // the file it came from, or "api"
	State  State  `json:"state"`
	Since  string `json:"since"` // RFC 3339, when it entered the state
	Error  string `json:"error,omitempty"`
	// Runs is how many runs started; Reloads how many of them a reload
	// started.
	Runs    int      `json:"runs"`
	Reloads int      `json:"reloads"`
	Sources []string `json:"sources"`
	Sinks   []string `json:"sinks"`
	// Counts are the records since the process started, over every run.
	Counts Counts `json:"counts"`
	// UnreadBytes is the input its sources will never read, over every run.
	UnreadBytes int64 `json:"unread_bytes"`
}

// Counts are a pipeline's record counts since the process started.
type Counts struct {
	Read    int64 `json:"read"`
	Written int64 `json:"written"`
	Dropped int64 `json:"dropped"` // by transforms, on purpose
	Errors  int64 `json:"errors"`  // rejected by transforms and sinks
}

func (p *pipe) info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.infoLocked()
}

func (p *pipe) infoLocked() Info {
	in := Info{Name: p.name, Origin: p.origin, State: p.state, Since: p.since.UTC().Format(time.RFC3339Nano), Runs: p.runs, Reloads: p.reloads,
		Sources: []string{}, Sinks: []string{}, UnreadBytes: p.unread}
	if p.err != nil {
		in.Error = p.err.Error()
	}
	for _, s := range p.spec.Sources {
		in.Sources = append(in.Sources, s.Name)
	}
	for _, s := range p.spec.Sinks {
		in.Sinks = append(in.Sinks, s.Name)
	}
	in.Counts = p.countsLocked()
	return in
}

func (p *pipe) fromFile() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.origin != "api"
}

func (p *pipe) setState(s State) {
	if p.state != s {
		p.state, p.since = s, time.Now()
	}
}

// loop runs the pipeline until a run ends with no reload or reset waiting.
func (p *pipe) loop() {
	defer close(p.done)
	defer func() {
		if err := p.handover.Close(context.Background()); err != nil {
			p.f.o.Log.Warn("closing a source kept for a reload", "pipeline", p.name, "err", err)
		}
	}()
	defer p.f.signal()
	log := p.f.o.Log.With("pipeline", p.name)
	for {
		p.mu.Lock()
		spec := p.spec
		// In a fleet the pipelines share the fleet's listener: each run's
		// endpoints are served under /pipelines/NAME/ (api.go).
		spec.Metrics.Address = "off"
		ctx, cancel := context.WithCancel(context.Background())
		p.stop = cancel
		p.runs++
		p.generation++
		p.setState(Starting)
		stopped := p.forGood
		p.mu.Unlock()
		if stopped {
			cancel()
		}

		mux := http.NewServeMux()
		var report *pipeline.Report
		opts := []pipeline.Option{
			pipeline.WithLogger(log), pipeline.WithHandover(p.handover), pipeline.WithPause(&p.pause), pipeline.WithServeMux(mux),
			pipeline.WithReport(func(r *pipeline.Report) { report = r }),
			pipeline.WithGatherer(func(g prometheus.Gatherer) { p.mu.Lock(); p.gather = g; p.mu.Unlock() }),
			pipeline.WithStarted(func() {
				p.mu.Lock()
				defer p.mu.Unlock()
				p.mux = mux
				if p.state == Starting {
					p.setState(Running)
					if p.pause.Paused() {
						p.setState(Paused)
					}
				}
			}),
		}
		if p.f.o.RunOptions != nil {
			opts = append(opts, p.f.o.RunOptions(p.name)...)
		}
		err := pipeline.Run(ctx, spec, opts...)
		cancel()

		p.mu.Lock()
		p.carry()
		p.mux = nil
		if report != nil {
			p.total.Add(report)
			p.unread += report.UnreadBytes()
		}
		switch {
		case err == nil && !p.forGood && p.resetSrc != "":
			rerr := resetState(spec, p.resetSrc, log)
			p.resetDone <- rerr
			p.resetSrc, p.resetDone = "", nil
			if fresh, lerr := p.f.o.Load(p.origin, p.data); lerr == nil {
				p.spec = fresh
				p.mu.Unlock()
				continue
			} else {
				err = lerr
			}
		case err == nil && !p.forGood && p.next != nil:
			p.spec, p.data, p.origin, p.next, p.nextData = p.next, p.nextData, p.nextOrigin, nil, nil
			p.reloads++
			p.f.reloads.WithLabelValues(p.name).Inc()
			log.Info("reload: the previous configuration stopped with everything delivered committed; starting the new one",
				"sources_kept", p.handover.Kept())
			p.mu.Unlock()
			continue
		}
		if p.resetDone != nil {
			p.resetDone <- errors.New("the pipeline stopped before its positions were reset")
			p.resetSrc, p.resetDone = "", nil
		}
		switch {
		case err != nil:
			p.err = err
			p.setState(Failed)
			log.Error("pipeline failed; the other pipelines go on", "err", err)
		case p.forGood:
			p.setState(Stopped)
		default:
			p.setState(Finished)
		}
		p.handover.Keep()
		p.mu.Unlock()
		return
	}
}

func (f *Fleet) signal() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// reload asks the running run to stop and the loop to start spec; sources
// whose settings did not change are handed on (pipeline.Handover).
func (p *pipe) reload(origin string, data []byte, spec *pipeline.Spec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	log := p.f.o.Log.With("pipeline", p.name)
	same := p.next == nil && string(data) == string(p.data)
	if p.next != nil {
		same = string(data) == string(p.nextData)
	}
	if same && !p.state.ended() {
		return
	}
	if p.state.ended() {
		// Nothing runs: start it again with the new configuration.
		p.spec, p.data, p.origin, p.err = spec, data, origin, nil
		p.forGood = false
		p.done = make(chan struct{})
		p.reloads++
		p.f.reloads.WithLabelValues(p.name).Inc()
		p.f.wg.Add(1)
		go func() { defer p.f.wg.Done(); p.loop() }()
		log.Info("reload: the pipeline had stopped; starting the new configuration")
		return
	}
	p.next, p.nextData, p.nextOrigin = spec, data, origin
	keep := pipeline.UnchangedSources(p.spec, spec)
	p.handover.Keep(keep...)
	p.setState(Reloading)
	log.Info("reload: the new configuration is valid; stopping this pipeline (what is in flight is written and committed) to start it",
		"sources_to_keep", keep)
	p.stop()
}

var errEnded = errors.New("the pipeline is not running (it finished, stopped or failed): apply its configuration again to start it")

func (p *pipe) setPaused(paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state.ended() {
		return errEnded
	}
	if paused {
		p.pause.Pause()
		if p.state == Running {
			p.setState(Paused)
		}
	} else {
		p.pause.Resume()
		if p.state == Paused {
			p.setState(Running)
		}
	}
	return nil
}

func (p *pipe) reset(ctx context.Context, source string) error {
	p.mu.Lock()
	switch {
	case p.state.ended():
		p.mu.Unlock()
		return errEnded
	case !p.pause.Paused() || p.state != Paused:
		p.mu.Unlock()
		return ErrNotPaused
	case p.next != nil || p.resetSrc != "":
		p.mu.Unlock()
		return errors.New("a reload or a reset is already waiting for the pipeline to stop: try again once it is paused again")
	}
	if err := checkResettable(p.spec, source); err != nil {
		p.mu.Unlock()
		return err
	}
	done := make(chan error, 1)
	p.resetSrc, p.resetDone = source, done
	p.handover.Keep()
	p.setState(Reloading)
	p.stop()
	p.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipe) stopForGood() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forGood = true
	p.next = nil
	p.handover.Keep()
	if !p.state.ended() {
		p.setState(Stopping)
	}
	if p.stop != nil {
		p.stop()
	}
}
