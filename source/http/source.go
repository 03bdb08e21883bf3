package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "http_server",
		Doc:    "takes records POSTed over HTTP (NDJSON, JSON, lines) and answers each request only once its records are durable",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}

// Source is the HTTP source. Create it with New.
type Source struct {
	name string
	cfg  Config
	// limitBytes bounds the record bytes held for unanswered requests; the
	// runtime's in-flight byte limit (LimitReadAhead), 64 MiB by default.
	limitBytes int64

	// Set by Open, read-only afterwards.
	host        connector.Host
	log         *slog.Logger
	auth        *authenticator
	routes      map[string]*part // by path
	incarnation string
	srv         *nethttp.Server
	ln          net.Listener
	addr        atomic.Pointer[string] // the listener's address, once listening
	served      chan struct{}          // closed when Serve returned
	// serveErr is why Serve returned while the source was not closing
	// (its listener failed): nothing is taken any more, so Poll fails.
	serveErr  atomic.Pointer[error]
	stopWatch func() bool // stops the watch of Open's context
	certs     *certReloader
	keep      map[string]bool // canonical names of headers kept; nil keeps none
	keepAll   bool

	handlers sync.WaitGroup // handlers running

	// bytes are the record bytes held for requests not yet answered,
	// counted as bodies are read (so that a slow body does not reserve
	// what it never sends).
	bytes atomic.Int64
	// ready has a token when data was added (capacity 1, never blocks).
	ready chan struct{}

	mu       sync.Mutex // guards what follows, and every part's fields
	parts    []*part    // by connector.Partition id order of Open
	byID     map[connector.Partition]*part
	requests int  // taken and not answered
	stopping bool // the run is stopping: nothing more is taken nor polled
	closed   bool
	rr       int // where the next Poll starts looking
}

// part is one partition: the requests whose records are not all
// committed, in order, each holding its records. Their offsets are
// contiguous: reqs[rhead] starts at or before base, and each request starts
// where the one before it ends.
//
// The records stay in their request's own slice rather than being copied
// into one queue of the partition: a request's records are copied once, by
// Poll into the batch, and the slice is reused when the request is
// committed.
type part struct {
	id   connector.Partition
	name string
	base int64 // the committed position: Seek goes no further back
	read int64 // the next offset Poll hands out
	next int64 // the offset the next record will get
	// reqs[rhead:] are the requests with records at base or after.
	reqs  []*request
	rhead int
	cur   int // Poll's cursor: the index in reqs of the request holding read
}

// request is one request waiting for its records to become durable.
type request struct {
	start, end int64 // the offsets of its first record and after its last
	recs       *recBuf
	bytes      int64
	n          int
	done       chan struct{} // closed when answered; code says how
	code       int
}

// recBuf is a request's records. Once the request is committed nothing
// refers to the slice (Poll copied the records into their batches), so it
// is cleared and used again by a later request.
type recBuf struct{ recs []record.Record }

var recBufs = sync.Pool{New: func() any { return new(recBuf) }}

// putRecs clears b (its records point into a request's body, which must
// not be kept alive) and returns it to the pool.
func putRecs(b *recBuf) {
	if b == nil {
		return
	}
	clear(b.recs)
	b.recs = b.recs[:0]
	recBufs.Put(b)
}

// New returns a source with configuration c, which it validates.
func New(name string, c *Config) (*Source, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Source{name: name, cfg: *c, limitBytes: 64 << 20, ready: make(chan struct{}, 1)}
	s.cfg.Paths = append([]string(nil), c.Paths...)
	return s, nil
}

// LimitReadAhead implements connector.ReadAheadLimiter: the records held
// for unanswered requests are bounded by the source's in-flight byte limit.
func (s *Source) LimitReadAhead(n int64) {
	if n > 0 {
		s.limitBytes = n
	}
}

// CommitPromptly implements connector.PromptCommitter: a request waits for
// the commit of its records, so commits must not wait for the interval.
func (s *Source) CommitPromptly() bool { return true }

