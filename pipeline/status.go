package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/statuspage"
)

// GET /api/v1/status: the pipeline as a graph with the rate through each
// component, every source's partitions and why any is stuck, and the recent
// events, as one versioned JSON document. The status page (GET /) reads it
// once a second; `weir top`, tests and embedders can too. docs/status.md
// documents it field by field.
//
// Nothing here runs unless someone reads the status: no goroutine, no
// ticker. A read asks each checkpointer goroutine, the owner of its
// partitions' state, for a fresh snapshot and waits for it a short while;
// rates come from totals sampled at each read.

// StatusVersion is the version of the Status document, also its "version"
// field. It changes only when a field changes meaning or goes away; new
// fields may be added within a version.
const StatusVersion = 1

// Status is the body of GET /api/v1/status.
type Status struct {
	Version    int       `json:"version"` // StatusVersion
	ServerTime time.Time `json:"server_time"`
	Started    time.Time `json:"started"`
	// State is "starting" (a source is still opening), "running",
	// "stopping" (shutting down: a signal, the end of input, or a failure)
	// or "stopped" (Run returned; only an embedder's mux still answers).
	State string `json:"state"`
	// Error is why the run stops or stopped, when a failure stops it.
	Error string `json:"error,omitempty"`
	// Ready and Reasons are what /readyz answers.
	Ready   bool     `json:"ready"`
	Reasons []Reason `json:"reasons,omitempty"`
	// StallWarningMillis is checkpoint.stall_warning: a partition or a sink
	// failing that long counts as stalled or failing.
	StallWarningMillis int64 `json:"stall_warning_ms"`
	// Nodes are every source, transform and sink, in the order of the
	// pipeline file; Edges connect them.
	Nodes   []StatusNode   `json:"nodes"`
	Edges   []StatusEdge   `json:"edges"`
	Sources []SourceStatus `json:"sources"`
	Events  []Event        `json:"events"` // newest first, at most 100
}

// StatusNode is one component of the pipeline and what goes through it.
type StatusNode struct {
	Name string `json:"name"` // unique across sources, transforms and sinks
	Kind string `json:"kind"` // "source", "transform" or "sink"
	// Type is a transform's kind (filter, map, flat_map, route), or the Go
	// package name of a source's or sink's connector (file, kafka, generate,
	// blackhole, stdout, ...).
	Type       string   `json:"type"`
	Outputs    []string `json:"outputs,omitempty"`     // a route's outputs
	DeadLetter string   `json:"dead_letter,omitempty"` // a sink's dead letter sink
	// NoAcknowledgements is set for a sink that never holds the watermark.
	NoAcknowledgements bool `json:"no_acknowledgements,omitempty"`
	// In and Out are totals since the start: for a source both are the
	// records read; for a transform the records given to it and emitted;
	// for a sink the records it received and the records it made durable.
	// The rates are records per second over the last few seconds (see
	// docs/status.md).
	In        int64   `json:"in"`
	Out       int64   `json:"out"`
	InPerSec  float64 `json:"in_per_sec"`
	OutPerSec float64 `json:"out_per_sec"`
	// Errors counts a sink's failed writes, flushes and persists before
	// retries (weir_sink_errors_total), and a source's failed commits.
	// Rejected counts the records a transform or sink failed on for good.
	Errors   int64 `json:"errors"`
	Rejected int64 `json:"rejected"`
	// State is "ok"; for a source also "opening", "finished" (read to its
	// end, nothing in flight) or "stalled" (a partition has been stalled for
	// stall_warning); for a sink, and a source whose commits fail,
	// "retrying" (failing for less than stall_warning), "failing" (for
	// longer) or, for a sink, "given_up" (give_up_after passed).
	State string `json:"state"`
	// Since is when the state other than ok began (a failure's first
	// attempt, the oldest stall).
	Since    *time.Time `json:"since,omitempty"`
	Failures int        `json:"consecutive_failures,omitempty"`
	Error    string     `json:"error,omitempty"` // the last error
	// StalledPartitions counts, for a sink, the partitions stalled for
	// stall_warning that it holds or that wait for it while it fails;
	// Holding names the first few.
	StalledPartitions int            `json:"stalled_partitions,omitempty"`
	Holding           []PartitionRef `json:"holding,omitempty"`
}

