package pipeline

import (
	"context"
	"slices"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/cacheline"
	"github.com/weir-etl/weir/pipeline/internal/tap"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/transform"
)

// work is one poll batch on its way to a transform worker. A flush work item
// carries no records: it asks every sink to flush its current group now (a
// finite source reached its end, so waiting for MaxAge would only add latency).
type work struct {
	src   *sourceRunner
	batch *connector.Batch
	gen   uint64 // the partition's assignment when the batch was issued
	flush bool
	// caughtUp marks a flush request sent because the source caught up:
	// sinks honour it at most once per MaxAge, once it came through every
	// worker the source's batches went through (caughtup.go). seq numbers
	// the source's requests.
	caughtUp bool
	seq      uint64
	// pressure, when positive, marks a flush request sent because the
	// source paused at its in-flight limits, with the batches it had in
	// flight then: a sink honours it when its open group holds enough of
	// them (caughtup.go). It is numbered in the same seq as caughtUp.
	pressure int64
}

// chunk is what a worker hands a sink: records of one poll batch routed to it.
// The sink returns recs to the runtime's chunk list when done with the slice.
// src, part, end and gen say which batch (see sinkprogress.go); src is nil
// for a chunk of dead letters a sink sends its dead letter sink.
type chunk struct {
	recs     *[]record.Record
	src      *sourceRunner
	part     checkpoint.Partition
	end      checkpoint.Position
	gen      uint64
	flush    bool
	caughtUp bool   // see work.caughtUp; src is the source that caught up
	pressure int64  // see work.pressure; src is the source that paused
	seq      uint64 // the request's number, for caughtUp and pressure
	worker   int    // the worker it came through, for caughtUp and pressure
}

// worker applies the transform DAG to batches. Workers are sharded by source
// partition, so one partition's batches reach each sink in poll order.
type worker struct {
	_       cacheline.Pad // drops and eval are written for every record
	rt      *runtime
	idx     int // in rt.workers
	in      chan work
	inRec   []record.Record    // by transform: the record being processed
	scratch [][]record.Record  // by transform: Process output buffer
	routes  [][]int            // by transform: Route output buffer
	targets [][]target         // by transform: union of matched outputs' targets
	out     []*[]record.Record // by sink: chunk being filled
	trIn    []int              // by transform: records in, flushed to metrics per batch
	trOut   []int              // by transform: records out
	trRej   []int              // by transform: records it failed on
	tap     *tap.Table         // this batch's taps, nil when nobody taps (tap.go)
	// drops holds the references of the records this batch dropped (a
	// filter's, a transform's with no output, a record with no target) until
	// the batch is done: they are released as Delivered together, one atomic
	// add for a run of one poll batch's records instead of one a record.
	drops checkpoint.AckSet
	// eval is the filter chain's evaluation state, kept for a whole batch
	// rather than taken from a pool for every record (filterBatch).
	eval transform.Scratch
	_    cacheline.Pad
}

func newWorker(rt *runtime, idx int) *worker {
	n := len(rt.g.transforms)
	// The counters are written for every record, so they get lines of
	// their own (the other workers' are made right beside them).
	counts := cacheline.Make[int](3 * n)
	return &worker{
		rt:      rt,
		idx:     idx,
		in:      make(chan work, 4),
		inRec:   make([]record.Record, n),
		scratch: make([][]record.Record, n),
		routes:  make([][]int, n),
		targets: make([][]target, n),
		out:     make([]*[]record.Record, len(rt.g.sinks)),
		trIn:    counts[:n:n],
		trOut:   counts[n : 2*n : 2*n],
		trRej:   counts[2*n:],
	}
}

func (w *worker) run() {
	for wk := range w.in {
		if wk.flush {
			for _, s := range w.rt.sinks {
				s.in <- chunk{flush: true, caughtUp: wk.caughtUp, pressure: wk.pressure, src: wk.src, seq: wk.seq, worker: w.idx}
			}
			continue
		}
		w.batch(wk.src, wk.batch, wk.gen)
	}
}

