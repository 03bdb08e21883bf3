package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/statuspage"
	"github.com/weir-etl/weir/pipeline/view"
)

// GET /api/v1/status: the pipeline as a graph with the rate through each
// component, every source's partitions and why any is stuck, and the recent
// events, as one versioned JSON document. The status page (GET /) reads it
// once a second; `weir top`, tests and embedders can too. docs/status.md
// documents it field by field.
//
// The document is view.Render of the read model (model.go), which the
// runtime rebuilds on request: a read asks each checkpointer goroutine, the
// owner of its partitions' state, for a fresh snapshot of them and waits
// for it a short while. Nothing runs unless someone reads: no goroutine, no
// ticker. The snapshots travel without a lock: the checkpointer stores each
// one in an atomic pointer and closes the channel readers wait on.

// The wire types live in package view; these names stay for the programs
// that name them from this package.
type (
	Status          = view.Status
	StatusNode      = view.StatusNode
	PartitionRef    = view.PartitionRef
	StatusEdge      = view.StatusEdge
	SourceStatus    = view.SourceStatus
	PartitionStatus = view.PartitionStatus
	// LagReporter is connector.LagReporter.
	LagReporter = connector.LagReporter
)

// StatusVersion is the version of the Status document (view.StatusVersion).
const StatusVersion = view.StatusVersion

// Limits of the partitions a status read lists per source.
const (
	DefaultStatusPartitions = view.DefaultStatusPartitions
	MaxStatusPartitions     = view.MaxStatusPartitions
)

const (
	// statusMinInterval is the least time between two snapshots of a
	// source's partitions: more readers do not take more snapshots.
	statusMinInterval = 200 * time.Millisecond
	// statusWait bounds how long a read waits for a fresh snapshot before it
	// answers with the previous one: a checkpointer may be in a slow commit.
	statusWait = 250 * time.Millisecond
)

// statusState is what the read model keeps between reads.
type statusState struct {
	started time.Time // the runtime's clock
	stopped atomic.Bool
	src     []*srcStatus // by source
	// last is the model last built, with the rate samples it was built
	// from (model.go); nil before the first read.
	last      atomic.Pointer[published]
	rateStart time.Time // the wall clock
}

// srcStatus is a source's partitions as its checkpointer goroutine last
// published them.
type srcStatus struct {
	wake   chan struct{} // capacity 1: a reader wants a fresh snapshot
	wanted atomic.Bool
	snap   atomic.Pointer[srcSnap]
	// fresh is closed, and replaced, when the checkpointer publishes.
	fresh atomic.Pointer[chan struct{}]
}

// srcSnap is one reading of a source's partitions.
type srcSnap struct {
	at          time.Time // the runtime's clock
	taken       time.Time // the wall clock, for statusMinInterval
	parts       []view.Partition
	reach       []int // sinks the source's records reach
	commitFails int
	commitSince time.Time
	commitErr   string
}

