package http_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// receiver is a test endpoint that keeps every record of every request it
// answers 200, in order of arrival, and what each request carried.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got [][]byte
	// answer, when set, chooses the answer to a request before it is taken
	// (0 takes it).
	answer func(r *nethttp.Request, body []byte) int
	reqs   []seen
	// dedupe takes a request whose idempotency key it already took as
	// taken again, without keeping its records twice, as a receiver that
	// deduplicates does.
	dedupe bool
	taken  map[string]bool
}

// seen is one request as the receiver saw it.
type seen struct {
	key     string
	status  int
	records [][]byte
	header  nethttp.Header
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(nethttp.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w nethttp.ResponseWriter, r *nethttp.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			w.WriteHeader(400)
			return
		}
		rd = zr
	}
	body, err := io.ReadAll(rd)
	if err != nil {
		return
	}
	var recs [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		recs = append(recs, bytes.Clone(sc.Bytes()))
	}
	rc.mu.Lock()
	answer := rc.answer
	rc.mu.Unlock()
	code := 0
	if answer != nil {
		code = answer(r, body)
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, seen{key: r.Header.Get("Idempotency-Key"), status: code, records: recs, header: r.Header.Clone()})
	key := r.Header.Get("Idempotency-Key")
	if (code == 0 || code == 200) && !(rc.dedupe && rc.taken[key]) {
		rc.got = append(rc.got, recs...)
		if rc.taken == nil {
			rc.taken = map[string]bool{}
		}
		rc.taken[key] = true
	}
	rc.mu.Unlock()
	if code == 0 {
		code = 200
	}
	w.WriteHeader(code)
}

func (rc *receiver) written() [][]byte {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([][]byte(nil), rc.got...)
}
