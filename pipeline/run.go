package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/record"
)

// Run runs the pipeline spec until ctx is cancelled, every source reached its
// end of input and everything was committed, or a failure stops it.
//
// Cancelling ctx is a graceful shutdown: polling stops, in-flight batches
// get Checkpoint.ShutdownTimeout to be written and flushed, the final
// watermarks are committed, and Run returns nil. Either way nothing is
// committed past what the sinks made durable.
//
// Run returns an error wrapping ErrSpec for an invalid spec, a *HaltError
// when a failure policy stopped the pipeline, and other errors for connectors
// that failed to open, poll or close.
func Run(ctx context.Context, spec *Spec, opts ...Option) error {
	g, err := compile(spec)
	if err != nil {
		return err
	}
	o := options{logger: slog.Default(), interval: time.Second}
	for _, f := range opts {
		f(&o)
	}
	rt := &runtime{g: g, o: o, log: o.logger, m: newMetrics(), now: time.Now, stopCh: make(chan struct{}), allDone: make(chan struct{}),
		chunks: make(chunkList, freeListSize)}
	if o.hooks.now != nil {
		rt.now = o.hooks.now
	}
	if o.gatherer != nil {
		o.gatherer(rt.m.reg)
	}
	return rt.run(ctx)
}

// runtime is one run of a pipeline.
type runtime struct {
	g   *graph
	o   options
	log *slog.Logger
	m   *metrics
	// now is the runtime's one clock: time.Now, or the test hook's. What a
	// time is stored for and compared with reads it; durations measured
	// for metrics and the Report, the status's rates and the retry budgets
	// keep the monotonic time.Now.
	now func() time.Time

	sources []*sourceRunner
	byName  map[string]*sourceRunner
	sinks   []*sinkRunner
	workers []*worker
	chunks  chunkList // record slices for chunks, shared by workers and sinks

	// inMu orders the closing of the workers' inputs (write lock) with the
	// flush requests a Revoke sends them (read lock). Revoke may come from a
	// source's own goroutine at any time before Close returns (a Kafka
	// client's rebalance callback, or its leaving the group in Close), so
	// also after polling stopped and the inputs closed: it then sends nothing.
	inMu     sync.RWMutex
	inClosed bool

	stopping   atomic.Bool   // no more rewinds: the pipeline is shutting down; set by fail and shutdown, read by the checkpointer goroutines
	unfinished atomic.Int64  // sources not finished yet: counted down by the checkpointer goroutines
	allDone    chan struct{} // closed when every source finished
	stopOnce   sync.Once
	stopCh     chan struct{}         // closed by fail
	err        atomic.Pointer[error] // the first failure: set once, by whoever fails first

	rejects rejectList // first rejections, for halt messages: pushed by the workers, read by the checkpointer goroutines

	// stallBy is the latest stall snapshot of each source, by source index:
	// written only by that source's checkpointer goroutine, a new slice each
	// time, read by /debug/stalls and the status.
	stallBy []atomic.Pointer[[]Stall]

	// Totals for the progress display and the status: totalIn added by the
	// pollers per batch, totalOut by the sinks and persisters per group.
	totalIn, totalOut atomic.Int64

	trCounts []trCount // by transform: totals for the Report, added per batch

	events eventRing   // recent events, for the status (events.go)
	status statusState // what /api/v1/status keeps between reads (status.go)
	taps   taps        // open taps (tap.go)
}

// trCount is one transform's totals, added by the workers once per batch.
type trCount struct{ in, out, rej atomic.Int64 }

// rejection is a record a transform failed on.
type rejection struct {
	component string
	origin    record.Origin
	batch     checkpoint.BatchID
	err       error
}

