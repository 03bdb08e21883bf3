package pipeline

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Taps: GET /api/v1/tap/{component} streams a sample of the records leaving
// a component, as NDJSON, while the request lasts (`weir tap`). A source's
// records are sampled as it read them, a transform's as it emitted them (a
// route's: every record it routes, once; <route>.<output>: the records of
// that output), a sink's as they are handed to it to write.
//
// Nobody tapping must cost nothing measurable. The hot path's whole cost is
// in the helpers at the end of this file: one atomic load of the tap table
// per batch in a worker (tapBatch) and per chunk in a sink (tapIn), and a
// nil check per transform output (tapOut, tapRoute); no allocation, no
// lock. The table is replaced, never changed, when a tap starts or ends.
// When someone taps, a record is encoded (copied) on the spot and handed to
// the request with a send that never blocks: a slow reader loses lines
// (counted and reported at the end), it never slows the pipeline.

// Limits of a tap request.
const (
	// DefaultTapRate is the records per second a tap takes when the request
	// does not say.
	DefaultTapRate = 10
	// MaxTapRate is the most records per second a tap may ask for.
	MaxTapRate = 10000
	// maxTaps is how many taps may be open at once.
	maxTaps = 16
	// tapBuffer is how many encoded records wait for a slow reader.
	tapBuffer = 256
)

// taps is the runtime's register of open taps.
type taps struct {
	// table is nil while nobody taps; the hot path loads it once per batch.
	table atomic.Pointer[tapTable]
	mu    sync.Mutex // guards open and closed, never the hot path
	open  []*tap
	// closed is set when the run ended: new taps are refused, open ones end.
	closed bool
}

// tapTable says who taps what, by component index; it is never changed once
// published.
type tapTable struct {
	source    [][]*tap   // by source
	transform [][]*tap   // by transform (a route: every record it routes)
	routeOut  [][][]*tap // by transform, then route output
	sink      [][]*tap   // by sink
}

// tapWhere is a component a tap reads from.
type tapWhere struct {
	kind string // "source", "transform", "sink"
	idx  int
	out  int // a route output, or -1
}

// tap is one open tap request.
type tap struct {
	where tapWhere
	name  string
	lines chan []byte
	done  chan struct{} // closed when the run ends
	once  sync.Once

	mu        sync.Mutex // guards the sampling state; taken only while tapping
	rate      float64    // records per second
	tokens    float64
	last      time.Time
	remaining int64 // records still to send; -1 without a count limit
	dropped   atomic.Int64
}

// offer samples recs: it encodes the records the tap's rate and count let
// through and hands them to the reader, dropping (and counting) what the
// reader has no room for.
func (t *tap) offer(recs []record.Record, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refill(now)
	for i := range recs {
		if !t.take() {
			return
		}
		t.send(&recs[i])
	}
}

// offerOne is offer of one record.
func (t *tap) offerOne(rec *record.Record, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refill(now)
	if t.take() {
		t.send(rec)
	}
}

// refill adds the tokens of the time since the last offer, up to a
// second's worth (at least one).
func (t *tap) refill(now time.Time) {
	t.tokens = min(t.tokens+now.Sub(t.last).Seconds()*t.rate, max(t.rate, 1))
	t.last = now
}

// take uses a token and one of the records still to send, if there are.
func (t *tap) take() bool {
	if t.tokens < 1 || t.remaining == 0 {
		return false
	}
	t.tokens--
	if t.remaining > 0 {
		t.remaining--
	}
	return true
}

// send hands rec, encoded, to the reader without waiting.
func (t *tap) send(rec *record.Record) {
	select {
	case t.lines <- tapLine(nil, t.where.kind, t.name, rec):
	default:
		t.dropped.Add(1)
	}
}

func (t *tap) end() { t.once.Do(func() { close(t.done) }) }