// PartitionRef names a partition of a source.
type PartitionRef struct {
	Source    string `json:"source"`
	Partition string `json:"partition"`
}

// StatusEdge is a connection between two nodes.
type StatusEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Output is the route output the edge leaves from ("" for a source or a
	// plain transform).
	Output string `json:"output,omitempty"`
	// DeadLetter marks the edge from a sink to its dead letter sink.
	DeadLetter bool `json:"dead_letter,omitempty"`
}

// SourceStatus is one source's partitions: totals over all of them, and the
// worst few in full.
type SourceStatus struct {
	Name string `json:"name"`
	// AsOf is when the partitions were read from the source's checkpointer
	// (each status read asks for a fresh reading; a checkpointer busy in a
	// slow commit answers late, and the previous reading is shown).
	AsOf            *time.Time `json:"as_of,omitempty"`
	PartitionCount  int        `json:"partition_count"`
	StalledCount    int        `json:"stalled_count"` // stalled for stall_warning or more
	InFlightBatches int64      `json:"in_flight_batches"`
	InFlightBytes   int64      `json:"in_flight_bytes"`
	// Lag is the sum of the partitions' lags where the source reports its
	// ends (see LagReporter); absent when it reports none.
	Lag *int64 `json:"lag,omitempty"`
	// Partitions are the worst partitions, at most the request's limit:
	// the longest stalled first (in whole seconds: data in flight for
	// milliseconds is not a stall), then the largest lag, then by name.
	// PartitionsOmitted counts the others.
	Partitions        []PartitionStatus `json:"partitions"`
	PartitionsOmitted int               `json:"partitions_omitted"`
}

// PartitionStatus is one partition of a source.
type PartitionStatus struct {
	Name string `json:"name"`
	// Committed is the last position the source committed; Watermark the
	// position below which everything is delivered (it is committed at the
	// next commit interval). Positions are in the source's own unit.
	Committed int64 `json:"committed"`
	Watermark int64 `json:"watermark"`
	// InFlightBatches counts batches issued and not yet resolved.
	InFlightBatches int `json:"in_flight_batches"`
	// StallMillis is the watermark's age: how long it has not moved while
	// data was pending (0 when nothing waits). Rewinds do not reset it.
	// Stalled is set once it reaches stall_warning.
	StallMillis int64 `json:"stall_ms"`
	Stalled     bool  `json:"stalled"`
	// Status is "ok" (nothing unresolved), "pending" (the watermark waits
	// for an unresolved batch), "failed" or "rejected" (blocked by a
	// failure, to be rewound or halted), "replaying" (rewound, the replay's
	// first batch not yet issued), or "revoking".
	Status  string `json:"status"`
	Batch   string `json:"batch,omitempty"` // the oldest unresolved batch
	Rewinds int    `json:"rewinds"`
	// End is where the source says the partition ends (LagReporter), and
	// Lag the distance from the committed position to it.
	End *int64 `json:"end,omitempty"`
	Lag *int64 `json:"lag,omitempty"`
	// HeldBy names the sinks whose current or sealed group holds the oldest
	// unresolved batch; FailingSinks the sinks the partition's records go
	// to that are failing now. Both are given while the watermark waits.
	HeldBy       []string      `json:"held_by,omitempty"`
	FailingSinks []SinkFailure `json:"failing_sinks,omitempty"`
	// Explanation says in words why the partition waits, like
	// /debug/stalls, for a partition whose watermark has waited a second or
	// more.
	Explanation string `json:"explanation,omitempty"`
}

// LagReporter is an optional interface of a connector.Source that knows
// where its partitions end: a Kafka source its high-water marks, a file
// source its files' sizes. With it the status shows each partition's lag,
// the end minus the committed position.
//
// Ends returns the end position of each partition it knows, by partition
// name, in the unit of the source's positions: the position the next record
// appended would have. It is called while the status is read (at most a few
// times a second, from an HTTP handler's goroutine), concurrently with Poll
// and the Host's methods, so it must be safe for concurrent use and fast:
// return what the source already knows (the last fetch's high-water mark, a
// size from the last stat), never ask a broker or the disk on each call.
type LagReporter interface {
	Ends() map[string]connector.Position
}

// Limits of the partitions a status read lists per source.
const (
	DefaultStatusPartitions = 100
	MaxStatusPartitions     = 10000
)