// fail stops the pipeline with err; the first error wins.
func (rt *runtime) fail(err error) {
	rt.stopping.Store(true)
	first := rt.err.CompareAndSwap(nil, &err)
	if first {
		rt.log.Error("pipeline stopping", "err", err)
		rt.events.add(Event{Kind: EventStopping, Message: err.Error()})
	}
	rt.stopOnce.Do(func() { close(rt.stopCh) })
}
func (rt *runtime) firstErr() error {
	if e := rt.err.Load(); e != nil {
		return *e
	}
	return nil
}
func (rt *runtime) run(ctx context.Context) error {
	start := time.Now()
	srv, err := rt.open(ctx)
	if err != nil {
		rt.taps.close()
		rt.status.stopped.Store(true) // an embedder's mux may still be asked
		if ctx.Err() != nil {
			// Asked to stop while a sink was opening (a SIGTERM at start):
			// no source was opened and nothing read, so this is a stop, not
			// a failure, as a source's Open cut short by the stop is.
			rt.log.Info("stopped while opening: nothing was read", "cause", err)
			return nil
		}
		return err
	}
	defer srv.stop()
	gs := rt.start(ctx)
	defer gs.hardCancel()
	if h := rt.o.hooks.started; h != nil {
		h(rt)
	}
	if rt.o.started != nil {
		rt.o.started()
	}
	select {
	case <-ctx.Done():
		rt.log.Info("shutting down")
		rt.events.add(Event{Kind: EventStopping, Message: "shutting down: asked to stop"})
	case <-rt.stopCh:
	case <-rt.allDone:
		rt.log.Info("all input read and committed")
		rt.events.add(Event{Kind: EventStopping, Message: "all input read and committed"})
	}
	rt.shutdown(gs)
	rt.taps.close()
	rt.status.stopped.Store(true)
	var rep *Report
	if rt.o.report != nil {
		rep = rt.report(start)
		defer func() { rep.Elapsed = time.Since(start); rt.o.report(rep) }()
	}
	errs := rt.closeAll(ctx)
	if err := rt.firstErr(); err != nil {
		return err
	}
	if err := rt.incomplete(); err != nil {
		errs = append([]error{err}, errs...)
	}
	return errors.Join(errs...)
}

// open builds the runners, starts the HTTP endpoints and opens every sink.
// Nothing runs yet; on error everything opened is closed again.
func (rt *runtime) open(ctx context.Context) (server, error) {
	sp := &rt.g.spec
	rt.trCounts = make([]trCount, len(rt.g.transforms))
	rt.m.known(rt.g)
	rt.sinks = make([]*sinkRunner, len(rt.g.sinks))
	for i, sk := range rt.g.sinks {
		rt.sinks[i] = newSinkRunner(rt, i, sk)
	}
	for i, d := range rt.g.deadLetter {
		if d >= 0 {
			rt.sinks[i].dl = rt.sinks[d]
		}
	}
	rt.stallBy = make([]atomic.Pointer[[]Stall], len(sp.Sources))
	rt.byName = map[string]*sourceRunner{}
	if h := rt.o.handover; h != nil {
		h.begin()
	}
	for i, ss := range sp.Sources {
		rt.sources = append(rt.sources, newSourceRunner(rt, i, ss))
		rt.byName[ss.Name] = rt.sources[i]
	}
	rt.takeHandedOn(ctx)
	rt.unfinished.Store(int64(len(rt.sources)))
	rt.workers = make([]*worker, goruntime.GOMAXPROCS(0))
	for i := range rt.workers {
		rt.workers[i] = newWorker(rt, i)
	}
	rt.initStatus()
	// The endpoints read the runners: they start once the runners exist.
	srv, err := rt.serve(sp.Metrics.Address)
	if err != nil {
		rt.closeHandedOn(ctx)
		return server{}, err
	}
	for i, s := range rt.sinks {
		if err := s.spec.Sink.Open(ctx); err != nil {
			for _, o := range rt.sinks[:i] {
				_ = o.spec.Sink.Close(context.WithoutCancel(ctx))
			}
			srv.stop()
			rt.closeHandedOn(ctx)
			return server{}, fmt.Errorf("pipeline: sink %s: open: %w", s.spec.Name, err)
		}
	}
	return srv, nil
}

// goroutines is what start started and shutdown ends (docs/runtime.md has
// the table of every goroutine and what ends it).
type goroutines struct {
	// hardCtx is for connector calls: it outlives the run's context by
	// ShutdownTimeout, so that in-flight data can still be written after a
	// graceful stop began. pollCtx stops the pollers.
	hardCtx    context.Context
	hardCancel context.CancelFunc
	pollCancel context.CancelFunc
	// feeders counts, per sink, what can still send to it: the workers,
	// and every sink that dead-letters into it. Its input closes at zero.
	feeders                 []sync.WaitGroup
	pollers, workers, sinks sync.WaitGroup
	checkpointers           sync.WaitGroup
	final                   chan struct{} // the checkpointers' last round
	stopWatch, watched      chan struct{} // stop the stall watcher; closed when it returned
	stopProgress            func()
}

