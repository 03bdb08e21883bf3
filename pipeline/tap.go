package pipeline

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/tap"
	"github.com/weir-etl/weir/record"
)

// Taps: GET /api/v1/tap/{component} streams a sample of the records leaving
// a component, as NDJSON, while the request lasts (`weir tap`). A source's
// records are sampled as it read them, a transform's as it emitted them (a
// route's: every record it routes, once; <route>.<output>: the records of
// that output), a sink's as they are handed to it to write.
//
// Nobody tapping must cost nothing measurable. The sampling, the table of
// open taps and the lines live in package internal/tap, with no lock; the
// runtime holds one hook, a *tap.Table that a worker loads once per batch
// (w.tap) and a sink once per chunk, nil while nobody taps, and calls
// Offer on it only when it is not nil (the helpers at the end of this
// file, the only calls from the hot path).

// Limits of a tap request.
const (
	// DefaultTapRate is the records per second a tap takes when the request
	// does not say.
	DefaultTapRate = 10
	// MaxTapRate is the most records per second a tap may ask for.
	MaxTapRate = 10000
)

// taps is the runtime's register of open taps, and the shape of the
// pipeline they are tables of.
type taps struct {
	tap.Register
	shape tap.Shape
}

// initTaps records the pipeline's shape for the taps' tables.
func (rt *runtime) initTaps() {
	rt.taps.shape = tap.Shape{Sources: len(rt.sources), RouteOuts: make([]int, len(rt.g.transforms)), Sinks: len(rt.sinks)}
	for i := range rt.g.transforms {
		rt.taps.shape.RouteOuts[i] = len(rt.g.transforms[i].outs)
	}
}

// close ends every tap and refuses new ones: the run is over.
func (ts *taps) close() { ts.Close() }

// lookupTap resolves a component name: a source, a transform, a route
// output (<route>.<output>) or a sink.
func (rt *runtime) lookupTap(name string) (tap.Point, bool) {
	for i, s := range rt.sources {
		if s.spec.Name == name {
			return tap.Point{Kind: tap.Source, Idx: i, Out: -1}, true
		}
	}
	base, out, dotted := strings.Cut(name, ".")
	for i := range rt.g.transforms {
		ct := &rt.g.transforms[i]
		if ct.name != base {
			continue
		}
		if !dotted {
			return tap.Point{Kind: tap.Transform, Idx: i, Out: -1}, true
		}
		if ct.r != nil {
			if k := slices.Index(ct.r.Outputs(), out); k >= 0 {
				return tap.Point{Kind: tap.Transform, Idx: i, Out: k}, true
			}
		}
	}
	for i, s := range rt.sinks {
		if s.spec.Name == name {
			return tap.Point{Kind: tap.Sink, Idx: i, Out: -1}, true
		}
	}
	return tap.Point{}, false
}

// tapNames lists what can be tapped, for an error.
func (rt *runtime) tapNames() []string {
	var out []string
	for _, s := range rt.sources {
		out = append(out, s.spec.Name)
	}
	for _, ct := range rt.g.transforms {
		out = append(out, ct.name)
		if ct.r != nil {
			out = append(out, prefixed(ct.name, ct.r.Outputs())...)
		}
	}
	for _, s := range rt.sinks {
		out = append(out, s.spec.Name)
	}
	return out
}

// handleTap registers GET /api/v1/tap/{component}.
func (rt *runtime) handleTap(mux *http.ServeMux, guard dataGuard) {
	mux.HandleFunc("GET /api/v1/tap/{component}", guard.wrap("/api/v1/tap/", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("component")
		at, ok := rt.lookupTap(name)
		if !ok {
			http.Error(w, fmt.Sprintf("pipeline: no component %q to tap; there are: %s", name, strings.Join(rt.tapNames(), ", ")), http.StatusNotFound)
			return
		}
		rate, count, msg := tapQuery(r)
		if msg != "" {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
		t := tap.New(at, name, rate, count, rt.now())
		if err := rt.taps.Add(&rt.taps.shape, t); err != nil {
			code := http.StatusServiceUnavailable
			if err == tap.ErrTooMany {
				code = http.StatusTooManyRequests
			}
			http.Error(w, err.Error(), code)
			return
		}
		defer rt.taps.Remove(&rt.taps.shape, t)
		t.Serve(r.Context(), w, count)
	}))
}

// tapQuery reads a tap request's rate and count (count < 0: no limit), or
// says what is wrong with them.
func tapQuery(r *http.Request) (rate float64, count int64, msg string) {
	q := r.URL.Query()
	rate, count = float64(DefaultTapRate), -1
	if v := q.Get("rate"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || f > MaxTapRate {
			return 0, 0, fmt.Sprintf("pipeline: rate=%q: want records per second, more than 0 and at most %d", v, MaxTapRate)
		}
		rate = f
	}
	if v := q.Get("count"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Sprintf("pipeline: count=%q: want the number of records to send, or 0 for no limit", v)
		}
		if n > 0 {
			count = n
		}
	}
	return rate, count, ""
}

// The hot path's part, called from worker.go and sink.go: the hook is the
// table, loaded once per batch or chunk; each helper costs, when nobody
// taps, a nil check.

// tapBatch loads the tap table for this batch (one atomic load) into the
// worker, where tapOut and tapRoute find it, and samples the source's
// records.
func (w *worker) tapBatch(src *sourceRunner, b *connector.Batch) {
	if w.tap = w.rt.taps.Load(); w.tap != nil {
		w.tap.Offer(tap.Source, src.idx, nil, b.Records)
	}
}

// tapOut samples the records transform i emitted.
func (w *worker) tapOut(i int, out []record.Record) {
	if w.tap != nil && len(out) > 0 {
		w.tap.Offer(tap.Transform, i, nil, out)
	}
}

// tapRoute samples a record route i sends to the outputs idx.
func (w *worker) tapRoute(i int, idx []int, rec *record.Record) {
	if w.tap != nil && len(idx) > 0 {
		w.tap.Offer(tap.Transform, i, idx, unsafe.Slice(rec, 1))
	}
}

// tapIn samples the records handed to the sink to write (one atomic load
// per chunk).
func (s *sinkRunner) tapIn(recs []record.Record) {
	if tt := s.rt.taps.Load(); tt != nil {
		tt.Offer(tap.Sink, s.idx, nil, recs)
	}
}