const (
	// statusMinInterval is the least time between two snapshots of a
	// source's partitions: more readers do not take more snapshots.
	statusMinInterval = 200 * time.Millisecond
	// statusWait bounds how long a read waits for a fresh snapshot before it
	// answers with the previous one: a checkpointer may be in a slow commit.
	statusWait = 250 * time.Millisecond
	// Rates are computed over rateWindow, from samples of the totals taken
	// at reads at least rateMinSpan apart.
	rateWindow  = 5 * time.Second
	rateMinSpan = 500 * time.Millisecond
	rateSamples = 32
	// holdingNames is how many stalled partitions a sink node names.
	holdingNames = 8
)

// statusState is what the status keeps between reads.
type statusState struct {
	started time.Time // the runtime's clock
	stopped atomic.Bool
	src     []*srcStatus // by source

	// Rates: samples of every node's totals, oldest first, taken on the
	// wall clock (a test's clock does not move rates).
	rateMu      sync.Mutex
	rateStart   time.Time
	rateSamples []rateSample
}

type rateSample struct {
	at      time.Time
	in, out []int64 // by node
}

// srcStatus is a source's partitions as its checkpointer goroutine last
// published them.
type srcStatus struct {
	wake   chan struct{} // capacity 1: a reader wants a fresh snapshot
	wanted atomic.Bool

	mu    sync.Mutex
	snap  srcSnap
	fresh chan struct{} // closed when the next snapshot is published
}

// srcSnap is one reading of a source's partitions.
type srcSnap struct {
	at          time.Time // the runtime's clock
	taken       time.Time // the wall clock, for statusMinInterval
	parts       []partSnap
	reach       []int // sinks the source's records reach
	commitFails int
	commitSince time.Time
	commitErr   string
}

type partSnap struct {
	name                 string
	committed, watermark checkpoint.Position
	inflight             int
	stalledSince         time.Time // zero when not stalled
	rewinds              int
	status               string
	batch                checkpoint.BatchID
	heldBy               []string
}

// initStatus prepares the status before the endpoints and the goroutines
// start.
func (rt *runtime) initStatus() {
	rt.events.now = rt.now
	rt.status.started = rt.now()
	rt.status.rateStart = time.Now()
	rt.status.src = make([]*srcStatus, len(rt.sources))
	for i := range rt.status.src {
		rt.status.src[i] = &srcStatus{wake: make(chan struct{}, 1), fresh: make(chan struct{})}
	}
}

// statusWake delivers when a status read wants a fresh snapshot of the
// source's partitions.
func (s *sourceRunner) statusWake() <-chan struct{} { return s.rt.status.src[s.idx].wake }

// publishFinalStatus takes the last snapshot of the source's partitions,
// after the final commit: an embedder's mux still serves the status after
// the run.
func (s *sourceRunner) publishFinalStatus(l *cpLoop) {
	s.rt.status.src[s.idx].wanted.Store(true)
	s.publishStatus(l)
}