// Addr returns the address the source listens on, once Open returned.
func (s *Source) Addr() string {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// Open reads the secrets, assigns the partitions under names of this run
// alone (see newIncarnation), listens and starts serving.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	s.log = h.Logger()
	au, err := newAuthenticator(&s.cfg.Auth)
	if err != nil {
		return fmt.Errorf("source/http: source %s: %w", s.name, err)
	}
	s.auth = au
	if len(s.cfg.KeepHeaders) > 0 {
		s.keep = map[string]bool{}
		for _, k := range s.cfg.KeepHeaders {
			if k == "*" {
				s.keepAll = true
			}
			s.keep[nethttp.CanonicalHeaderKey(k)] = true
		}
	}
	var tlsCfg *tlsConfig
	if s.cfg.TLS.CertFile != "" {
		if tlsCfg, err = newTLSConfig(&s.cfg.TLS); err != nil {
			return fmt.Errorf("source/http: source %s: tls: %w", s.name, err)
		}
		s.certs = tlsCfg.certs
	}
	s.incarnation, err = newIncarnation()
	if err != nil {
		return fmt.Errorf("source/http: source %s: %w", s.name, err)
	}
	s.routes = map[string]*part{}
	s.byID = map[connector.Partition]*part{}
	var shared *part
	for _, p := range s.cfg.Paths {
		if s.cfg.PartitionBy == "shared" {
			if shared == nil {
				shared = s.assign("http")
			}
			s.routes[p] = shared
			continue
		}
		s.routes[p] = s.assign(p)
	}
	ln, err := listen(ctx, s.cfg.Address, s.cfg.ConnectTimeout, "source "+s.name, s.log)
	if err != nil {
		return err
	}
	s.ln = ln
	addr := ln.Addr().String()
	s.addr.Store(&addr)
	s.srv = &nethttp.Server{
		Handler:           nethttp.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.Background() },
	}
	if tlsCfg != nil {
		s.srv.TLSConfig = tlsCfg.cfg
	}
	s.served = make(chan struct{})
	// The accept loop is net/http's own goroutine (see the package doc); it
	// ends when Close closes the server.
	go func() {
		defer close(s.served)
		var err error
		if tlsCfg != nil {
			err = s.srv.ServeTLS(ln, "", "")
		} else {
			err = s.srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			// No request is taken from now on: a source that looked healthy
			// while it refused every client would hide the failure, so the
			// next Poll fails the run (its exit code and summary say why).
			s.log.Error("source/http: serving stopped", "err", err)
			s.serveErr.Store(&err)
			signal(s.ready)
		}
	}()
	// Open's context ends when the run begins to stop: from then on nothing
	// more is taken, and what will never be polled is answered at once.
	s.stopWatch = context.AfterFunc(ctx, s.stop)
	s.log.Info("source/http: listening", "address", ln.Addr().String(), "paths", s.cfg.Paths, "tls", tlsCfg != nil)
	return nil
}

// newIncarnation returns a name for this run of the source, unique across
// runs and processes: its start time and 64 random bits. Partition names
// carry it because positions restart at 0 in every run: a sink that keeps
// positions (exactly-once PostgreSQL) must never take a new run's records
// for ones it already holds under an old run's positions.
func newIncarnation() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("a random run id: %w", err)
	}
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]), nil
}

func (s *Source) assign(route string) *part {
	p := &part{name: route + "@" + s.incarnation}
	if stableNames {
		p.name = route
	}
	p.id = s.host.Assign(p.name, 0)
	s.parts = append(s.parts, p)
	s.byID[p.id] = p
	return p
}

