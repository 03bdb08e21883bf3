package http_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/weir-etl/weir/connector"
	httpsrc "github.com/weir-etl/weir/source/http"
)

const token = "s3cret-token-4f1c9a"

// testHost is a connector.Host that numbers partitions and logs to a buffer.
type testHost struct {
	mu   sync.Mutex
	n    int
	logs *bytes.Buffer
	log  *slog.Logger
}

func newTestHost() *testHost {
	h := &testHost{logs: &bytes.Buffer{}}
	h.log = slog.New(slog.NewTextHandler(&lockedWriter{w: h.logs, mu: &h.mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return h
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (h *testHost) Assign(string, connector.Position) connector.Partition {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	return connector.Partition(h.n - 1)
}
func (h *testHost) Revoke(context.Context, ...connector.Partition) error { return nil }
func (h *testHost) Lost(...connector.Partition)                          {}
func (h *testHost) Skip(string, int64)                                   {}
func (h *testHost) Unread(string, int64)                                 {}
func (h *testHost) Logger() *slog.Logger                                 { return h.log }
func (h *testHost) logged() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
}

// running is a source opened on a free port, and, when commit is set, a
// loop that polls it and commits every batch at once (a pipeline whose
// sinks are instantly durable).
type running struct {
	s      *httpsrc.Source
	h      *testHost
	url    string
	cancel context.CancelFunc // ends Open's context: the run stops
	done   chan struct{}
}

func openSource(t *testing.T, c *httpsrc.Config, commit bool) *running {
	t.Helper()
	c.Address = "127.0.0.1:0"
	s, err := httpsrc.New("hooks", c)
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHost()
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	r := &running{s: s, h: h, url: "http://" + s.Addr(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for commit {
			var b connector.Batch
			if err := s.Poll(ctx, &b); err != nil {
				return
			}
			if err := s.Commit(ctx, []connector.Commit{{Partition: b.Partition, Position: b.End}}); err != nil {
				t.Error(err)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r
}

type answer struct {
	code   int
	body   string
	header nethttp.Header
}

func post(t *testing.T, url, ct, body string, hdr map[string]string) answer {
	t.Helper()
	req, _ := nethttp.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", ct)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &nethttp.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&nethttp.Client{Transport: tr, Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

func tokenConfig(t *testing.T) *httpsrc.Config {
	t.Setenv("TEST_HTTP_TOKENS", "other-token, "+token)
	c := httpsrc.NewConfig()
	c.Paths = []string{"/ingest"}
	c.Auth.BearerTokensEnv = "TEST_HTTP_TOKENS"
	return c
}

// Guarantee: a request without an accepted token is refused before its
// body is read: the answer comes while the client has sent the headers
// only, announcing a large body it never sends.
func TestNoTokenIsRefusedBeforeTheBody(t *testing.T) {
	r := openSource(t, tokenConfig(t), true)
	for _, auth := range []string{"", "Authorization: Bearer wrong\r\n", "Authorization: Basic dXNlcjpwYXNz\r\n"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: 10000000\r\n%s\r\n", auth)
		// The deadline only keeps a broken source from hanging the test:
		// one that waited for the body would never answer.
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: no answer before the body was sent: %v", auth, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%q: answered %d (WWW-Authenticate %q), want 401 with a Bearer challenge", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if a := post(t, r.url+"/ingest", "application/x-ndjson", `{"a":1}`, map[string]string{"Authorization": "Bearer " + token}); a.code != 200 || a.body != "{\"records\":1}\n" {
		t.Errorf("with the token: %d %s, want 200 {\"records\":1}", a.code, a.body)
	}
	if strings.Contains(r.h.logged(), token) {
		t.Errorf("the token is in the log:\n%s", r.h.logged())
	}
}

// Guarantee: a body past max_body_bytes is refused (413), announced,
// streamed, or inflated from a small gzip body; nothing of it is taken.
func TestBodyLimit(t *testing.T) {
	c := httpsrc.NewConfig()
	c.MaxBodyBytes = 1000
	r := openSource(t, c, true)
	big := strings.Repeat(`{"a":1}`+"\n", 200)
	if a := post(t, r.url+"/", "application/x-ndjson", big, nil); a.code != 413 || !strings.Contains(a.body, "max_body_bytes") {
		t.Errorf("announced: %d %s, want 413 naming max_body_bytes", a.code, a.body)
	}
	// Chunked: no Content-Length to refuse it by.
	req, _ := nethttp.NewRequest("POST", r.url+"/", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/x-ndjson")
	tr := &nethttp.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&nethttp.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked: %d, want 413", resp.StatusCode)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(big))
	zw.Close()
	if zb.Len() > 1000 {
		t.Fatalf("the gzip body is %d bytes: the test needs it under the limit", zb.Len())
	}
	if a := post(t, r.url+"/", "application/x-ndjson", zb.String(), map[string]string{"Content-Encoding": "gzip"}); a.code != 413 {
		t.Errorf("gzip inflating past the limit: %d %s, want 413", a.code, a.body)
	}
	if a := post(t, r.url+"/", "application/x-ndjson", zb.String()[:0]+`{"a":1}`, nil); a.code != 200 {
		t.Errorf("a small body after them: %d %s", a.code, a.body)
	}
}

// Guarantee: a request with an invalid record is refused whole with 400
// naming the line and the reason; a valid one of each format is taken.
func TestBadInputNamesTheLine(t *testing.T) {
	r := openSource(t, httpsrc.NewConfig(), true)
	a := post(t, r.url+"/", "application/x-ndjson", "{\"a\":1}\n\n{\"b\":2}\n{\"c\":\n", nil)
	var e struct {
		Error string
		Line  int
	}
	json.Unmarshal([]byte(a.body), &e)
	if a.code != 400 || e.Line != 4 || !strings.Contains(e.Error, "line 4: not JSON") {
		t.Errorf("got %d %s, want 400 naming line 4", a.code, a.body)
	}
	for _, tc := range []struct {
		ct, body string
		n        int
	}{
		{"application/x-ndjson", "{\"a\":1}\r\n{\"b\":[1, 2]}\n", 2},
		{"application/json", ` [ {"a":1}, 2 , "x,]" , [3,{"b":[]}] ] `, 4},
		{"application/json", `{"one": "document"}`, 1},
		{"text/plain; charset=utf-8", "a line\nanother\n", 2},
		{"application/json", `[]`, 0},
	} {
		if a := post(t, r.url+"/", tc.ct, tc.body, nil); a.code != 200 || a.body != fmt.Sprintf("{\"records\":%d}\n", tc.n) {
			t.Errorf("%s %q: %d %s, want 200 with %d records", tc.ct, tc.body, a.code, a.body, tc.n)
		}
	}
	if a := post(t, r.url+"/", "application/json", `{"a":1} {"b":2}`, nil); a.code != 400 || !strings.Contains(a.body, "more than one JSON value") {
		t.Errorf("two documents as application/json: %d %s", a.code, a.body)
	}
	if a := post(t, r.url+"/", "application/x-www-form-urlencoded", `a=1`, nil); a.code != 415 || !strings.Contains(a.body, "application/x-ndjson") {
		t.Errorf("a form: %d %s, want 415 naming what is taken", a.code, a.body)
	}
	if a := post(t, r.url+"/elsewhere", "application/json", `{}`, nil); a.code != 404 {
		t.Errorf("another path: %d", a.code)
	}
}

// Guarantee: past max_in_flight_requests a request is answered 429 with
// Retry-After, and taken again once the waiting one is answered.
func TestInFlightLimit(t *testing.T) {
	c := httpsrc.NewConfig()
	c.MaxInFlightRequests = 1
	r := openSource(t, c, false)
	first := make(chan answer, 1)
	go func() { first <- post(t, r.url+"/", "application/json", `{"a":1}`, nil) }()
	ctx := context.Background()
	var b connector.Batch
	if err := r.s.Poll(ctx, &b); err != nil {
		t.Fatal(err)
	}
	a := post(t, r.url+"/", "application/json", `{"b":2}`, nil)
	if a.code != 429 || a.header.Get("Retry-After") != "1" {
		t.Errorf("past the limit: %d (Retry-After %q), want 429 with Retry-After 1", a.code, a.header.Get("Retry-After"))
	}
	if err := r.s.Commit(ctx, []connector.Commit{{Partition: b.Partition, Position: b.End}}); err != nil {
		t.Fatal(err)
	}
	if a := <-first; a.code != 200 {
		t.Errorf("the first request: %d %s", a.code, a.body)
	}
	go func() { first <- post(t, r.url+"/", "application/json", `{"b":2}`, nil) }()
	b.Reset()
	if err := r.s.Poll(ctx, &b); err != nil {
		t.Fatal(err)
	}
	r.s.Commit(ctx, []connector.Commit{{Partition: b.Partition, Position: b.End}})
	if a := <-first; a.code != 200 {
		t.Errorf("after the first was answered: %d %s", a.code, a.body)
	}
}

// Guarantee: when the run stops, a request whose records were never polled
// is answered 503 at once, one whose records were polled waits for their
// commit, and a new request is refused with 503.
func TestStopAnswers(t *testing.T) {
	r := openSource(t, httpsrc.NewConfig(), false)
	ctx := context.Background()
	polled := make(chan answer, 1)
	go func() { polled <- post(t, r.url+"/", "application/json", `{"a":1}`, nil) }()
	var b connector.Batch
	if err := r.s.Poll(ctx, &b); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan answer, 1)
	go func() { waiting <- post(t, r.url+"/", "application/json", `{"never":"polled"}`, nil) }()
	// Wait until the second request is queued: a Poll with a cancelled
	// context returns it if it is there.
	for {
		var b2 connector.Batch
		cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		err := r.s.Poll(cctx, &b2)
		cancel()
		if err == nil {
			// Polled: put it back by seeking, so that it counts as not polled.
			r.s.Seek(ctx, b2.Partition, b.End)
			break
		}
	}
	r.cancel()
	if a := <-waiting; a.code != 503 || a.header.Get("Retry-After") == "" {
		t.Errorf("a request never polled: %d %s, want 503 with Retry-After at once", a.code, a.body)
	}
	if a := post(t, r.url+"/", "application/json", `{"late":1}`, nil); a.code != 503 {
		t.Errorf("a request after the stop: %d %s, want 503", a.code, a.body)
	}
	if err := r.s.Commit(ctx, []connector.Commit{{Partition: b.Partition, Position: b.End}}); err != nil {
		t.Fatal(err)
	}
	if a := <-polled; a.code != 200 {
		t.Errorf("a polled request committed during the stop: %d %s, want 200", a.code, a.body)
	}
}

// Guarantee: with hmac_header set, only a body signed with the secret is
// taken, and neither the secret nor the signature reaches the log.
func TestHMACSignature(t *testing.T) {
	t.Setenv("TEST_HMAC_SECRET", "hmac-secret-77")
	c := httpsrc.NewConfig()
	c.Auth.HMACHeader = "X-Hub-Signature-256"
	c.Auth.HMACSecretEnv = "TEST_HMAC_SECRET"
	c.Auth.HMACPrefix = "sha256="
	c.KeepHeaders = []string{"*"}
	r := openSource(t, c, true)
	body := `{"action":"opened"}`
	m := hmac.New(sha256.New, []byte("hmac-secret-77"))
	m.Write([]byte(body))
	sig := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if a := post(t, r.url+"/", "application/json", body, map[string]string{"X-Hub-Signature-256": sig}); a.code != 200 {
		t.Errorf("signed: %d %s", a.code, a.body)
	}
	for _, bad := range []string{"", "sha256=00", sig[:len(sig)-2] + "00", strings.TrimPrefix(sig, "sha256=")} {
		hdr := map[string]string{}
		if bad != "" {
			hdr["X-Hub-Signature-256"] = bad
		}
		if a := post(t, r.url+"/", "application/json", body, hdr); a.code != 401 {
			t.Errorf("signature %q: %d, want 401", bad, a.code)
		}
	}
	if l := r.h.logged(); strings.Contains(l, "hmac-secret-77") || strings.Contains(l, sig) {
		t.Errorf("the secret or a signature is in the log:\n%s", l)
	}
}

// Guarantee: a secret that cannot be read fails Open with an error naming
// where it was looked for, never a secret; a public address needs auth.
func TestSecretsAndAddresses(t *testing.T) {
	c := httpsrc.NewConfig()
	c.Auth.BearerTokensFile = "/nonexistent/tokens"
	s, err := httpsrc.New("hooks", c)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Open(context.Background(), newTestHost())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/tokens") {
		t.Errorf("Open with a missing token file: %v", err)
	}
	s.Close(context.Background())
	c = httpsrc.NewConfig()
	c.Address = "0.0.0.0:8080"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "auth.none") {
		t.Errorf("a public address without auth: %v", err)
	}
	c.Auth.None = true
	if err := c.Validate(); err != nil {
		t.Errorf("a public address with auth.none: %v", err)
	}
}

// Guarantee: a server that stops serving while the source runs (its listener
// failed) fails the next Poll, which fails the run, instead of a source that
// looks healthy while it refuses every client.
func TestServingStoppedFailsPoll(t *testing.T) {
	r := openSource(t, httpsrc.NewConfig(), false)
	if err := httpsrc.FailListener(r.s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b connector.Batch
	err := r.s.Poll(ctx, &b)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "stopped taking requests") || !strings.Contains(err.Error(), r.s.Addr()) {
		t.Fatalf("Poll after the listener failed: %v; want an error naming the address and that no request is taken", err)
	}
	if !strings.Contains(r.h.logged(), "serving stopped") {
		t.Errorf("nothing logged:\n%s", r.h.logged())
	}
}