// publishStatus takes a snapshot of the source's partitions if a status
// read asked for one. Only the checkpointer goroutine calls it: it reads the
// Checkpointer and the commit policy.
func (s *sourceRunner) publishStatus(l *cpLoop) {
	st := s.rt.status.src[s.idx]
	if !st.wanted.Load() || !st.wanted.Swap(false) {
		return
	}
	now := s.rt.now()
	l.states = s.cp.States(l.states[:0])
	snap := srcSnap{at: now, taken: time.Now(), parts: make([]partSnap, len(l.states)), reach: s.reachable()}
	snap.commitFails, snap.commitSince = l.pol.CommitFailing()
	if snap.commitFails > 0 && l.lastErr != nil {
		snap.commitErr = l.lastErr.Error()
	}
	s.hostMu.Lock()
	for i, ps := range l.states {
		snap.parts[i].name = fmt.Sprint(ps.Partition)
		if int(ps.Partition) < len(s.names) {
			snap.parts[i].name = s.names[ps.Partition]
		}
	}
	s.hostMu.Unlock()
	// Every sink's held batches, looked up once rather than per partition.
	var held map[checkpoint.BatchID][]string
	var ids []checkpoint.BatchID
	for _, sk := range s.rt.sinks {
		ids = sk.heldBatches(ids[:0])
		for _, id := range ids {
			if held == nil {
				held = map[checkpoint.BatchID][]string{}
			}
			if hs := held[id]; !slices.Contains(hs, sk.spec.Name) {
				held[id] = append(hs, sk.spec.Name)
			}
		}
	}
	inflight := make(map[checkpoint.Partition]int)
	s.tableMu.Lock()
	for id := range s.table {
		inflight[id.Partition]++
	}
	pending := make([]bool, len(l.states))
	for i, ps := range l.states {
		_, pending[i] = s.table[checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}]
	}
	s.tableMu.Unlock()
	for i, ps := range l.states {
		p := &snap.parts[i]
		p.committed, p.watermark, p.inflight = ps.Committed, ps.Watermark, inflight[ps.Partition]
		age, rewinds := l.pol.Stall(ps.Partition, now)
		p.rewinds = rewinds
		if age > 0 {
			p.stalledSince = now.Add(-age)
		}
		p.status = "ok"
		switch {
		case ps.Blocked:
			p.status = ps.FailedStatus.String()
		case ps.Closing:
			p.status = "revoking"
		case pending[i]:
			p.status = "pending"
		case l.pol.Replaying(ps.Partition):
			p.status = "replaying"
		}
		if ps.Blocked || pending[i] {
			p.batch = checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}
			p.heldBy = held[p.batch]
		}
	}
	st.mu.Lock()
	st.snap = snap
	close(st.fresh)
	st.fresh = make(chan struct{})
	st.mu.Unlock()
}

// request asks the checkpointer goroutine for a fresh snapshot unless the
// last one is recent, and returns what to wait on (nil: nothing).
func (st *srcStatus) request() <-chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.snap.taken.IsZero() && time.Since(st.snap.taken) < statusMinInterval {
		return nil
	}
	st.wanted.Store(true)
	signal(st.wake)
	return st.fresh
}

func (st *srcStatus) snapshot() srcSnap {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snap
}

// handleStatus registers /api/v1/status and the status page on mux.
func (rt *runtime) handleStatus(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		limit := DefaultStatusPartitions
		if v := r.URL.Query().Get("partitions"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > MaxStatusPartitions {
				http.Error(w, fmt.Sprintf("pipeline: partitions=%q: want a number of partitions to list per source, 0 to %d", v, MaxStatusPartitions), http.StatusBadRequest)
				return
			}
			limit = n
		}
		st := rt.statusNow(r.Context(), limit)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_ = json.NewEncoder(w).Encode(st)
	})
	if err := statuspage.Register(mux); err != nil {
		rt.log.Warn("status page not served", "err", err)
	}
}

// statusNow reads the status, listing at most limit partitions per source.
func (rt *runtime) statusNow(ctx context.Context, limit int) *Status {
	// Ask every checkpointer at once, then wait for them together.
	var waits []<-chan struct{}
	var dones []<-chan struct{}
	if !rt.status.stopped.Load() {
		for i, st := range rt.status.src {
			if c := st.request(); c != nil {
				waits = append(waits, c)
				dones = append(dones, rt.sources[i].cpDone)
			}
		}
	}
	if len(waits) > 0 {
		t := time.NewTimer(statusWait)
		for i, c := range waits {
			select {
			case <-c:
			case <-dones[i]: // that source's checkpointer has returned
			case <-t.C:
			case <-ctx.Done():
			}
		}
		t.Stop()
	}

	now := rt.now()
	warn := rt.g.spec.Checkpoint.StallWarning
	st := &Status{Version: StatusVersion, ServerTime: now, Started: rt.status.started, StallWarningMillis: warn.Milliseconds(),
		Nodes: []StatusNode{}, Edges: []StatusEdge{}, Sources: []SourceStatus{}}
	switch {
	case rt.status.stopped.Load():
		st.State = "stopped"
	case rt.stopping.Load():
		st.State = "stopping"
	default:
		st.State = "running"
		for _, s := range rt.sources {
			if !s.opened.Load() {
				st.State = "starting"
			}
		}
	}
	if err := rt.firstErr(); err != nil {
		st.Error = err.Error()
	}
	ready := rt.readiness()
	st.Ready, st.Reasons = ready.Ready, ready.Reasons
	st.Events = rt.events.snapshot()
	rt.statusGraph(st)
	rt.statusRates(st)

	// Partitions, and which sinks hold the stalled ones.
	holding := map[string][]PartitionRef{} // by sink: the stalled partitions it holds
	for i, s := range rt.sources {
		snap := rt.status.src[i].snapshot()
		ss, node := s.statusOf(snap, now, limit, holding), &st.Nodes[i]
		st.Sources = append(st.Sources, ss)
		if ss.StalledCount > 0 && node.State == "ok" {
			node.State = "stalled"
			for _, p := range snap.parts {
				if !p.stalledSince.IsZero() && now.Sub(p.stalledSince) >= warn && (node.Since == nil || p.stalledSince.Before(*node.Since)) {
					since := p.stalledSince
					node.Since = &since
				}
			}
		}
		if snap.commitFails > 0 {
			since := snap.commitSince
			node.State, node.Since, node.Failures, node.Error = "retrying", &since, snap.commitFails, snap.commitErr
			if now.Sub(since) >= warn {
				node.State = "failing"
			}
		}
	}
	for i := range st.Nodes {
		n := &st.Nodes[i]
		if hs := holding[n.Name]; n.Kind == "sink" && len(hs) > 0 {
			n.StalledPartitions = len(hs)
			n.Holding = hs[:min(len(hs), holdingNames)]
		}
	}
	return st
}

