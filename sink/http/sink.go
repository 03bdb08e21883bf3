package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/weir-etl/weir/internal/words"
	"hash/maphash"
	"log/slog"
	"math/rand/v2"
	nethttp "net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "http",
		Doc:    "sends records to an HTTP endpoint (NDJSON, a JSON array or one request per record); durable when answered 2xx, retried on 429 and 5xx, records a 4xx refuses to the failure policy",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Sink, error) { return New(name, c) },
	})
}

// Sink is the HTTP sink. Create it with New.
type Sink struct {
	name        string
	cfg         Config
	url         template
	hdrNames    []string
	hdrs        []template
	dynamic     bool // the URL or a header depends on the record
	contentType string
	rejects     map[int]bool
	log         *slog.Logger

	// Set by Open.
	client  *nethttp.Client
	closeFn func()
	limiter *rate.Limiter
	secrets []string // redacted from everything the sink says
	sem     chan struct{}

	// notBefore is when the receiver said (Retry-After) that it may be
	// sent to again, in Unix nanoseconds: no request of the sink leaves
	// before it.
	notBefore atomic.Int64
	// retrying counts requests being retried, for the log's backoff.
	retrying atomic.Int64

	// memo is what the sink knows of records of failed groups, for when the
	// runtime writes them again (it always does before giving them up).
	memo memo

	// The current group: builders by URL and header values, and the
	// requests in flight. Only the sink's goroutine touches these, except
	// g, which the requests' goroutines write under g.mu.
	builders map[string]*builder
	order    []*builder
	one      *builder // the builder of a sink whose URL and headers are fixed
	g        *group
	// skipped counts, per fingerprint, the records this attempt of the
	// group left out as done (memo.done); emptied with each new group.
	skipped map[fingerprint]int
}

// group is the outcome of the requests of the current group.
type group struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error // the first failure
	refused int   // records the receiver refused, now in memo.bad
	first   error // the first refusal, for the error
	cancels []context.CancelFunc
}

func (g *group) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
	}
}

func (g *group) refuse(n int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused += n
	if g.first == nil {
		g.first = err
	}
}

// builder is one request being filled.
type builder struct {
	url   string
	hdr   []string
	body  []byte
	spans [][2]int // where each record's bytes are in body
	orig  []record.Origin
	fps   []fingerprint
}

func (b *builder) reset() {
	b.body, b.spans, b.orig, b.fps = b.body[:0], b.spans[:0], b.orig[:0], b.fps[:0]
}

// New returns a sink with configuration c, which it validates. It does no
// I/O.
func New(name string, c *Config) (*Sink, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Sink{name: name, cfg: *c, log: slog.Default().With("sink", name), rejects: map[int]bool{}}
	s.url, _ = parseTemplate(c.URL)
	s.dynamic = !s.url.static()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.Headers {
			if !yield(k) {
				return
			}
		}
	}) {
		t, _ := parseTemplate(c.Headers[k])
		s.hdrNames = append(s.hdrNames, k)
		s.hdrs = append(s.hdrs, t)
		s.dynamic = s.dynamic || !t.static()
	}
	s.contentType = c.ContentType
	if s.contentType == "" {
		s.contentType = "application/json"
		if c.Format == "ndjson" {
			s.contentType = "application/x-ndjson"
		}
	}
	for _, st := range c.RejectStatuses {
		s.rejects[st] = true
	}
	s.memo.seed = maphash.MakeSeed()
	s.memo.seed2 = maphash.MakeSeed()
	return s, nil
}

// Open builds the client (TLS, credentials, a token when OAuth2 is set) and
// waits for the receiver's host to accept a connection, up to
// connect_timeout.
func (s *Sink) Open(ctx context.Context) error {
	if err := s.openClient(ctx); err != nil {
		return err
	}
	if s.cfg.RateLimit > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(s.cfg.RateLimit), max(1, int(s.cfg.RateLimit)))
	}
	s.sem = make(chan struct{}, s.cfg.Concurrency)
	s.builders = map[string]*builder{}
	s.skipped = map[fingerprint]int{}
	s.g = &group{}
	return s.waitForReceiver(ctx)
}

