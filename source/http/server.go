package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/weir-etl/weir/record"
)

// serveHTTP takes one request: every check that needs no body first (method,
// path, credentials, the in-flight limits, the declared size and type), then
// the body, then its records, which it hands to the partition and waits for
// until they are durable.
func (s *Source) serveHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	if r.Method != nethttp.MethodPost && r.Method != nethttp.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		s.refuse(w, nethttp.StatusMethodNotAllowed, "send records with POST or PUT")
		return
	}
	p, ok := s.routes[r.URL.Path]
	if !ok {
		s.refuse(w, nethttp.StatusNotFound, fmt.Sprintf("no records are taken at %s: use one of %s", r.URL.Path, strings.Join(s.cfg.Paths, ", ")))
		return
	}
	if !s.auth.admit(r) || !s.auth.signed(r) {
		if s.auth.challenge != "" {
			w.Header().Set("WWW-Authenticate", s.auth.challenge)
		}
		s.refuse(w, nethttp.StatusUnauthorized, "missing or wrong credentials")
		return
	}
	f, err := formatOf(s.cfg.Format, r.Header.Get("Content-Type"))
	if err != nil {
		s.refuse(w, nethttp.StatusUnsupportedMediaType, err.Error())
		return
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity", "gzip", "x-gzip", "zstd":
	default:
		s.refuse(w, nethttp.StatusUnsupportedMediaType, fmt.Sprintf("Content-Encoding %s is not taken: send the body as it is, gzip or zstd", enc))
		return
	}
	if r.ContentLength > int64(s.cfg.MaxBodyBytes) {
		s.tooLarge(w)
		return
	}
	if code := s.admit(); code != 0 {
		if code == nethttp.StatusServiceUnavailable {
			s.busy(w, code, "weir is stopping: send it again after Retry-After")
		} else {
			s.busy(w, code, "too many requests in flight: send it again after Retry-After")
		}
		return
	}
	req := &request{done: make(chan struct{}), recs: recBufs.Get().(*recBuf)}
	taken := false
	defer func() {
		if !taken {
			s.release(req)
			putRecs(req.recs)
		}
	}()
	body, code, msg := s.readBody(r, enc, req)
	if code != 0 {
		if code == nethttp.StatusTooManyRequests {
			s.busy(w, code, msg)
		} else {
			s.refuse(w, code, msg)
		}
		return
	}
	if !s.auth.verify(r, body) {
		s.refuse(w, nethttp.StatusUnauthorized, "the signature in "+s.auth.hmacHeader+" does not match the body")
		return
	}
	recs, blank, bad := decode(f, body, req.recs.recs[:0])
	req.recs.recs = recs
	if bad != nil {
		s.refuseJSON(w, nethttp.StatusBadRequest, map[string]any{"error": bad.Error(), "line": bad.line})
		return
	}
	s.decorate(r, recs)
	// Each record costs its bytes and a fixed overhead, as the runtime
	// counts it (record.Size).
	extra := int64(64 * len(recs))
	req.bytes += extra
	s.bytes.Add(extra)
	if !s.enqueue(p, req, blank) {
		s.busy(w, nethttp.StatusServiceUnavailable, "weir is stopping: send it again after Retry-After")
		return
	}
	taken = true
	s.await(w, r, req)
}

// admit takes a request slot and returns 0, or the answer when none is to
// be had: 503 while the run stops, 429 at the in-flight limits.
func (s *Source) admit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopping:
		return nethttp.StatusServiceUnavailable
	case s.requests >= s.cfg.MaxInFlightRequests || (s.requests > 0 && s.bytes.Load() >= s.limitBytes):
		return nethttp.StatusTooManyRequests
	}
	s.requests++
	return 0
}

// release gives back the slot and bytes of a request that was not taken.
func (s *Source) release(req *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests--
	s.bytes.Add(-req.bytes)
}

// readBody reads the body, decompressed, into a buffer of its own that the
// records will share. The bytes count against the in-flight byte limit as
// they arrive; a body that would pass it while other requests hold bytes is
// answered 429 (nothing of it is taken).
func (s *Source) readBody(r *nethttp.Request, enc string, req *request) ([]byte, int, string) {
	limit := int64(s.cfg.MaxBodyBytes)
	var src io.Reader = nethttp.MaxBytesReader(nil, r.Body, limit)
	switch enc {
	case "gzip", "x-gzip":
		zr := gzipReaders.Get().(*gzip.Reader)
		defer gzipReaders.Put(zr)
		if err := zr.Reset(src); err != nil {
			code, msg := s.readError(err)
			return nil, code, msg
		}
		src = zr
	case "zstd":
		zr := zstdReaders.Get().(*zstd.Decoder)
		defer func() {
			zr.Reset(nil)
			zstdReaders.Put(zr)
		}()
		if err := zr.Reset(src); err != nil {
			code, msg := s.readError(err)
			return nil, code, msg
		}
		src = zr
	}
	n := 32 << 10
	if enc == "" && r.ContentLength > 0 {
		n = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, n)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		chunk := buf[len(buf):min(cap(buf), len(buf)+256<<10)]
		k, err := src.Read(chunk)
		buf = buf[:len(buf)+k]
		if int64(len(buf)) > limit {
			return nil, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than max_body_bytes (%d bytes): send fewer records a request", limit)
		}
		if k > 0 {
			req.bytes += int64(k)
			if total := s.bytes.Add(int64(k)); total > s.limitBytes && total > req.bytes {
				return nil, nethttp.StatusTooManyRequests, "too much data in flight: send it again after Retry-After"
			}
		}
		if err == io.EOF {
			return buf, 0, ""
		}
		if err != nil {
			code, msg := s.readError(err)
			return nil, code, msg
		}
	}
}