// connectorType names a connector by its Go package: "file" for
// *file.Sink, "kafka" for *kafka.Source.
func connectorType(c any) string {
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

// statusGraph adds the nodes, in the order sources, transforms, sinks, and
// the edges, with every node's state.
func (rt *runtime) statusGraph(st *Status) {
	g := rt.g
	now := rt.now()
	warn := g.spec.Checkpoint.StallWarning
	name := func(t target) string {
		if t.sink {
			return g.sinks[t.idx].Name
		}
		return g.transforms[t.idx].name
	}
	for i, s := range rt.sources {
		n := StatusNode{Name: s.spec.Name, Kind: "source", Type: connectorType(s.src), State: "ok"}
		switch {
		case !s.opened.Load():
			n.State = "opening"
		case s.eof.Load() && s.inflightBatches.Load() == 0:
			n.State = "finished"
		}
		st.Nodes = append(st.Nodes, n)
		for _, t := range g.sourceOut[i] {
			st.Edges = append(st.Edges, StatusEdge{From: s.spec.Name, To: name(t)})
		}
	}
	for i := range g.transforms {
		ct := &g.transforms[i]
		n := StatusNode{Name: ct.name, Kind: "transform", Type: kindOf(ct), State: "ok"}
		var outs []string
		if ct.r != nil {
			outs = ct.r.Outputs()
			n.Outputs = slices.Clone(outs)
		}
		st.Nodes = append(st.Nodes, n)
		for k, o := range ct.outs {
			for _, t := range o {
				e := StatusEdge{From: ct.name, To: name(t)}
				if k < len(outs) {
					e.Output = outs[k]
				}
				st.Edges = append(st.Edges, e)
			}
		}
	}
	for i, s := range rt.sinks {
		n := StatusNode{Name: s.spec.Name, Kind: "sink", Type: connectorType(s.spec.Sink), State: "ok", NoAcknowledgements: s.spec.NoAcknowledgements}
		if d := g.deadLetter[i]; d >= 0 {
			n.DeadLetter = g.sinks[d].Name
			st.Edges = append(st.Edges, StatusEdge{From: s.spec.Name, To: n.DeadLetter, DeadLetter: true})
		}
		since, failures, lastErr, gaveUp := s.health.state()
		switch {
		case gaveUp:
			n.State = "given_up"
		case failures > 0 && now.Sub(since) >= warn:
			n.State = "failing"
		case failures > 0:
			n.State = "retrying"
		}
		if failures > 0 {
			n.Since = &since
		}
		n.Failures, n.Error = failures, lastErr
		st.Nodes = append(st.Nodes, n)
	}
}

// state returns the sink's failure state: since when it has failed, how
// often, the last error, and whether it gave up.
func (h *sinkHealth) state() (since time.Time, failures int, lastErr string, gaveUp bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.failures, h.lastErr, h.gaveUp
}

// statusRates fills in every node's totals and rates. Rates are the change
// of the totals since the oldest sample of the last rateWindow (a sample is
// kept at most every rateMinSpan, when the status is read), or since the
// newest older sample after a pause, or since the start for the first read.
func (rt *runtime) statusRates(st *Status) {
	in := make([]int64, len(st.Nodes))
	out := make([]int64, len(st.Nodes))
	k := 0
	for _, s := range rt.sources {
		n := &st.Nodes[k]
		n.In = counterValue(s.mRecordsOut)
		n.Out = n.In
		n.Errors = counterValue(rt.m.commitErrors.WithLabelValues(s.spec.Name))
		k++
	}
	for i := range rt.g.transforms {
		n, c := &st.Nodes[k], &rt.trCounts[i]
		n.In, n.Out, n.Rejected, n.Errors = c.in.Load(), c.out.Load(), c.rej.Load(), c.rej.Load()
		k++
	}
	for _, s := range rt.sinks {
		n := &st.Nodes[k]
		n.In, n.Out = counterValue(s.mRecordsIn), s.written.Load()
		n.Errors = counterValue(rt.m.writeErrors.WithLabelValues(s.spec.Name))
		n.Rejected = counterValue(rt.m.rejected.WithLabelValues(s.spec.Name))
		k++
	}
	for i, n := range st.Nodes {
		in[i], out[i] = n.In, n.Out
	}
	now := time.Now()
	ss := &rt.status
	ss.rateMu.Lock()
	defer ss.rateMu.Unlock()
	base := rateSample{at: ss.rateStart}
	for i := len(ss.rateSamples) - 1; i >= 0; i-- {
		smp := ss.rateSamples[i]
		if age := now.Sub(smp.at); age >= rateMinSpan {
			base = smp
			if age > rateWindow {
				break // the newest sample older than the window: a pause
			}
		}
	}
	if dt := now.Sub(base.at).Seconds(); dt > 0 {
		for i := range st.Nodes {
			var bin, bout int64
			if base.in != nil {
				bin, bout = base.in[i], base.out[i]
			}
			st.Nodes[i].InPerSec = float64(in[i]-bin) / dt
			st.Nodes[i].OutPerSec = float64(out[i]-bout) / dt
		}
	}
	if n := len(ss.rateSamples); n == 0 || now.Sub(ss.rateSamples[n-1].at) >= rateMinSpan {
		ss.rateSamples = append(ss.rateSamples, rateSample{at: now, in: in, out: out})
	}
	// Keep the samples of the window and the newest one before it.
	drop := 0
	for drop+1 < len(ss.rateSamples) && now.Sub(ss.rateSamples[drop+1].at) > rateWindow {
		drop++
	}
	drop = max(drop, len(ss.rateSamples)-rateSamples)
	ss.rateSamples = slices.Delete(ss.rateSamples, 0, drop)
}

// counterValue reads a Prometheus counter the runtime adds to per batch or
// group.
func counterValue(c prometheus.Counter) int64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return int64(m.GetCounter().GetValue())
}