// start starts every goroutine of the run, from the sinks back to the
// pollers, so that nothing sends to a stage that does not run yet.
func (rt *runtime) start(ctx context.Context) *goroutines {
	gs := &goroutines{final: make(chan struct{}), feeders: make([]sync.WaitGroup, len(rt.sinks))}
	gs.hardCtx, gs.hardCancel = context.WithCancel(context.WithoutCancel(ctx))
	var pollCtx context.Context
	pollCtx, gs.pollCancel = context.WithCancel(ctx)
	for i, s := range rt.sinks {
		gs.feeders[i].Add(1)
		if s.dl != nil {
			gs.feeders[s.dl.idx].Add(1)
		}
	}
	for i, s := range rt.sinks {
		gs.sinks.Go(func() {
			s.run(gs.hardCtx)
			if s.dl != nil {
				gs.feeders[s.dl.idx].Done()
			}
		})
		gs.sinks.Go(func() {
			gs.feeders[i].Wait()
			close(s.in)
		})
	}
	for _, w := range rt.workers {
		gs.workers.Go(w.run)
	}
	for _, s := range rt.sources {
		gs.checkpointers.Go(func() { s.checkpoint(gs.hardCtx, gs.final) })
		gs.pollers.Go(func() { s.poll(pollCtx, gs.hardCtx) })
	}
	gs.stopWatch, gs.watched = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gs.watched)
		rt.watch(gs.stopWatch)
	}()
	gs.stopProgress = rt.progress()
	return gs
}

// shutdown ends the run's goroutines in the one order that loses nothing
// and commits only what is durable:
//
//  1. No more rewinds; the pollers stop (their context is cancelled) and
//     the shutdown timer starts: in-flight data gets ShutdownTimeout to
//     become durable, after which connector calls are cancelled (hardCtx)
//     and what is unwritten is released as failed.
//  2. Once every poller returned, the workers' inputs close (under inMu, so
//     that a Revoke's flush request never sends on a closed input); the
//     workers finish the batches they hold.
//  3. Once the workers returned, each sink's input closes as soon as the
//     sinks that dead-letter into it are done too; each sink flushes its
//     last group and waits for its sealed groups.
//  4. Every reference is then released (or leaked): the checkpointers take
//     their final round (drain, commit) and return.
//  5. The progress display stops.
//
// Sources and sinks are closed afterwards (closeAll), with their own
// ShutdownTimeout: a graceful stop may so take up to twice ShutdownTimeout
// in the worst case, once for the data and once for closing.
func (rt *runtime) shutdown(gs *goroutines) {
	rt.stopping.Store(true)
	gs.pollCancel()
	timer := time.AfterFunc(rt.g.spec.Checkpoint.ShutdownTimeout, func() {
		rt.log.Warn("shutdown timeout: abandoning in-flight writes; nothing unwritten is committed")
		gs.hardCancel()
	})
	defer timer.Stop()
	gs.pollers.Wait()
	rt.inMu.Lock()
	rt.inClosed = true
	for _, w := range rt.workers {
		close(w.in)
	}
	rt.inMu.Unlock()
	gs.workers.Wait()
	for i := range rt.sinks {
		gs.feeders[i].Done()
	}
	gs.sinks.Wait()
	close(gs.final)
	gs.checkpointers.Wait()
	close(gs.stopWatch)
	<-gs.watched
	gs.stopProgress()
}

// closeAll closes every source and sink, within ShutdownTimeout.
func (rt *runtime) closeAll(ctx context.Context) []error {
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rt.g.spec.Checkpoint.ShutdownTimeout)
	defer cancel()
	var errs []error
	clean := rt.firstErr() == nil && rt.incomplete() == nil
	for _, s := range rt.sources {
		if clean && rt.handOn(closeCtx, s) {
			continue
		}
		if err := s.src.Close(closeCtx); err != nil {
			errs = append(errs, fmt.Errorf("pipeline: source %s: close: %w", s.spec.Name, err))
		}
	}
	for _, s := range rt.sinks {
		if err := s.spec.Sink.Close(closeCtx); err != nil {
			errs = append(errs, fmt.Errorf("pipeline: sink %s: close: %w", s.spec.Name, err))
		}
	}
	return errs
}

// incomplete returns an *IncompleteError when the final commit left data
// behind, nil otherwise.
func (rt *runtime) incomplete() error {
	e := &IncompleteError{}
	for _, s := range rt.sources {
		for _, p := range s.ck.leftBehind {
			e.Partitions = append(e.Partitions, PartitionRef{Source: s.spec.Name, Partition: p})
		}
		e.InFlight += s.ck.leftInFlight
	}
	if len(e.Partitions) == 0 && e.InFlight == 0 {
		return nil
	}
	now := rt.now()
	for _, s := range rt.sinks {
		if f, failing := s.failure(now); failing {
			e.Failing = append(e.Failing, f)
		}
	}
	return e
}

// sourceFinished notes that a finite source is read, delivered and
// committed; the last one ends the run.
func (rt *runtime) sourceFinished() {
	if rt.unfinished.Add(-1) == 0 {
		close(rt.allDone)
	}
}

// sourceNamed returns the source called name, or nil.
func (rt *runtime) sourceNamed(name string) *sourceRunner { return rt.byName[name] }
