package pipeline

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type server struct{ stop func() }

// serve starts /metrics, /healthz and /debug/stalls on addr, unless it is
// empty or "off": a library opens no port unless asked to.
func (rt *runtime) serve(addr string) (server, error) {
	if addr == "" || addr == "off" {
		return server{stop: func() {}}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return server{}, fmt.Errorf("pipeline: metrics.address %q: %w (choose a free address, or \"off\")", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(rt.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if rt.stopping.Load() {
			http.Error(w, "stopping", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/debug/stalls", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rt.snapshotStalls())
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	rt.log.Info("metrics listening", "address", ln.Addr().String())
	if rt.o.hooks.listening != nil {
		rt.o.hooks.listening(ln.Addr().String())
	}
	return server{stop: func() { _ = hs.Close() }}, nil
}