// statusOf builds the source's status from snap: totals, and the worst
// limit partitions in full. It adds the stalled partitions to holding, by
// the sinks that hold them or that they wait for.
func (s *sourceRunner) statusOf(snap srcSnap, now time.Time, limit int, holding map[string][]PartitionRef) SourceStatus {
	warn := s.rt.g.spec.Checkpoint.StallWarning
	ss := SourceStatus{Name: s.spec.Name, PartitionCount: len(snap.parts), Partitions: []PartitionStatus{},
		InFlightBatches: s.inflightBatches.Load(), InFlightBytes: s.inflightBytes.Load()}
	if !snap.at.IsZero() {
		at := snap.at
		ss.AsOf = &at
	}
	var ends map[string]connector.Position
	if lr, ok := s.src.(LagReporter); ok {
		ends = lr.Ends()
	}
	// The sinks failing now, among those the source's records reach: a
	// stalled partition waits for them.
	var failing []SinkFailure
	for _, k := range snap.reach {
		if f, ok := s.rt.sinks[k].health.failure(s.rt.sinks[k].spec.Name, now); ok {
			failing = append(failing, f)
		}
	}
	type key struct {
		i     int
		stall time.Duration
		lag   int64
	}
	keys := make([]key, len(snap.parts))
	var lagSum int64
	lagKnown := false
	for i, p := range snap.parts {
		keys[i] = key{i: i, lag: -1}
		if !p.stalledSince.IsZero() {
			keys[i].stall = now.Sub(p.stalledSince)
		}
		if end, ok := ends[p.name]; ok {
			keys[i].lag = max(int64(end)-int64(p.committed), 0)
			lagSum += keys[i].lag
			lagKnown = true
		}
		if keys[i].stall >= warn && keys[i].stall > 0 {
			ss.StalledCount++
			ref := PartitionRef{Source: s.spec.Name, Partition: p.name}
			for _, h := range p.heldBy {
				holding[h] = append(holding[h], ref)
			}
			for _, f := range failing {
				if !slices.Contains(p.heldBy, f.Sink) {
					holding[f.Sink] = append(holding[f.Sink], ref)
				}
			}
		}
	}
	if lagKnown {
		ss.Lag = &lagSum
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.stall/time.Second != b.stall/time.Second:
			return -cmpDur(a.stall, b.stall)
		case a.lag != b.lag:
			return -cmpInt(a.lag, b.lag)
		}
		return strings.Compare(snap.parts[a.i].name, snap.parts[b.i].name)
	})
	n := min(limit, len(keys))
	ss.PartitionsOmitted = len(keys) - n
	for _, k := range keys[:n] {
		p := snap.parts[k.i]
		ps := PartitionStatus{Name: p.name, Committed: int64(p.committed), Watermark: int64(p.watermark), InFlightBatches: p.inflight,
			StallMillis: k.stall.Milliseconds(), Stalled: k.stall > 0 && k.stall >= warn, Status: p.status, Rewinds: p.rewinds,
			HeldBy: slices.Clone(p.heldBy)}
		if p.batch != (checkpoint.BatchID{}) {
			ps.Batch = p.batch.String()
		}
		if end, ok := ends[p.name]; ok {
			e, l := int64(end), k.lag
			ps.End, ps.Lag = &e, &l
		}
		if p.status != "ok" && p.status != "revoking" {
			ps.FailingSinks = slices.Clone(failing)
		}
		if k.stall >= time.Second && p.status != "ok" {
			ps.Explanation = explain(ps, k.stall, failing)
		}
		ss.Partitions = append(ss.Partitions, ps)
	}
	return ss
}

