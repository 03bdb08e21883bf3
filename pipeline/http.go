package pipeline

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type server struct{ stop func() }

// serve starts the runtime's endpoints on addr, unless it is empty or
// "off": a library opens no port unless asked to.
func (rt *runtime) serve(addr string) (server, error) {
	if rt.o.mux != nil {
		rt.handle(rt.o.mux)
	}
	if addr == "" || addr == "off" {
		return server{stop: func() {}}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return server{}, fmt.Errorf("pipeline: metrics.address %q: %w (choose a free address, or \"off\")", addr, err)
	}
	mux := http.NewServeMux()
	rt.handle(mux)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	rt.log.Info("metrics listening", "address", ln.Addr().String())
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
func (rt *runtime) handle(mux *http.ServeMux) {
	mux.Handle("/metrics", promhttp.HandlerFor(rt.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		r := rt.readiness()
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	mux.HandleFunc("/debug/stalls", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rt.snapshotStalls())
	})
	rt.handleStatus(mux)
	rt.handleTap(mux)
	if rt.g.spec.Metrics.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
}

// Readiness is the body of /readyz.
type Readiness struct {
	Ready   bool     `json:"ready"`
	Reasons []Reason `json:"reasons,omitempty"`
}

// Reason is one thing that keeps a pipeline from being ready.
type Reason struct {
	Kind      string `json:"kind"` // "stopping", "source", "partition" or "sink"
	Source    string `json:"source,omitempty"`
	Partition string `json:"partition,omitempty"`
	Sink      string `json:"sink,omitempty"`
	Message   string `json:"message"`
	ForMillis int64  `json:"for_ms,omitempty"`
}

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
	for _, st := range rt.snapshotStalls() {
		if time.Duration(st.AgeMillis)*time.Millisecond >= warn {
			r.Reasons = append(r.Reasons, Reason{Kind: "partition", Source: st.Source, Partition: st.Partition, ForMillis: st.AgeMillis,
				Message: fmt.Sprintf("stalled: its watermark has not moved for %v (status %s, %d rewinds)", (time.Duration(st.AgeMillis) * time.Millisecond).Round(time.Second), st.Status, st.Rewinds)})
		}
	}
	now := rt.now()
	for _, s := range rt.sinks {
		f, failing := s.health.failure(s.spec.Name, now)
		if !failing || (!f.GaveUp && time.Duration(f.FailingForMillis)*time.Millisecond < warn) {
			continue
		}
		msg := fmt.Sprintf("failing for %v (%d attempts): %s", (time.Duration(f.FailingForMillis) * time.Millisecond).Round(time.Second), f.Failures, f.Error)
		if f.GaveUp {
			msg = "gave up: " + msg
		}
		r.Reasons = append(r.Reasons, Reason{Kind: "sink", Sink: s.spec.Name, ForMillis: f.FailingForMillis, Message: msg})
	}
	r.Ready = len(r.Reasons) == 0
	return r
}
