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
	rt := &runtime{g: g, o: o, log: o.logger, m: newMetrics(), now: time.Now, stopCh: make(chan struct{}),
		rejects: map[checkpoint.BatchID]*rejection{}, chunks: make(chunkList, freeListSize)}
	if o.hooks.now != nil {
		rt.now = o.hooks.now
	}
	return rt.run(ctx)
}

// runtime is one run of a pipeline.
type runtime struct {
	g   *graph
	o   options
	log *slog.Logger
	m   *metrics
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

	stopping atomic.Bool // no more rewinds: the pipeline is shutting down
	stopOnce sync.Once
	stopCh   chan struct{} // closed by fail
	errMu    sync.Mutex
	err      error

	rejectMu sync.Mutex
	rejects  map[checkpoint.BatchID]*rejection // first rejections, for halt messages

	stallMu sync.Mutex
	stallBy [][]Stall // by source

	// Totals for the progress display, added per batch and per group.
	totalIn, totalOut atomic.Int64
	commitMu          sync.Mutex
	committedBy       []string // by source: a short summary of committed positions

	trCounts []trCount // by transform: totals for the Report, added per batch
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

func (rt *runtime) noteReject(r *rejection) {
	rt.rejectMu.Lock()
	defer rt.rejectMu.Unlock()
	if _, ok := rt.rejects[r.batch]; !ok && len(rt.rejects) < 1024 {
		rt.rejects[r.batch] = r
	}
}
func (rt *runtime) rejection(id checkpoint.BatchID) *rejection {
	rt.rejectMu.Lock()
	defer rt.rejectMu.Unlock()
	return rt.rejects[id]
}

// fail stops the pipeline with err; the first error wins.
func (rt *runtime) fail(err error) {
	rt.stopping.Store(true)
	rt.errMu.Lock()
	first := rt.err == nil
	if first {
		rt.err = err
	}
	rt.errMu.Unlock()
	if first {
		rt.log.Error("pipeline stopping", "err", err)
	}
	rt.stopOnce.Do(func() { close(rt.stopCh) })
}
func (rt *runtime) firstErr() error {
	rt.errMu.Lock()
	defer rt.errMu.Unlock()
	return rt.err
}
func (rt *runtime) run(ctx context.Context) error {
	start := time.Now()
	sp := &rt.g.spec
	rt.trCounts = make([]trCount, len(rt.g.transforms))
	srv, err := rt.serve(sp.Metrics.Address)
	if err != nil {
		return err
	}
	defer srv.stop()

	rt.sinks = make([]*sinkRunner, len(rt.g.sinks))
	for i, sk := range rt.g.sinks {
		rt.sinks[i] = &sinkRunner{rt: rt, idx: i, spec: sk, in: make(chan chunk, 4), log: rt.log.With("sink", sk.Name),
			mRecordsIn: rt.m.recordsIn.WithLabelValues(sk.Name), mRecordsOut: rt.m.recordsOut.WithLabelValues(sk.Name),
			mFlushTime: rt.m.flushTime.WithLabelValues(sk.Name), mSkipped: rt.m.sinkSkipped.WithLabelValues(sk.Name)}
	}
	for i, d := range rt.g.deadLetter {
		if d >= 0 {
			rt.sinks[i].dl = rt.sinks[d]
		}
	}
	for i, s := range rt.sinks {
		if err := s.spec.Sink.Open(ctx); err != nil {
			for _, o := range rt.sinks[:i] {
				_ = o.spec.Sink.Close(context.WithoutCancel(ctx))
			}
			return fmt.Errorf("pipeline: sink %s: open: %w", s.spec.Name, err)
		}
	}
	rt.stallBy = make([][]Stall, len(sp.Sources))
	rt.byName = map[string]*sourceRunner{}
	for i, ss := range sp.Sources {
		rt.sources = append(rt.sources, newSourceRunner(rt, i, ss))
		rt.byName[ss.Name] = rt.sources[i]
	}
	rt.workers = make([]*worker, goruntime.GOMAXPROCS(0))
	for i := range rt.workers {
		rt.workers[i] = newWorker(rt)
	}

	// hardCtx is for connector calls: it outlives ctx by ShutdownTimeout, so
	// that in-flight data can still be written after a graceful stop began.
	hardCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	pollCtx, pollCancel := context.WithCancel(ctx)
	defer pollCancel()

	// Each sink's input closes once nothing can send to it any more: the
	// workers, and every sink that dead-letters into it.
	feeders := make([]sync.WaitGroup, len(rt.sinks))
	for i, s := range rt.sinks {
		feeders[i].Add(1)
		if s.dl != nil {
			feeders[s.dl.idx].Add(1)
		}
	}
	var sinksWG sync.WaitGroup
	for i, s := range rt.sinks {
		sinksWG.Add(2)
		go func() {
			defer sinksWG.Done()
			s.run(hardCtx)
			if s.dl != nil {
				feeders[s.dl.idx].Done()
			}
		}()
		go func() {
			defer sinksWG.Done()
			feeders[i].Wait()
			close(s.in)
		}()
	}
	var workersWG sync.WaitGroup
	for _, w := range rt.workers {
		workersWG.Go(w.run)
	}
	final := make(chan struct{})
	var cpWG, pollWG sync.WaitGroup
	for _, s := range rt.sources {
		cpWG.Go(func() { s.checkpoint(hardCtx, final) })
		pollWG.Go(func() { s.poll(pollCtx, hardCtx) })
	}
	allFinished := make(chan struct{})
	go func() {
		for _, s := range rt.sources {
			select {
			case <-s.finished:
			case <-rt.stopCh:
				return
			}
		}
		close(allFinished)
	}()
	stopProgress := rt.progress()

	select {
	case <-ctx.Done():
		rt.log.Info("shutting down")
	case <-rt.stopCh:
	case <-allFinished:
		rt.log.Info("all input read and committed")
	}
	rt.stopping.Store(true)
	pollCancel()
	shutdownTimer := time.AfterFunc(sp.Checkpoint.ShutdownTimeout, func() {
		rt.log.Warn("shutdown timeout: abandoning in-flight writes; nothing unwritten is committed")
		hardCancel()
	})
	defer shutdownTimer.Stop()
	pollWG.Wait()
	rt.inMu.Lock()
	rt.inClosed = true
	for _, w := range rt.workers {
		close(w.in)
	}
	rt.inMu.Unlock()
	workersWG.Wait()
	for i := range rt.sinks {
		feeders[i].Done()
	}
	sinksWG.Wait()
	// Every reference is released now (or leaked): the final drain and commit
	// see everything that will ever resolve.
	close(final)
	cpWG.Wait()
	stopProgress()
	var rep *Report
	if rt.o.report != nil {
		rep = rt.report(start)
		defer func() { rep.Elapsed = time.Since(start); rt.o.report(rep) }()
	}

	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sp.Checkpoint.ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, s := range rt.sources {
		if err := s.src.Close(closeCtx); err != nil {
			errs = append(errs, fmt.Errorf("pipeline: source %s: close: %w", s.spec.Name, err))
		}
	}
	for _, s := range rt.sinks {
		if err := s.spec.Sink.Close(closeCtx); err != nil {
			errs = append(errs, fmt.Errorf("pipeline: sink %s: close: %w", s.spec.Name, err))
		}
	}
	if err := rt.firstErr(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// sourceNamed returns the source called name, or nil.
func (rt *runtime) sourceNamed(name string) *sourceRunner { return rt.byName[name] }