// lookupTap resolves a component name: a source, a transform, a route
// output (<route>.<output>) or a sink.
func (rt *runtime) lookupTap(name string) (tapWhere, bool) {
	for i, s := range rt.sources {
		if s.spec.Name == name {
			return tapWhere{"source", i, -1}, true
		}
	}
	base, out, dotted := strings.Cut(name, ".")
	for i := range rt.g.transforms {
		ct := &rt.g.transforms[i]
		if ct.name != base {
			continue
		}
		if !dotted {
			return tapWhere{"transform", i, -1}, true
		}
		if ct.r != nil {
			if k := slices.Index(ct.r.Outputs(), out); k >= 0 {
				return tapWhere{"transform", i, k}, true
			}
		}
	}
	for i, s := range rt.sinks {
		if s.spec.Name == name {
			return tapWhere{"sink", i, -1}, true
		}
	}
	return tapWhere{}, false
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

var (
	errTapsClosed = errors.New("pipeline: the pipeline is not running")
	errTooMany    = fmt.Errorf("pipeline: %d taps are open already; close one", maxTaps)
)

// add opens t, or says why not.
func (ts *taps) add(rt *runtime, t *tap) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch {
	case ts.closed:
		return errTapsClosed
	case len(ts.open) >= maxTaps:
		return errTooMany
	}
	ts.open = append(ts.open, t)
	ts.publish(rt)
	return nil
}

// remove closes t.
func (ts *taps) remove(rt *runtime, t *tap) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if i := slices.Index(ts.open, t); i >= 0 {
		ts.open = slices.Delete(ts.open, i, i+1)
		ts.publish(rt)
	}
}

// close ends every tap and refuses new ones: the run is over.
func (ts *taps) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.closed = true
	for _, t := range ts.open {
		t.end()
	}
	ts.open = nil
	ts.table.Store(nil)
}

// publish builds the table of the open taps and makes it the one the hot
// path loads; nil when none is open. Called with mu held.
func (ts *taps) publish(rt *runtime) {
	if len(ts.open) == 0 {
		ts.table.Store(nil)
		return
	}
	tt := &tapTable{
		source:    make([][]*tap, len(rt.sources)),
		transform: make([][]*tap, len(rt.g.transforms)),
		routeOut:  make([][][]*tap, len(rt.g.transforms)),
		sink:      make([][]*tap, len(rt.sinks)),
	}
	for _, t := range ts.open {
		w := t.where
		switch {
		case w.kind == "source":
			tt.source[w.idx] = append(tt.source[w.idx], t)
		case w.kind == "sink":
			tt.sink[w.idx] = append(tt.sink[w.idx], t)
		case w.out >= 0:
			if tt.routeOut[w.idx] == nil {
				tt.routeOut[w.idx] = make([][]*tap, len(rt.g.transforms[w.idx].outs))
			}
			tt.routeOut[w.idx][w.out] = append(tt.routeOut[w.idx][w.out], t)
		default:
			tt.transform[w.idx] = append(tt.transform[w.idx], t)
		}
	}
	ts.table.Store(tt)
}

// handleTap registers GET /api/v1/tap/{component}.
func (rt *runtime) handleTap(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/tap/{component}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("component")
		where, ok := rt.lookupTap(name)
		if !ok {
			http.Error(w, fmt.Sprintf("pipeline: no component %q to tap; there are: %s", name, strings.Join(rt.tapNames(), ", ")), http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		rate, count := float64(DefaultTapRate), int64(-1)
		if v := q.Get("rate"); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0) || f > MaxTapRate {
				http.Error(w, fmt.Sprintf("pipeline: rate=%q: want records per second, more than 0 and at most %d", v, MaxTapRate), http.StatusBadRequest)
				return
			}
			rate = f
		}
		if v := q.Get("count"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				http.Error(w, fmt.Sprintf("pipeline: count=%q: want the number of records to send, or 0 for no limit", v), http.StatusBadRequest)
				return
			}
			if n > 0 {
				count = n
			}
		}
		t := &tap{where: where, name: name, lines: make(chan []byte, tapBuffer), done: make(chan struct{}),
			rate: rate, tokens: 1, last: time.Now(), remaining: count}
		if err := rt.taps.add(rt, t); err != nil {
			code := http.StatusServiceUnavailable
			if err == errTooMany {
				code = http.StatusTooManyRequests
			}
			http.Error(w, err.Error(), code)
			return
		}
		defer rt.taps.remove(rt, t)
		rt.serveTap(r.Context(), w, t, count)
	})
}

// serveTap writes t's lines to w until count were sent (count < 0: no
// limit), the client goes or the run ends; then a last line says why it
// ended, and how many records the reader was too slow for.
func (rt *runtime) serveTap(ctx context.Context, w http.ResponseWriter, t *tap, count int64) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	sent := int64(0)
	write := func(line []byte) bool {
		if _, err := w.Write(append(line, '\n')); err != nil {
			return false
		}
		sent++
		return true
	}
	why := "count reached"