func (w *worker) batch(src *sourceRunner, b *connector.Batch, gen uint64) {
	w.tapBatch(src, b)
	part, end := b.Partition, b.End
	outs := w.rt.g.sourceOut[src.idx]
	switch fc := w.rt.g.filterChain[src.idx]; {
	case len(outs) == 1 && outs[0].sink:
		w.whole(outs[0].idx, b)
	case fc != nil && w.tap == nil: // a tap samples each transform's output: the general path
		w.filterBatch(fc, b)
		last := len(fc.sinks) - 1
		for _, k := range fc.sinks[:last] {
			w.copyTo(k, b.Records)
		}
		w.whole(fc.sinks[last], b)
	default:
		for i := range b.Records {
			w.emit(outs, b.Records[i])
		}
	}
	w.drops.Ack()
	src.putBatch(b)
	for i, p := range w.out {
		if p == nil || len(*p) == 0 {
			continue
		}
		w.out[i] = nil
		w.rt.sinks[i].in <- chunk{recs: p, src: src, part: part, end: end, gen: gen}
	}
	for i := range w.trIn {
		if w.trIn[i] > 0 {
			c := &w.rt.trCounts[i]
			c.in.Add(int64(w.trIn[i]))
			c.out.Add(int64(w.trOut[i]))
			name := w.rt.g.transforms[i].name
			w.rt.m.recordsIn.WithLabelValues(name).Add(float64(w.trIn[i]))
			w.rt.m.recordsOut.WithLabelValues(name).Add(float64(w.trOut[i]))
			w.trIn[i], w.trOut[i] = 0, 0
		}
		if w.trRej[i] > 0 {
			w.rt.trCounts[i].rej.Add(int64(w.trRej[i]))
			w.rt.m.rejected.WithLabelValues(w.rt.g.transforms[i].name).Add(float64(w.trRej[i]))
			w.trRej[i] = 0
		}
	}
}

// whole hands the records of b to sink i as they are: the chunk takes the
// batch's slice instead of a copy of every record, and the batch, going back
// to its free list, takes the chunk's empty slice.
func (w *worker) whole(i int, b *connector.Batch) {
	switch {
	case len(b.Records) == 0:
	case w.out[i] != nil: // the sink has records of this batch already (dead letters)
		*w.out[i] = append(*w.out[i], b.Records...)
	default:
		p := w.rt.chunks.get()
		*p, b.Records = b.Records, (*p)[:0]
		w.out[i] = p
	}
}

// copyTo hands sink k a copy of recs, records of one poll batch that hold
// their references, each copy with a reference of its own: one atomic add
// for the run of records that share the first one's batch (all of them, as
// a filter chain leaves them). The copies share the records' bytes and
// decoded fields, as emit's do when every target is a sink: sinks only read.
func (w *worker) copyTo(k int, recs []record.Record) {
	if len(recs) == 0 {
		return
	}
	p := w.out[k]
	if p == nil {
		p = w.rt.chunks.get()
		*p = (*p)[:0]
		w.out[k] = p
	}
	start := len(*p)
	*p = append(*p, recs...)
	first := *refOf(&recs[0])
	same := 0
	for i := start; i < len(*p); i++ {
		switch r := refOf(&(*p)[i]); {
		case *r == first:
			same++
		case !r.IsZero():
			*r = r.Clone()
		}
	}
	if same > 0 && !first.IsZero() {
		first.CloneN(same)
	}
}

// filterBatch runs the filter chain fc over the records of b where they lie:
// a map changes a record in its slot, and a record every step keeps moves
// down over the dropped ones before it, so that b keeps the kept records in
// their order, and nothing is copied while nothing is dropped. A record
// dropped is delivered; one a step fails on goes the way of that transform's
// rejects, as in apply.
func (w *worker) filterBatch(fc *filterChain, b *connector.Batch) {
	recs := b.Records
	n := 0
	for i := range recs {
		if !w.keep(fc, &recs[i]) {
			continue
		}
		if n != i {
			recs[n] = recs[i]
		}
		n++
	}
	clear(recs[n:])
	b.Records = recs[:n]
	w.eval.Release()
}