// Poll hands out the next records of a partition with records not yet
// polled, up to batch_size, taking the partitions in turn.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	for {
		if err := s.serveErr.Load(); err != nil {
			return fmt.Errorf("source/http: source %s: the server at %s stopped taking requests: %w", s.name, s.Addr(), *err)
		}
		s.mu.Lock()
		if !s.stopping {
			for i := range s.parts {
				p := s.parts[(s.rr+i)%len(s.parts)]
				if p.read >= p.next {
					continue
				}
				s.rr = (s.rr + i + 1) % len(s.parts)
				p.take(b, min(int(p.next-p.read), s.cfg.BatchSize))
				b.Partition, b.End = p.id, connector.Position(p.read)
				b.CaughtUp = s.caughtUp()
				s.mu.Unlock()
				return nil
			}
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take appends the n records from p.read on to b, across as many requests
// as they span, and moves p.read past them. s.mu is held.
func (p *part) take(b *connector.Batch, n int) {
	k := p.locate()
	for n > 0 {
		r := p.reqs[k]
		from := int(p.read - r.start)
		m := min(n, len(r.recs.recs)-from)
		b.Records = append(b.Records, r.recs.recs[from:from+m]...)
		p.read += int64(m)
		n -= m
		if p.read == r.end {
			k++
		}
	}
	p.cur = k
}

// locate returns the index in p.reqs of the request holding offset p.read
// (< p.next): the cursor, unless a Seek or Commit moved past it.
func (p *part) locate() int {
	if k := p.cur; k >= p.rhead && k < len(p.reqs) && p.reqs[k].start <= p.read && p.read < p.reqs[k].end {
		return k
	}
	held := p.reqs[p.rhead:]
	return p.rhead + sort.Search(len(held), func(i int) bool { return held[i].end > p.read })
}

// caughtUp reports whether every record taken was polled. s.mu is held.
func (s *Source) caughtUp() bool {
	for _, p := range s.parts {
		if p.read < p.next {
			return false
		}
	}
	return true
}

// Commit answers the requests whose records are all before the committed
// positions and lets go of those records.
func (s *Source) Commit(ctx context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		p, ok := s.byID[c.Partition]
		if !ok {
			return fmt.Errorf("source/http: source %s: commit of partition %d, which it does not have", s.name, c.Partition)
		}
		pos := int64(c.Position)
		if pos > p.next {
			return fmt.Errorf("source/http: source %s: partition %s: commit at %d, past its last record (%d)", s.name, p.name, pos, p.next)
		}
		for ; p.rhead < len(p.reqs) && p.reqs[p.rhead].end <= pos; p.rhead++ {
			r := p.reqs[p.rhead]
			s.answer(r, nethttp.StatusOK)
			putRecs(r.recs)
			r.recs = nil
			p.reqs[p.rhead] = nil
		}
		if p.rhead > len(p.reqs)/2 {
			p.reqs = p.reqs[:copy(p.reqs, p.reqs[p.rhead:])]
			p.cur -= p.rhead
			p.rhead = 0
		}
		p.base = max(p.base, pos)
	}
	return nil
}

// answer tells a waiting request how it ends. s.mu is held.
func (s *Source) answer(r *request, code int) {
	if r.code != 0 {
		return
	}
	r.code = code
	s.requests--
	s.bytes.Add(-r.bytes)
	close(r.done)
}

// Seek makes the partition's next batches start at pos again: every record
// from the committed position on is still held.
func (s *Source) Seek(ctx context.Context, id connector.Partition, pos connector.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.byID[id]
	if !ok {
		return fmt.Errorf("source/http: source %s: seek of partition %d, which it does not have", s.name, id)
	}
	if int64(pos) < p.base || int64(pos) > p.next {
		return fmt.Errorf("source/http: source %s: partition %s: seek to %d, outside the records it holds (%d to %d)", s.name, p.name, pos, p.base, p.next)
	}
	p.read = int64(pos)
	signal(s.ready)
	return nil
}

// stop is called when the run begins to stop: nothing more is taken, and a
// request with records that were never polled (and so never will be) is
// answered 503 at once. Requests whose records were all polled wait for
// the final commit, within the runtime's shutdown_timeout.
func (s *Source) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return
	}
	s.stopping = true
	for _, p := range s.parts {
		for _, r := range p.reqs[p.rhead:] {
			if r != nil && r.end > p.read {
				s.answer(r, nethttp.StatusServiceUnavailable)
			}
		}
	}
	signal(s.ready)
}

// Close stops taking requests, answers every request still waiting with 503
// (its records are not known to be durable: the client sends it again), and
// waits for the handlers and the server's goroutines to end.
func (s *Source) Close(ctx context.Context) error {
	if s.stopWatch != nil {
		s.stopWatch()
	}
	s.stop()
	s.mu.Lock()
	s.closed = true
	for _, p := range s.parts {
		for _, r := range p.reqs[p.rhead:] {
			if r != nil {
				s.answer(r, nethttp.StatusServiceUnavailable)
				putRecs(r.recs)
				r.recs = nil
			}
		}
		p.reqs, p.rhead, p.cur = nil, 0, 0
	}
	s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	// Shutdown lets the handlers write their answers (every request is
	// answered by now) and closes idle connections; Close then cuts what
	// is left (a client still sending a body).
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.served
	s.handlers.Wait()
	if err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
		return fmt.Errorf("source/http: source %s: closing the server: %w", s.name, err)
	}
	return nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