func cmpDur(a, b time.Duration) int { return cmpInt(int64(a), int64(b)) }
func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// explain says why p's watermark waits, in the words of /debug/stalls.
func explain(p PartitionStatus, age time.Duration, failing []SinkFailure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The watermark has not moved for %s", roundDur(age))
	if p.Batch != "" {
		fmt.Fprintf(&b, ": it waits for batch %s", p.Batch)
	}
	switch p.Status {
	case "replaying":
		fmt.Fprintf(&b, ": it was rewound to position %d and its data is read again.", p.Watermark)
	case "failed":
		fmt.Fprintf(&b, ", which failed: the partition is replayed from position %d.", p.Watermark)
	case "rejected":
		b.WriteString(", which holds a rejected record: replay cannot fix it, the run halts.")
	default:
		b.WriteString(", not yet resolved.")
	}
	if len(p.HeldBy) > 0 {
		fmt.Fprintf(&b, " %s %s %s it in a group not yet durable.", plural(len(p.HeldBy), "Sink", "Sinks"), strings.Join(p.HeldBy, ", "), plural(len(p.HeldBy), "holds", "hold"))
	}
	for _, f := range failing {
		if f.GaveUp {
			fmt.Fprintf(&b, " Sink %s gave up after %d failures: %s.", f.Sink, f.Failures, f.Error)
			continue
		}
		fmt.Fprintf(&b, " Sink %s has been failing for %s (%d attempts): %s.", f.Sink, roundDur(time.Duration(f.FailingForMillis)*time.Millisecond), f.Failures, f.Error)
	}
	switch {
	case len(p.HeldBy) == 0 && len(failing) > 0:
		b.WriteString(" Its records are replayed or retried until the sink recovers or gives up.")
	case len(p.HeldBy) == 0:
		b.WriteString(" No sink's group holds it: it is queued before a transform or a sink.")
	}
	if p.Rewinds > 0 {
		fmt.Fprintf(&b, " Rewound %d %s so far.", p.Rewinds, plural(p.Rewinds, "time", "times"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// roundDur rounds d for reading: to the second from a second on.
func roundDur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