// keep runs rec, which holds its reference, through fc's steps, and reports
// whether every one kept it; otherwise the reference is consumed.
func (w *worker) keep(fc *filterChain, rec *record.Record) bool {
	for k, st := range fc.steps {
		i := fc.transforms[k]
		w.trIn[i]++
		var ok bool
		var err error
		if st.ip != nil {
			ok, err = st.ip.Apply(&w.eval, rec)
		} else {
			ok, err = st.p.Keep(rec)
		}
		if err != nil {
			ref := *refOf(rec)
			*refOf(rec) = checkpoint.AckRef{}
			w.reject(i, rec, ref, err)
			return false
		}
		if !ok {
			w.drops.Add(refOf(rec))
			return false
		}
		w.trOut[i]++
	}
	return true
}

// emit sends rec, which holds one reference, to every target: each but the last
// gets a copy and a clone of the reference, the last gets rec itself. With no
// target the record is dropped, which is a delivery.
func (w *worker) emit(ts []target, rec record.Record) {
	if len(ts) == 0 {
		w.drops.Add(refOf(&rec))
		return
	}
	// A transform may change its input in place (a map sets fields), so a
	// copy bound for one gets fields of its own. Sinks only read records, so
	// when every target is a sink the copies share the decoded fields: the
	// concurrent reads are safe, and the deep copy (a map per record and
	// sink) would be pure garbage.
	shared := true
	for _, t := range ts {
		shared = shared && t.sink
	}
	for _, t := range ts[:len(ts)-1] {
		c := rec
		if !shared {
			c = rec.CloneData()
		}
		*refOf(&c) = refOf(&rec).Clone()
		w.to(t, c)
	}
	w.to(ts[len(ts)-1], rec)
}

func (w *worker) to(t target, rec record.Record) {
	if t.sink {
		p := w.out[t.idx]
		if p == nil {
			p = w.rt.chunks.get()
			w.out[t.idx] = p
		}
		*p = append(*p, rec)
		return
	}
	w.apply(t.idx, rec)
}

// apply runs transform i on rec. The reference is taken off the record first,
// so that outputs (a map appends its modified input) start with none; the
// runtime then gives each output a clone and the last one the original.
func (w *worker) apply(i int, in record.Record) {
	ct := &w.rt.g.transforms[i]
	// Transforms take a pointer; pointing into the worker's own slot rather
	// than at a local keeps the record off the heap. A transform is never
	// re-entered while it runs, because the graph is acyclic.
	rec := &w.inRec[i]
	*rec = in
	defer func() { *rec = record.Record{} }()
	ref := *refOf(rec)
	*refOf(rec) = checkpoint.AckRef{}
	w.trIn[i]++
	if ct.r != nil {
		idx, err := ct.r.Route(rec, w.routes[i][:0])
		w.routes[i] = idx[:0]
		if err != nil {
			w.reject(i, rec, ref, err)
			return
		}
		w.tapRoute(i, idx, rec)
		ts := w.targets[i][:0]
		for _, k := range idx {
			ts = append(ts, ct.outs[k]...)
		}
		w.targets[i] = ts[:0]
		if len(idx) > 0 {
			w.trOut[i]++
		}
		out := *rec
		*refOf(&out) = ref
		w.emit(ts, out)
		return
	}
	out, err := ct.t.Process(rec, w.scratch[i][:0])
	if err != nil {
		clear(out)
		w.scratch[i] = out[:0]
		w.reject(i, rec, ref, err)
		return
	}
	w.trOut[i] += len(out)
	w.tapOut(i, out)
	if len(out) == 0 {
		w.drops.Add(&ref)
	}
	for k := range out {
		if k == len(out)-1 {
			*refOf(&out[k]) = ref
		} else {
			*refOf(&out[k]) = ref.Clone()
		}
		w.emit(ct.outs[0], out[k])
	}
	clear(out)
	w.scratch[i] = out[:0]
}

