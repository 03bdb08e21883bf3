package pipeline

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/weir-etl/weir/pipeline/view"
)

// The read model: rt.model builds one view.Model from the runtime's
// accessors and publishes it (status.last); every operator view renders a
// Model (package view). A Model is built on request, by the reader that
// needs it: /api/v1/status, /readyz, /debug/stalls, the progress display's
// tick, the run's report. Builders never wait for one another: each builds
// from the previous published model's rate samples and publishes its own
// with a compare-and-swap; one that loses the race still answers with what
// it built.

// Rates are computed over rateWindow, from samples of the totals taken at
// builds at least rateMinSpan apart.
const (
	rateWindow  = 5 * time.Second
	rateMinSpan = 500 * time.Millisecond
	rateSamples = 32
)

// published is a model with the samples its rates came from. Neither is
// changed once stored.
type published struct {
	m       *view.Model
	samples []rateSample // oldest first
}

type rateSample struct {
	at      time.Time // the wall clock: a test's clock does not move rates
	in, out []int64   // by node
}

// View returns the model last built, nil before the first.
func (rt *runtime) View() *view.Model {
	if p := rt.status.last.Load(); p != nil {
		return p.m
	}
	return nil
}

// model builds and publishes a fresh model; with snapshots it first asks
// the checkpointers for fresh readings of their partitions.
func (rt *runtime) model(ctx context.Context, snapshots bool) *view.Model {
	if snapshots {
		rt.awaitSnapshots(ctx)
	}
	now := rt.now()
	m := &view.Model{At: now, Started: rt.status.started, StallWarning: rt.g.spec.Checkpoint.StallWarning,
		State: rt.runState(), Readiness: rt.readiness(), Events: rt.events.snapshot(), Stalls: []view.Stall{}}
	if err := rt.firstErr(); err != nil {
		m.Error = err.Error()
	}
	for _, st := range rt.checkpointerStalls(rt.sourceFailures(rt.snapshotStalls())) {
		m.Stalls = append(m.Stalls, view.Stall{Source: st.Source, Partition: st.Partition, Batch: st.Batch, AgeMillis: st.AgeMillis,
			Rewinds: st.Rewinds, Status: st.Status, HeldBy: st.HeldBy, FailingSinks: st.FailingSinks, Note: st.Note})
	}
	rt.modelGraph(m)
	for _, s := range rt.sources {
		m.Sources = append(m.Sources, s.modelSource(now))
	}
	prev := rt.status.last.Load()
	p := &published{m: m, samples: rt.modelRates(m, prev)}
	rt.status.last.CompareAndSwap(prev, p)
	return m
}

// runState is Status.State.
func (rt *runtime) runState() string {
	switch {
	case rt.status.stopped.Load():
		return "stopped"
	case rt.stopping.Load():
		return "stopping"
	}
	for _, s := range rt.sources {
		if !s.opened.Load() {
			return "starting"
		}
	}
	return "running"
}

// modelSource is the source's part of the model: its checkpointer's last
// snapshot, the ends it reports now, and what it waits on.
func (s *sourceRunner) modelSource(now time.Time) view.Source {
	snap := s.rt.status.src[s.idx].snap.Load()
	warn := s.rt.g.spec.Checkpoint.StallWarning
	src := view.Source{Name: s.spec.Name, AsOf: snap.at, InFlightBatches: s.inflightBatches.Load(), InFlightBytes: s.inflightBytes.Load(),
		CommitFailures: snap.commitFails, CommitSince: snap.commitSince, CommitError: snap.commitErr,
		Partitions: slices.Clone(snap.parts)}
	src.AtLimit = !s.eof.Load() && (src.InFlightBatches >= int64(s.spec.MaxInFlightBatches) || src.InFlightBytes >= s.spec.MaxInFlightBytes)
	if f, ok := s.failure(now); ok {
		src.Failing = &f
	}
	// A commit that has not answered for stall_warning: the snapshot is
	// older than it (its checkpointer waits in that commit).
	if c, ok := s.cpWait(); ok && c.commit && c.fails == 0 && s.rt.now().Sub(c.since) >= warn {
		src.Hung, src.HungSince, src.HungMessage = true, c.since, c.message(s.rt.now(), s.rt.g.spec.Checkpoint.CommitTimeout)
	}
	for _, k := range snap.reach {
		sk := s.rt.sinks[k]
		if f, ok := sk.failure(now); ok {
			src.FailingSinks = append(src.FailingSinks, f)
		}
	}
	if lr, ok := s.src.(LagReporter); ok {
		ends := lr.Ends()
		for i := range src.Partitions {
			if end, ok := ends[src.Partitions[i].Name]; ok {
				e := int64(end)
				src.Partitions[i].End = &e
			}
		}
	}
	return src
}