// initStatus prepares the status before the endpoints and the goroutines
// start.
func (rt *runtime) initStatus() {
	rt.events.now = rt.now
	rt.status.started = rt.now()
	rt.status.rateStart = time.Now()
	rt.status.src = make([]*srcStatus, len(rt.sources))
	for i := range rt.status.src {
		st := &srcStatus{wake: make(chan struct{}, 1)}
		st.snap.Store(&srcSnap{})
		c := make(chan struct{})
		st.fresh.Store(&c)
		rt.status.src[i] = st
	}
	// The lag of the sources that report their ends, computed at each
	// scrape of /metrics from the runners built by now.
	rt.m.reg.MustRegister(lagCollector{rt})
	rt.initTaps()
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
	snap := &srcSnap{at: now, taken: time.Now(), parts: make([]view.Partition, len(l.states)), reach: s.reachable()}
	snap.commitFails, snap.commitSince = l.pol.CommitFailing()
	if snap.commitFails > 0 && l.lastErr != nil {
		snap.commitErr = l.lastErr.Error()
	}
	s.hostMu.Lock()
	for i, ps := range l.states {
		snap.parts[i].Name = fmt.Sprint(ps.Partition)
		if int(ps.Partition) < len(s.host.names) {
			snap.parts[i].Name = s.host.names[ps.Partition]
		}
	}
	s.hostMu.Unlock()
	held := s.rt.heldBy()
	inflight := make(map[checkpoint.Partition]int)
	for id := range s.ck.table {
		inflight[id.Partition]++
	}
	pending := make([]bool, len(l.states))
	for i, ps := range l.states {
		_, pending[i] = s.ck.table[checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}]
	}
	for i, ps := range l.states {
		p := &snap.parts[i]
		p.Committed, p.Watermark, p.InFlight = int64(ps.Committed), int64(ps.Watermark), inflight[ps.Partition]
		age, rewinds := l.pol.Stall(ps.Partition, now)
		p.Rewinds = rewinds
		if age > 0 {
			p.StalledSince = now.Add(-age)
		}
		p.Status = "ok"
		switch {
		case ps.Blocked:
			p.Status = ps.FailedStatus.String()
		case ps.Closing:
			p.Status = "revoking"
		case pending[i]:
			p.Status = "pending"
		case l.pol.Replaying(ps.Partition):
			p.Status = "replaying"
		}
		if ps.Blocked || pending[i] {
			id := checkpoint.BatchID{Partition: ps.Partition, Epoch: ps.Epoch, Seq: ps.Next}
			p.Batch, p.HeldBy = id.String(), held[id]
		}
	}
	st.snap.Store(snap)
	next := make(chan struct{})
	close(*st.fresh.Swap(&next))
}

// heldBy returns every sink's held batches, by batch: looked up once per
// snapshot rather than per partition.
func (rt *runtime) heldBy() map[checkpoint.BatchID][]string {
	var held map[checkpoint.BatchID][]string
	var ids []checkpoint.BatchID
	for _, sk := range rt.sinks {
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
	return held
}

// request asks the checkpointer goroutine for a fresh snapshot unless the
// last one is recent, and returns what to wait on (nil: nothing). The
// channel is taken before the request is made: a snapshot published in
// between closes it, and that snapshot is no older than the request.
func (st *srcStatus) request() <-chan struct{} {
	if taken := st.snap.Load().taken; !taken.IsZero() && time.Since(taken) < statusMinInterval {
		return nil
	}
	c := *st.fresh.Load()
	st.wanted.Store(true)
	signal(st.wake)
	return c
}

// awaitSnapshots asks every checkpointer for a fresh snapshot of its
// partitions at once, then waits for them together, at most statusWait.
func (rt *runtime) awaitSnapshots(ctx context.Context) {
	if rt.status.stopped.Load() {
		return
	}
	var waits, dones []<-chan struct{}
	for i, st := range rt.status.src {
		if c := st.request(); c != nil {
			waits = append(waits, c)
			dones = append(dones, rt.sources[i].cpDone)
		}
	}
	if len(waits) == 0 {
		return
	}
	t := time.NewTimer(statusWait)
	defer t.Stop()
	for i, c := range waits {
		select {
		case <-c:
		case <-dones[i]: // that source's checkpointer has returned
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// handleStatus registers /api/v1/status and the status page on mux.
func (rt *runtime) handleStatus(mux *http.ServeMux, guard dataGuard) {
	mux.HandleFunc("GET /api/v1/status", guard.wrap("/api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		limit := DefaultStatusPartitions
		if v := r.URL.Query().Get("partitions"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > MaxStatusPartitions {
				http.Error(w, fmt.Sprintf("pipeline: partitions=%q: want a number of partitions to list per source, 0 to %d", v, MaxStatusPartitions), http.StatusBadRequest)
				return
			}
			limit = n
		}
		st := view.Render(rt.model(r.Context(), true), limit)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_ = json.NewEncoder(w).Encode(st)
	}))
	if err := statuspage.Register(mux); err != nil {
		rt.log.Warn("status page not served", "err", err)
	}
}