// reject routes a record that transform i failed on by the transform's
// rejectPlan (see graph.planRejects and docs/runtime.md): to the dead letter
// sinks downstream, each with a reference of ref; or dropped, when no
// acknowledging sink is downstream; or resolved as Rejected, which blocks the
// partition's watermark before the batch and makes the checkpointer halt the
// pipeline. ref is the record's only reference; reject consumes it.
func (w *worker) reject(i int, rec *record.Record, ref checkpoint.AckRef, err error) {
	ct := &w.rt.g.transforms[i]
	w.trRej[i]++
	plan := &ct.reject
	switch {
	case len(plan.deadLetters) > 0:
		last := len(plan.deadLetters) - 1
		for k, d := range plan.deadLetters {
			env := deadLetterRecord(componentTransform, ct.name, rec, err, w.rt.now())
			if k == last {
				*refOf(&env) = ref
			} else {
				*refOf(&env) = ref.Clone()
			}
			w.to(target{sink: true, idx: d}, env)
		}
	case plan.drop:
		w.rt.log.Error("record dropped: a transform failed on it and no downstream sink holds the watermark (acknowledgements off)",
			"transform", ct.name, "source", rec.Origin.Source, "partition", rec.Origin.Partition, "offset", rec.Origin.Offset, "err", err)
		ref.Release(checkpoint.Delivered)
	default:
		w.rt.noteReject(&rejection{component: ct.name, origin: rec.Origin, batch: ref.Batch(), err: err})
		ref.Release(checkpoint.Rejected)
	}
}

// dispatch hands a batch to the worker of its partition.
func (rt *runtime) dispatch(ctx context.Context, s *sourceRunner, b *connector.Batch, gen uint64) bool {
	w := rt.workerOf(s, b.Partition)
	s.noteDispatch(w.idx)
	select {
	case w.in <- work{src: s, batch: b, gen: gen}:
		return true
	case <-ctx.Done():
		for i := range b.Records {
			refOf(&b.Records[i]).Release(checkpoint.Failed)
		}
		s.putBatch(b)
		return false
	}
}

// workerOf returns the worker that every batch of s's partition p goes through.
func (rt *runtime) workerOf(s *sourceRunner, p checkpoint.Partition) *worker {
	return rt.workers[(s.idx*31+int(p))%len(rt.workers)]
}

// flushSinks asks every sink to flush now, behind every batch already sent:
// a source reached its end, and nothing more is coming soon.
func (rt *runtime) flushSinks(_ *sourceRunner) {
	for _, w := range rt.workers {
		w.in <- work{flush: true}
	}
}

// flushPartitions asks every sink to flush now, behind every batch of s's
// partitions ps already sent: they are being revoked, and their final
// watermarks should not wait for the sinks' MaxAge. Only the workers of ps
// need the request, since every batch of a partition went through its worker;
// each gets one request however many of ps it serves.
//
// After shutdown closed the workers' inputs it does nothing: the sinks flush
// their last groups on their own then. A request blocked on a busy worker
// holds the closing back until ctx is done, which happens when polling
// stops (see hostCtx), so the closing waits at most for that.
func (rt *runtime) flushPartitions(ctx context.Context, s *sourceRunner, ps []checkpoint.Partition) {
	rt.inMu.RLock()
	defer rt.inMu.RUnlock()
	if rt.inClosed {
		return
	}
	var sent []*worker
	for _, p := range ps {
		w := rt.workerOf(s, p)
		if slices.Contains(sent, w) {
			continue
		}
		sent = append(sent, w)
		select {
		case w.in <- work{flush: true}:
		case <-ctx.Done():
			return
		}
	}
}