// Write adds records to the group's requests, and sends each request that
// is full. A record the receiver refused in a failed group is rejected here
// (its group is written again for that); one it already took is left out.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	for i := range recs {
		r := &recs[i]
		v := r.Bytes()
		var fp fingerprint
		if s.memo.active() {
			fp = s.memo.fingerprint(r.Origin, v)
			if err := s.memo.takeBad(fp); err != nil {
				return &connector.RejectError{Index: i, Err: err}
			}
			if s.memo.doneCount(fp) > s.skipped[fp] {
				// Durable at the receiver already. Counted per attempt of the
				// group: a rewrite that fails again is written again, and must
				// leave the same records out.
				s.skipped[fp]++
				continue
			}
		}
		if err := s.check(r); err != nil {
			return &connector.RejectError{Index: i, Err: err}
		}
		b, err := s.builderFor(r)
		if err != nil {
			return &connector.RejectError{Index: i, Err: fmt.Errorf("sink/http: sink %s: %w", s.name, err)}
		}
		if len(b.spans) > 0 && (len(b.spans) >= s.cfg.MaxRequestRecords || len(b.body)+len(v)+2 > s.cfg.MaxRequestBytes) {
			if err := s.dispatch(ctx, b); err != nil {
				return err
			}
		}
		if fp == (fingerprint{}) {
			fp = s.memo.fingerprint(r.Origin, v)
		}
		b.add(s.cfg.Format, v, r.Origin, fp)
		if s.cfg.Format == "single" {
			if err := s.dispatch(ctx, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// check refuses a record the format cannot carry as it is.
func (s *Sink) check(r *record.Record) error {
	if s.cfg.Format == "single" {
		return nil
	}
	if err := r.CheckJSON(); err != nil {
		return fmt.Errorf("sink/http: sink %s: format %s needs a JSON value: %w", s.name, s.cfg.Format, err)
	}
	if s.cfg.Format == "ndjson" && bytes.IndexByte(r.Bytes(), '\n') >= 0 {
		return fmt.Errorf("sink/http: sink %s: format ndjson needs each value on one line, and this one spans lines: compact it upstream, or use format json_array", s.name)
	}
	return nil
}

func (s *Sink) builderFor(r *record.Record) (*builder, error) {
	if !s.dynamic {
		if s.one == nil {
			s.one = &builder{url: s.url.lits[0]}
			for _, t := range s.hdrs {
				s.one.hdr = append(s.one.hdr, t.lits[0])
			}
		}
		return s.one, nil
	}
	u, err := s.url.renderRecord(r, true)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	hv := make([]string, len(s.hdrs))
	key := u
	for i, t := range s.hdrs {
		if hv[i], err = t.renderRecord(r, false); err != nil {
			return nil, fmt.Errorf("headers.%s: %w", s.hdrNames[i], err)
		}
		if strings.ContainsAny(hv[i], "\r\n") {
			return nil, fmt.Errorf("headers.%s: the value holds a line break", s.hdrNames[i])
		}
		key += "\x00" + hv[i]
	}
	b, ok := s.builders[key]
	if !ok {
		b = &builder{url: u, hdr: hv}
		s.builders[key] = b
		s.order = append(s.order, b)
	}
	return b, nil
}

func (b *builder) add(format string, v []byte, o record.Origin, fp fingerprint) {
	switch format {
	case "json_array":
		if len(b.spans) == 0 {
			b.body = append(b.body, '[')
		} else {
			b.body = append(b.body, ',')
		}
	}
	start := len(b.body)
	b.body = append(b.body, v...)
	b.spans = append(b.spans, [2]int{start, len(b.body)})
	if format == "ndjson" {
		b.body = append(b.body, '\n')
	}
	b.orig = append(b.orig, o)
	b.fps = append(b.fps, fp)
}

// request is a request ready to go: its own copy of a builder's content.
type request struct {
	url   string
	hdr   []string
	body  []byte
	spans [][2]int
	orig  []record.Origin
	fps   []fingerprint
}

// dispatch sends b's request on a goroutine of its own, once a request slot
// is free (Write waits for one: concurrency bounds what is in flight), and
// empties b.
func (s *Sink) dispatch(ctx context.Context, b *builder) error {
	if len(b.spans) == 0 {
		return nil
	}
	if s.cfg.Format == "json_array" {
		b.body = append(b.body, ']')
	}
	rq := &request{url: b.url, hdr: b.hdr, body: bytes.Clone(b.body), spans: slices.Clone(b.spans),
		orig: slices.Clone(b.orig), fps: slices.Clone(b.fps)}
	b.reset()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	rctx, cancel := context.WithCancel(ctx)
	g := s.g
	g.mu.Lock()
	g.cancels = append(g.cancels, cancel)
	g.mu.Unlock()
	// The one goroutine per request in flight (see the package doc): the
	// client's calls block, so concurrency needs callers. It ends before
	// the Flush or Abort of its group returns.
	g.wg.Go(func() {
		defer func() { <-s.sem }()
		s.deliver(rctx, g, rq)
	})
	return nil
}

// deliver sends rq until it is answered, and records the outcome in g: 2xx
// marks its records done; a refusal of several records splits the request
// in halves to find the refused ones; one refused record goes to the memo
// of rejections; anything else fails the group.
func (s *Sink) deliver(ctx context.Context, g *group, rq *request) {
	res := s.send(ctx, rq)
	switch {
	case res.err == nil:
		s.memo.addDone(rq.fps)
	case res.refused && len(rq.spans) > 1:
		h := len(rq.spans) / 2
		s.deliver(ctx, g, s.part(rq, 0, h))
		s.deliver(ctx, g, s.part(rq, h, len(rq.spans)))
	case res.refused:
		err := &RefusedError{Sink: s.name, Origin: rq.orig[0], Status: res.status, Body: res.excerpt}
		s.memo.addBad(rq.fps[0], err)
		g.refuse(1, err)
	default:
		g.fail(res.err)
	}
}

// part returns a request of the records i to j of rq.
func (s *Sink) part(rq *request, i, j int) *request {
	b := &builder{url: rq.url, hdr: rq.hdr}
	for k := i; k < j; k++ {
		b.add(s.cfg.Format, rq.body[rq.spans[k][0]:rq.spans[k][1]], rq.orig[k], rq.fps[k])
	}
	if s.cfg.Format == "json_array" {
		b.body = append(b.body, ']')
	}
	return &request{url: b.url, hdr: b.hdr, body: b.body, spans: b.spans, orig: b.orig, fps: b.fps}
}

// idempotencyKey is the digest of what makes the request what it is: the
// sink, method and URL, the headers, and each record's origin and bytes (the
// body holds them). The same records sent again in the same request carry
// the same key, in this process or another.
func (s *Sink) idempotencyKey(rq *request) string {
	h := sha256.New()
	var n [8]byte
	str := func(v string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	str(s.name)
	str(s.cfg.Method)
	str(rq.url)
	for _, v := range rq.hdr {
		str(v)
	}
	for _, o := range rq.orig {
		str(o.Source)
		str(o.Partition)
		binary.BigEndian.PutUint64(n[:], uint64(o.Offset))
		h.Write(n[:])
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(rq.body)))
	h.Write(n[:])
	h.Write(rq.body)
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}

// Flush sends the requests not yet sent and waits for every request of the
// group. It returns nil only when every record is answered 2xx (or was
// already). Records the receiver refused make it fail, so that the runtime
// writes the group again and Write rejects them to the failure policy.
func (s *Sink) Flush(ctx context.Context) error {
	for _, b := range s.pending() {
		if err := s.dispatch(ctx, b); err != nil {
			s.wait(ctx)
			return err
		}
	}
	g := s.wait(ctx)
	switch {
	case g.err != nil:
		return g.err
	case g.refused > 0:
		return fmt.Errorf("sink/http: sink %s: the receiver refused %s (the first: %v); the group is written again so that they go to the failure policy alone", s.name, words.Plural(g.refused, "record"), g.first)
	}
	s.memo.clear()
	return nil
}

// pending returns the builders of the group, in the order they were made.
func (s *Sink) pending() []*builder {
	if s.one != nil {
		return []*builder{s.one}
	}
	return s.order
}

// wait waits for the group's requests, cutting them short when ctx ends,
// and starts a new group; it returns the old one.
func (s *Sink) wait(ctx context.Context) *group {
	g := s.g
	stop := context.AfterFunc(ctx, func() { g.cancelAll() })
	g.wg.Wait()
	stop()
	g.cancelAll()
	s.g = &group{}
	for _, b := range s.pending() {
		b.reset()
	}
	clear(s.builders)
	clear(s.skipped)
	s.order = s.order[:0]
	return g
}

func (g *group) cancelAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.cancels {
		c()
	}
}

// Abort cancels the group's requests in flight and forgets the rest. What
// the receiver took already stays taken (the sink writes through): the
// memo leaves those records out when the group is written again.
func (s *Sink) Abort(ctx context.Context) error {
	g := s.g
	g.cancelAll()
	s.wait(ctx)
	return nil
}

// Close waits for requests still in flight, cut short, and closes the
// client's idle connections. It flushes nothing.
func (s *Sink) Close(ctx context.Context) error {
	if s.g != nil {
		s.g.cancelAll()
		s.wait(ctx)
	}
	if s.closeFn != nil {
		s.closeFn()
	}
	return nil
}

// RefusedError is a record the receiver refused with a status of
// reject_statuses (or 413 alone): the record's rejection, which its dead
// letter carries with the status and the start of the answer.
type RefusedError struct {
	Sink   string
	Origin record.Origin
	Status int
	Body   string // the start of the receiver's answer
}

func (e *RefusedError) Error() string {
	o := fmt.Sprintf("at offset %d", e.Origin.Offset)
	if e.Origin.Source != "" || e.Origin.Partition != "" {
		o = fmt.Sprintf("%s %s@%d", e.Origin.Source, e.Origin.Partition, e.Origin.Offset)
	}
	msg := fmt.Sprintf("sink/http: sink %s: the receiver refused record %s: %d %s", e.Sink, o, e.Status, nethttp.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// memo remembers, across a failed group and its rewrites, the records the
// receiver took (so that they are not sent twice, however often the group
// is written again) and those it refused (so that Write rejects them, once).
// Records are known by a 128-bit fingerprint of their origin and bytes;
// equal records are counted, not merged. It is emptied when a group
// succeeds.
type memo struct {
	seed, seed2 maphash.Seed
	n           atomic.Int64 // entries in done and bad: Write skips the memo while 0
	mu          sync.Mutex
	done        map[fingerprint]int
	bad         map[fingerprint][]error
}

type fingerprint [2]uint64

// memoMax bounds the records remembered: past it the memo is cleared, which
// only costs records sent twice.
const memoMax = 1 << 20

func (m *memo) active() bool { return m.n.Load() > 0 }

func (m *memo) fingerprint(o record.Origin, v []byte) fingerprint {
	var fp fingerprint
	for i, seed := range []maphash.Seed{m.seed, m.seed2} {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteString(o.Source)
		h.WriteByte(0)
		h.WriteString(o.Partition)
		h.WriteByte(0)
		var off [8]byte
		binary.LittleEndian.PutUint64(off[:], uint64(o.Offset))
		h.Write(off[:])
		h.Write(v)
		fp[i] = h.Sum64()
	}
	if fp == (fingerprint{}) {
		fp[0] = 1 // the zero fingerprint means none
	}
	return fp
}

func (m *memo) addDone(fps []fingerprint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n.Load()+int64(len(fps)) > memoMax {
		m.clearLocked()
	}
	if m.done == nil {
		m.done = map[fingerprint]int{}
	}
	for _, fp := range fps {
		m.done[fp]++
	}
	m.n.Add(int64(len(fps)))
}

func (m *memo) addBad(fp fingerprint, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bad == nil {
		m.bad = map[fingerprint][]error{}
	}
	m.bad[fp] = append(m.bad[fp], err)
	m.n.Add(1)
}

// doneCount returns how many records of fingerprint fp the receiver took.
func (m *memo) doneCount(fp fingerprint) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done[fp]
}

func (m *memo) takeBad(fp fingerprint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := m.bad[fp]
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		delete(m.bad, fp)
	} else {
		m.bad[fp] = errs[1:]
	}
	m.n.Add(-1)
	return errs[0]
}

// clear forgets everything once a group succeeded: what is still listed
// was not in it (the runtime gave its group up).
func (m *memo) clear() {
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clearLocked()
}

func (m *memo) clearLocked() {
	clear(m.done)
	clear(m.bad)
	m.n.Store(0)
}

// jitter returns a wait between half and all of d.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
