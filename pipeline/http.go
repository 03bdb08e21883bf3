package pipeline

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weir-etl/weir/pipeline/view"
)

type server struct{ stop func() }

// serve starts the runtime's endpoints on addr, unless it is empty or
// "off": a library opens no port unless asked to.
func (rt *runtime) serve(addr string) (server, error) {
	if rt.o.mux != nil {
		// An embedder's mux: where it listens is its own affair; a token
		// set in the spec still guards the data.
		rt.handle(rt.o.mux, newDataGuard(rt.g.spec.Metrics.Token, nil))
	}
	if addr == "" || addr == "off" {
		return server{stop: func() {}}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return server{}, fmt.Errorf("pipeline: metrics.address %q: %w (choose a free address, or \"off\")", addr, err)
	}
	mux := http.NewServeMux()
	guard := newDataGuard(rt.g.spec.Metrics.Token, ln.Addr())
	rt.handle(mux, guard)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	rt.log.Info("metrics listening", "address", ln.Addr().String())
	if guard.beyond {
		rt.log.Warn("metrics listening beyond loopback", "address", ln.Addr().String(), "exposed", guard.exposure())
	}
	if rt.o.hooks.listening != nil {
		rt.o.hooks.listening(ln.Addr().String())
	}
	return server{stop: func() { _ = hs.Close() }}, nil
}

// handle registers the runtime's endpoints on mux:
//
//	/metrics       Prometheus metrics
//	/healthz       liveness: 200 while the process serves
//	/readyz        readiness: 503 with the reasons as JSON while a source is
//	               opening, a partition has been stalled or a sink failing
//	               for StallWarning or more, or the run is stopping
//	/debug/stalls  every partition whose watermark waits, and why
//	/debug/pprof/  Go's profiles, when Metrics.Pprof is set
//	/api/v1/status the pipeline, its rates, partitions and events (status.go)
//	/              the status page that draws it (internal/statuspage)
//	/api/v1/tap/   a sample of the records leaving a component (tap.go)
//
// guard keeps the taps, the status document and the profiles from anyone
// beyond loopback without the token (guard.go).
func (rt *runtime) handle(mux *http.ServeMux, guard dataGuard) {
	mux.Handle("/metrics", promhttp.HandlerFor(rt.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		r := rt.model(req.Context(), false).Readiness
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	mux.HandleFunc("/debug/stalls", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rt.model(req.Context(), false).Stalls)
	})
	rt.handleStatus(mux, guard)
	rt.handleTap(mux, guard)
	if rt.g.spec.Metrics.Pprof {
		mux.HandleFunc("/debug/pprof/", guard.wrap("/debug/pprof/", pprof.Index))
		mux.HandleFunc("/debug/pprof/cmdline", guard.wrap("/debug/pprof/", pprof.Cmdline))
		mux.HandleFunc("/debug/pprof/profile", guard.wrap("/debug/pprof/", pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", guard.wrap("/debug/pprof/", pprof.Symbol))
		mux.HandleFunc("/debug/pprof/trace", guard.wrap("/debug/pprof/", pprof.Trace))
	}
	// /healthz last: once it answers, every endpoint above is there too.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
}

// Readiness is the body of /readyz; Reason is one thing that keeps a
// pipeline from being ready (package view).
type (
	Readiness = view.Readiness
	Reason    = view.Reason
)

// readiness says whether the pipeline is ready, and why not: a failure that
// persists must show from outside within StallWarning.
func (rt *runtime) readiness() Readiness {
	var r Readiness
	if rt.stopping.Load() {
		r.Reasons = append(r.Reasons, Reason{Kind: "stopping", Message: "the pipeline is shutting down"})
	}
	for _, s := range rt.sources {
		if !s.opened.Load() {
			r.Reasons = append(r.Reasons, Reason{Kind: "source", Source: s.spec.Name, Message: "opening: not reading yet (see the log for why)"})
		}
	}
	warn := rt.g.spec.Checkpoint.StallWarning
	wall := rt.now()
	stale := map[string]bool{}
	for _, s := range rt.sources {
		stale[s.spec.Name] = s.stale(wall)
		// A commit that does not answer, commits that keep failing, or a
		// checkpointer goroutine that waits in anything else: nothing is
		// committed meanwhile.
		if c, ok := s.cpWait(); ok && wall.Sub(c.since) >= warn {
			r.Reasons = append(r.Reasons, Reason{Kind: "source", Source: s.spec.Name, ForMillis: wall.Sub(c.since).Milliseconds(),
				Message: c.message(wall, rt.g.spec.Checkpoint.CommitTimeout)})
		}
	}
	for _, st := range rt.snapshotStalls() {
		// A partition is stalled when it was at the last refresh, or, when
		// its checkpointer goroutine has not refreshed for longer than it
		// does when free, when its stall has lasted StallWarning by now.
		atRefresh := !st.since.IsZero() && st.at.Sub(st.since) >= warn
		if atRefresh || (stale[st.Source] && time.Duration(st.AgeMillis)*time.Millisecond >= warn) {
			r.Reasons = append(r.Reasons, Reason{Kind: "partition", Source: st.Source, Partition: st.Partition, ForMillis: st.AgeMillis,
				Message: fmt.Sprintf("stalled: its watermark has not moved for %v (status %s, %d rewinds)", (time.Duration(st.AgeMillis) * time.Millisecond).Round(time.Second), st.Status, st.Rewinds)})
		}
	}
	now := rt.now()
	for _, s := range rt.sources {
		if f, ok := s.failure(now); ok && time.Duration(f.FailingForMillis)*time.Millisecond >= warn {
			r.Reasons = append(r.Reasons, Reason{Kind: "source", Source: s.spec.Name, ForMillis: f.FailingForMillis,
				Message: fmt.Sprintf("failing for %v (%d attempts): %s", (time.Duration(f.FailingForMillis) * time.Millisecond).Round(time.Second), f.Attempts, f.Error)})
		}
	}
	for _, s := range rt.sinks {
		f, failing := s.failure(now)
		if !failing || (!f.GaveUp && time.Duration(f.FailingForMillis)*time.Millisecond < warn) {
			continue
		}
		msg := fmt.Sprintf("failing for %v (%d attempts): %s", (time.Duration(f.FailingForMillis) * time.Millisecond).Round(time.Second), f.Failures, f.Error)
		switch {
		case f.GaveUp:
			msg = "gave up: " + msg
		case f.Waiting:
			msg = f.Error
		}
		r.Reasons = append(r.Reasons, Reason{Kind: "sink", Sink: s.spec.Name, ForMillis: f.FailingForMillis, Message: msg})
	}
	r.Ready = len(r.Reasons) == 0
	return r
}