loop:
	for count < 0 || sent < count {
		select {
		case line := <-t.lines:
			if !write(line) {
				return
			}
			// Flush when nothing else waits: a line goes out when it is
			// sampled, not when a buffer fills.
			if len(t.lines) == 0 {
				flush()
			}
		case <-ctx.Done():
			return
		case <-t.done:
			// What was sampled before the end still goes out.
			for (count < 0 || sent < count) && len(t.lines) > 0 {
				if !write(<-t.lines) {
					return
				}
			}
			why = "the pipeline stopped"
			break loop
		}
	}
	_, _ = fmt.Fprintf(w, `{"tap_end":%s,"sent":%d,"dropped":%d}`+"\n", strconv.Quote(why), sent, t.dropped.Load())
}

// tapLine appends the NDJSON line of rec, leaving the component kind and
// name, to dst: where it was read, its time, key and headers, and its value
// (JSON embedded when it is one JSON value on one line, base64 otherwise;
// the key and header values as text when they are UTF-8).
func tapLine(dst []byte, kind, name string, rec *record.Record) []byte {
	dst = append(dst, `{"component":`...)
	dst = record.AppendString(dst, name)
	dst = append(dst, `,"kind":"`...)
	dst = append(dst, kind...)
	dst = append(dst, `","source":`...)
	dst = record.AppendString(dst, rec.Origin.Source)
	dst = append(dst, `,"partition":`...)
	dst = record.AppendString(dst, rec.Origin.Partition)
	dst = strconv.AppendInt(append(dst, `,"offset":`...), rec.Origin.Offset, 10)
	if !rec.Time.IsZero() {
		dst = append(dst, `,"time":"`...)
		dst = rec.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	}
	if rec.Key != nil {
		dst = appendTapBytes(dst, "key", rec.Key)
	}
	if len(rec.Headers) > 0 {
		dst = append(dst, `,"headers":[`...)
		for i, h := range rec.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = record.AppendString(dst, h.Key)
			dst = appendTapBytes(dst, "value", h.Value)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	v := rec.Bytes()
	if embeddable(v) {
		dst = append(dst, `,"value":`...)
		dst = append(dst, v...)
	} else {
		dst = append(dst, `,"value_encoding":"base64","value":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, v)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// appendTapBytes appends member name: b as text when it is UTF-8, and as
// base64 with name_encoding otherwise.
func appendTapBytes(dst []byte, name string, b []byte) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	if utf8.Valid(b) {
		return record.AppendString(dst, string(b))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	dst = append(dst, `","`...)
	dst = append(dst, name...)
	return append(dst, `_encoding":"base64"`...)
}

// embeddable reports whether v can go into a line as JSON: one JSON value,
// UTF-8, on one line.
func embeddable(v []byte) bool {
	if len(v) == 0 || !utf8.Valid(v) || slices.Contains(v, '\n') || slices.Contains(v, '\r') {
		return false
	}
	return record.Valid(v) == nil
}

// The hot path's part, called from worker.go and sink.go. Each costs, when
// nobody taps, what its comment says and nothing else.

// tapBatch loads the tap table for this batch (one atomic load) into the
// worker, where tapOut and tapRoute find it, and samples the source's
// records.
func (w *worker) tapBatch(src *sourceRunner, b *connector.Batch) {
	w.tap = w.rt.taps.table.Load()
	if w.tap != nil {
		for _, t := range w.tap.source[src.idx] {
			t.offer(b.Records, time.Now())
		}
	}
}

// tapOut samples the records transform i emitted (a nil check when nobody
// taps).
func (w *worker) tapOut(i int, out []record.Record) {
	if w.tap != nil && len(out) > 0 {
		for _, t := range w.tap.transform[i] {
			t.offer(out, time.Now())
		}
	}
}

// tapRoute samples a record route i sends to the outputs idx (a nil check
// when nobody taps).
func (w *worker) tapRoute(i int, idx []int, rec *record.Record) {
	if w.tap == nil || len(idx) == 0 {
		return
	}
	for _, t := range w.tap.transform[i] {
		t.offerOne(rec, time.Now())
	}
	if outs := w.tap.routeOut[i]; outs != nil {
		for _, k := range idx {
			for _, t := range outs[k] {
				t.offerOne(rec, time.Now())
			}
		}
	}
}

// tapIn samples the records handed to the sink to write (one atomic load
// per chunk).
func (s *sinkRunner) tapIn(recs []record.Record) {
	if tt := s.rt.taps.table.Load(); tt != nil {
		for _, t := range tt.sink[s.idx] {
			t.offer(recs, time.Now())
		}
	}
}