// readError is the answer to a body that could not be read.
func (s *Source) readError(err error) (int, string) {
	var mbe *nethttp.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than max_body_bytes (%d bytes): send fewer records a request", s.cfg.MaxBodyBytes)
	case errors.As(err, &ne) && ne.Timeout():
		return nethttp.StatusRequestTimeout, fmt.Sprintf("the body did not arrive within read_timeout (%v)", s.cfg.ReadTimeout)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, io.ErrUnexpectedEOF):
		return nethttp.StatusBadRequest, "the body is cut short or not what its Content-Encoding says: " + err.Error()
	}
	return nethttp.StatusBadRequest, "reading the body: " + err.Error()
}

var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// zstdReaders are decoders that decode on the calling goroutine
// (concurrency 1 starts none of their own).
var zstdReaders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic("source/http: a zstd decoder with constant options: " + err.Error())
	}
	return d
}}

// decorate gives the records of a request the metadata every record of it
// shares: the path, and the headers kept.
func (s *Source) decorate(r *nethttp.Request, recs []record.Record) {
	meta := []record.Meta{{Key: "path", Value: r.URL.Path}}
	var headers []record.Header
	if s.keep != nil {
		for k, vs := range r.Header {
			if (!s.keepAll && !s.keep[k]) || s.auth.sensitive(k) {
				continue
			}
			for _, v := range vs {
				headers = append(headers, record.Header{Key: k, Value: []byte(v)})
			}
		}
	}
	now := time.Now()
	for i := range recs {
		recs[i].Meta = meta
		recs[i].Headers = headers
		recs[i].Time = now
	}
}

// enqueue gives the request's records their offsets in p and queues the
// request, which holds them; false when the run is stopping.
func (s *Source) enqueue(p *part, req *request, blank int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	recs := req.recs.recs
	for i := range recs {
		recs[i].Origin.Offset = p.next + int64(i)
	}
	req.start = p.next
	p.next += int64(len(recs))
	req.end, req.n = p.next, len(recs)
	switch {
	case len(recs) == 0:
		// Nothing to make durable: the answer is due now.
		s.answer(req, nethttp.StatusOK)
		putRecs(req.recs)
		req.recs = nil
	case earlyAnswer:
		// Answered now, yet its records wait for Poll like any others.
		s.answer(req, nethttp.StatusOK)
		p.reqs = append(p.reqs, req)
		signal(s.ready)
	default:
		p.reqs = append(p.reqs, req)
		signal(s.ready)
	}
	if blank > 0 {
		s.host.Skip("blank", int64(blank))
	}
	return true
}

// await waits for the request's answer: its records durable (200), the run
// stopping first (503), ack_timeout passing (503), or the client gone.
func (s *Source) await(w nethttp.ResponseWriter, r *nethttp.Request, req *request) {
	var timeout <-chan time.Time
	if s.cfg.AckTimeout > 0 {
		t := time.NewTimer(s.cfg.AckTimeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-req.done:
	case <-timeout:
		s.busy(w, nethttp.StatusServiceUnavailable, fmt.Sprintf("the records were not durable within ack_timeout (%v); they may still be written, so sending them again may duplicate them", s.cfg.AckTimeout))
		return
	case <-r.Context().Done():
		// The client is gone; its records stay queued and count until
		// they are committed.
		return
	}
	s.mu.Lock()
	code := req.code
	s.mu.Unlock()
	if code == nethttp.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(nethttp.StatusOK)
		fmt.Fprintf(w, "{\"records\":%d}\n", req.n)
		return
	}
	s.busy(w, code, "weir stopped before the records were durable: send them again after Retry-After")
}

// refuse answers an error that the request itself caused; the connection
// is closed so that a body not read is not read afterwards either.
func (s *Source) refuse(w nethttp.ResponseWriter, code int, msg string) {
	s.refuseJSON(w, code, map[string]any{"error": msg})
}

func (s *Source) refuseJSON(w nethttp.ResponseWriter, code int, body map[string]any) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(body)
	w.Write(append(b, '\n'))
}

// busy answers a request to send again later: 429 or 503 with Retry-After.
func (s *Source) busy(w nethttp.ResponseWriter, code int, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(s.cfg.RetryAfter.Seconds()))))
	s.refuse(w, code, msg)
}

func (s *Source) tooLarge(w nethttp.ResponseWriter) {
	s.refuse(w, nethttp.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than max_body_bytes (%d bytes): send fewer records a request", s.cfg.MaxBodyBytes))
}

// The backoff between attempts to listen at start, as for a peer that does
// not answer: doubling from the first to the last.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// listen listens on addr. An address in use (another process still holding
// it, as a weir still stopping does) is waited for up to limit, with a WARN
// per attempt naming the address and the error; other errors fail at once.
func listen(ctx context.Context, addr string, limit time.Duration, who string, log *slog.Logger) (net.Listener, error) {
	start := time.Now()
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			if attempt > 1 {
				log.Info("source/http: the address is free; listening", "address", addr, "waited", time.Since(start).Round(time.Millisecond), "attempts", attempt)
			}
			return ln, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("source/http: %s: listening on %s: %w", who, addr, err)
		}
		left := limit - time.Since(start)
		if left <= 0 {
			return nil, fmt.Errorf("source/http: %s: the address %s stayed in use for connect_timeout (%v), %d attempts: another process holds it; stop it, or listen elsewhere, or raise connect_timeout", who, addr, limit, attempt)
		}
		pause := min(backoff, left)
		log.Warn("source/http: the address is in use; retrying", "address", addr, "err", err.Error(), "attempt", attempt,
			"waited", time.Since(start).Round(time.Millisecond), "retry_in", pause.Round(time.Millisecond), "connect_timeout", limit)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("source/http: %s: listening on %s: %w", who, addr, ctx.Err())
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