// connectorType names a connector as the operator knows it: by its
// registered type (the `type:` of the pipeline file: postgres_cdc for the
// pgcdc package, http_server for the HTTP source), or, for one built in Go
// without it, by its Go package ("file" for *file.Sink).
func connectorType(registered string, c any) string {
	if registered != "" {
		return registered
	}
	t := reflect.TypeOf(c)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	p := t.PkgPath()
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// modelGraph adds the nodes, in the order sources, transforms, sinks, and
// the edges, with every component's own state and totals.
func (rt *runtime) modelGraph(m *view.Model) {
	g := rt.g
	name := func(t target) string {
		if t.sink {
			return g.sinks[t.idx].Name
		}
		return g.transforms[t.idx].name
	}
	for i, s := range rt.sources {
		n := view.StatusNode{Name: s.spec.Name, Kind: "source", Type: connectorType(s.spec.Type, s.src), State: "ok"}
		switch {
		case !s.opened.Load():
			n.State = "opening"
		case s.eof.Load() && s.inflightBatches.Load() == 0:
			n.State = "finished"
		}
		n.In = rt.m.recordsOut.total(s.spec.Name)
		n.Out = n.In
		n.Errors = rt.m.commitErrors.total(s.spec.Name)
		m.Nodes = append(m.Nodes, n)
		for _, t := range g.sourceOut[i] {
			m.Edges = append(m.Edges, view.StatusEdge{From: s.spec.Name, To: name(t)})
		}
	}
	for i := range g.transforms {
		ct, c := &g.transforms[i], &rt.trCounts[i]
		n := view.StatusNode{Name: ct.name, Kind: "transform", Type: kindOf(ct), State: "ok"}
		n.In, n.Out, n.Rejected, n.Errors = c.in.Load(), c.out.Load(), c.rej.Load(), c.rej.Load()
		var outs []string
		if ct.r != nil {
			outs = ct.r.Outputs()
			n.Outputs = slices.Clone(outs)
		}
		m.Nodes = append(m.Nodes, n)
		for k, o := range ct.outs {
			for _, t := range o {
				e := view.StatusEdge{From: ct.name, To: name(t)}
				if k < len(outs) {
					e.Output = outs[k]
				}
				m.Edges = append(m.Edges, e)
			}
		}
	}
	for i, s := range rt.sinks {
		m.Nodes = append(m.Nodes, rt.sinkNode(s))
		if d := g.deadLetter[i]; d >= 0 {
			m.Edges = append(m.Edges, view.StatusEdge{From: s.spec.Name, To: g.sinks[d].Name, DeadLetter: true})
		}
	}
}

// sinkNode is a sink's node: its totals and its failure state.
func (rt *runtime) sinkNode(s *sinkRunner) view.StatusNode {
	warn := rt.g.spec.Checkpoint.StallWarning
	n := view.StatusNode{Name: s.spec.Name, Kind: "sink", Type: connectorType(s.spec.Type, s.spec.Sink), State: "ok",
		NoAcknowledgements: s.spec.NoAcknowledgements, ExactlyOnce: exactlyOnce(s.spec)}
	if d := rt.g.deadLetter[s.idx]; d >= 0 {
		n.DeadLetter = rt.g.sinks[d].Name
	}
	n.In, n.Out = rt.m.recordsIn.total(s.spec.Name), s.written.Load()
	n.Errors = rt.m.writeErrors.total(s.spec.Name)
	n.Rejected = rt.m.rejected.total(s.spec.Name)
	if n.ExactlyOnce {
		n.AlreadyHeld = s.skipped.Load()
	}
	since, failures, lastErr, gaveUp := s.health.state()
	switch {
	case gaveUp:
		n.State = "given_up"
	case failures > 0 && rt.now().Sub(since) >= warn:
		n.State = "failing"
	case failures > 0:
		n.State = "retrying"
	}
	if failures > 0 {
		n.Since = &since
	}
	n.Failures, n.Error = failures, lastErr
	if c, ok := s.hungCall(rt.now(), warn); ok && failures == 0 && !gaveUp {
		n.State, n.Since, n.Error = "failing", &c.since, c.message(rt.now())
	}
	return n
}

// state returns the sink's failure state: since when it has failed, how
// often, the last error, and whether it gave up.
func (h *sinkHealth) state() (since time.Time, failures int, lastErr string, gaveUp bool) {
	st := h.load()
	return st.since, st.failures, st.lastErr, st.gaveUp
}

// modelRates fills in every node's rates and returns the samples to keep
// with m. Rates are the change of the totals since the oldest sample of the
// last rateWindow (a sample is kept at most every rateMinSpan), or since the
// newest older sample after a pause, or since the start for the first build.
func (rt *runtime) modelRates(m *view.Model, prev *published) []rateSample {
	in := make([]int64, len(m.Nodes))
	out := make([]int64, len(m.Nodes))
	for i, n := range m.Nodes {
		in[i], out[i] = n.In, n.Out
	}
	now := time.Now()
	var samples []rateSample
	if prev != nil {
		samples = prev.samples
	}
	base := rateSample{at: rt.status.rateStart}
	for i := len(samples) - 1; i >= 0; i-- {
		smp := samples[i]
		if age := now.Sub(smp.at); age >= rateMinSpan {
			base = smp
			if age > rateWindow {
				break // the newest sample older than the window: a pause
			}
		}
	}
	if dt := now.Sub(base.at).Seconds(); dt > 0 {
		for i := range m.Nodes {
			var bin, bout int64
			if base.in != nil {
				bin, bout = base.in[i], base.out[i]
			}
			m.Nodes[i].InPerSec = float64(in[i]-bin) / dt
			m.Nodes[i].OutPerSec = float64(out[i]-bout) / dt
		}
	}
	if n := len(samples); n > 0 && now.Sub(samples[n-1].at) < rateMinSpan {
		return samples
	}
	// Keep the samples of the window and the newest one before it, in a
	// new slice: the previous model's stays as it was.
	drop := 0
	for drop+1 < len(samples) && now.Sub(samples[drop+1].at) > rateWindow {
		drop++
	}
	kept := append(slices.Clone(samples[drop:]), rateSample{at: now, in: in, out: out})
	return kept[max(len(kept)-rateSamples, 0):]
}
