package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// readSecret returns the secret of the environment variable env or the first
// line of the file path; what it came from names it in errors, never its
// value.
func readSecret(env, path string) (string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return "", fmt.Errorf("the environment variable %s is not set or empty", env)
		}
		return v, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("reading %s: %w", path, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		line = strings.TrimRight(line, "\r")
		if line == "" {
			return "", fmt.Errorf("%s is empty", path)
		}
		return line, nil
	}
	return "", nil
}

// authTransport adds static credentials to every request.
type authTransport struct {
	base   nethttp.RoundTripper
	header string
}

func (a *authTransport) RoundTrip(r *nethttp.Request) (*nethttp.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", a.header)
	return a.base.RoundTrip(r)
}

// openClient builds the client: TLS, keep-alive connections for the
// concurrency, and the credentials.
func (s *Sink) openClient(ctx context.Context) error {
	tcfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.cfg.TLS.ServerName, InsecureSkipVerify: s.cfg.TLS.InsecureSkipVerify}
	if f := s.cfg.TLS.CAFile; f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("sink/http: sink %s: tls.ca_file: %w", s.name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("sink/http: sink %s: tls.ca_file %s holds no PEM certificate", s.name, f)
		}
		tcfg.RootCAs = pool
	}
	if s.cfg.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLS.CertFile, s.cfg.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("sink/http: sink %s: tls.cert_file: %w", s.name, err)
		}
		tcfg.Certificates = []tls.Certificate{cert}
	}
	tr := &nethttp.Transport{
		Proxy:               nethttp.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tcfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        max(100, 2*s.cfg.Concurrency),
		MaxIdleConnsPerHost: max(2, 2*s.cfg.Concurrency),
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		// The body's encoding is the sink's own (compression); answers are
		// read as they come.
		DisableCompression: true,
	}
	var rt nethttp.RoundTripper = tr
	a := &s.cfg.Auth
	switch {
	case a.BearerTokenEnv != "" || a.BearerTokenFile != "":
		tok, err := readSecret(a.BearerTokenEnv, a.BearerTokenFile)
		if err != nil {
			return fmt.Errorf("sink/http: sink %s: auth.bearer_token: %w", s.name, err)
		}
		s.secrets = append(s.secrets, tok)
		rt = &authTransport{base: tr, header: "Bearer " + tok}
	case a.BasicUsername != "":
		pass, err := readSecret(a.BasicPasswordEnv, a.BasicPasswordFile)
		if err != nil {
			return fmt.Errorf("sink/http: sink %s: auth.basic_password: %w", s.name, err)
		}
		s.secrets = append(s.secrets, pass)
		r := &nethttp.Request{Header: nethttp.Header{}}
		r.SetBasicAuth(a.BasicUsername, pass)
		rt = &authTransport{base: tr, header: r.Header.Get("Authorization")}
	case a.OAuth2.TokenURL != "":
		secret, err := readSecret(a.OAuth2.ClientSecretEnv, a.OAuth2.ClientSecretFile)
		if err != nil {
			return fmt.Errorf("sink/http: sink %s: auth.oauth2.client_secret: %w", s.name, err)
		}
		s.secrets = append(s.secrets, secret)
		cc := &clientcredentials.Config{ClientID: a.OAuth2.ClientID, ClientSecret: secret, TokenURL: a.OAuth2.TokenURL, Scopes: a.OAuth2.Scopes}
		// The token source keeps this context for its fetches: one of its
		// own, carrying the sink's transport (its TLS settings), never a
		// caller's.
		tctx := context.WithValue(context.Background(), oauth2.HTTPClient, &nethttp.Client{Transport: tr, Timeout: s.cfg.Timeout})
		ts := cc.TokenSource(tctx)
		if _, err := ts.Token(); err != nil {
			return fmt.Errorf("sink/http: sink %s: auth.oauth2: fetching a token from %s: %s", s.name, redactURL(a.OAuth2.TokenURL), s.redact(oauthErr(err)))
		}
		rt = &oauth2.Transport{Source: ts, Base: tr}
	}
	s.client = &nethttp.Client{Transport: rt, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error {
		// A redirect would resend the body elsewhere, credentials and all:
		// the answer is taken as it is (3xx fails the group).
		return nethttp.ErrUseLastResponse
	}}
	s.closeFn = tr.CloseIdleConnections
	return nil
}

// oauthErr says what a failed token fetch says, without the request.
func oauthErr(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("%d %s", re.Response.StatusCode, nethttp.StatusText(re.Response.StatusCode))
		if re.ErrorCode != "" {
			msg += ": " + re.ErrorCode
		}
		return msg
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// redact replaces every secret of the sink in msg.
func (s *Sink) redact(msg string) string {
	for _, sec := range s.secrets {
		if sec != "" {
			msg = strings.ReplaceAll(msg, sec, "[redacted]")
		}
	}
	return msg
}

// The backoff between attempts to reach the receiver at start.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// waitForReceiver waits until the receiver's host accepts a TCP connection,
// for up to connect_timeout, with a WARN per failed attempt naming the host
// and the error. A URL whose host is a template is not checked.
func (s *Sink) waitForReceiver(ctx context.Context) error {
	u, err := url.Parse(s.url.render(func(int) string { return "weirfield" }))
	if err != nil || strings.Contains(u.Host, "weirfield") {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	if proxy, _ := nethttp.ProxyFromEnvironment(&nethttp.Request{URL: u}); proxy != nil {
		return nil // the proxy is what the sink connects to
	}
	start := time.Now()
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		d := net.Dialer{Timeout: min(10*time.Second, max(time.Second, s.cfg.ConnectTimeout))}
		conn, err := d.DialContext(ctx, "tcp", host)
		if err == nil {
			conn.Close()
			if attempt > 1 {
				s.log.Info("sink/http: the receiver answers; starting", "host", host, "waited", time.Since(start).Round(time.Millisecond), "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("sink/http: sink %s: reaching %s: %w", s.name, host, ctx.Err())
		}
		left := s.cfg.ConnectTimeout - time.Since(start)
		if left <= 0 {
			return fmt.Errorf("sink/http: sink %s: the receiver %s accepted no connection within connect_timeout (%v), %d attempts; the last error: %v; check that it is up and reachable from here, or raise connect_timeout",
				s.name, host, s.cfg.ConnectTimeout, attempt, err)
		}
		pause := min(backoff, left)
		s.log.Warn("sink/http: the receiver accepts no connection; retrying", "host", host, "err", err.Error(), "attempt", attempt,
			"waited", time.Since(start).Round(time.Millisecond), "retry_in", pause.Round(time.Millisecond), "connect_timeout", s.cfg.ConnectTimeout)
		if err := sleep(ctx, pause); err != nil {
			return fmt.Errorf("sink/http: sink %s: reaching %s: %w", s.name, host, err)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result is the outcome of sending one request.
type result struct {
	err     error
	refused bool // the status says the records are at fault (or 413)
	status  int
	excerpt string
}

// excerptBytes is how much of an answer an error or a dead letter quotes.
const excerptBytes = 512

// send sends rq until it is answered with a status that ends it: 2xx, a
// refusal, or a failure that retrying within the sink does not fix; 429,
// 408, 425, 5xx and cut connections are sent again after a backoff, or the
// Retry-After the receiver asked for, up to request_retry.max_attempts.
func (s *Sink) send(ctx context.Context, rq *request) result {
	body := rq.body
	if s.cfg.Compression == "gzip" {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	key := ""
	if s.cfg.IdempotencyHeader != "" {
		key = s.idempotencyKey(rq)
	}
	where := s.cfg.Method + " " + redactURL(rq.url)
	backoff := s.cfg.Retry.InitialBackoff
	var last result
	for attempt := 1; ; attempt++ {
		if err := s.pace(ctx); err != nil {
			return result{err: fmt.Errorf("sink/http: sink %s: %s: %w (the last answer: %v)", s.name, where, err, last.err)}
		}
		res, retry := s.attempt(ctx, rq, body, key, where)
		if !retry {
			if attempt > 1 {
				s.retrying.Add(-1)
			}
			return res
		}
		last = res
		if attempt == 1 {
			if n := s.retrying.Add(1); n&(n-1) == 0 {
				s.log.Warn("sink/http: the receiver did not take a request; sending it again", "request", where, "err", res.err.Error(), "retrying", n)
			}
		}
		if attempt >= s.cfg.Retry.MaxAttempts || ctx.Err() != nil {
			s.retrying.Add(-1)
			return result{err: fmt.Errorf("%w (after %d attempts)", res.err, attempt)}
		}
		wait := jitter(backoff)
		if nb := time.Until(time.Unix(0, s.notBefore.Load())); nb > wait {
			wait = nb
		}
		if err := sleep(ctx, wait); err != nil {
			s.retrying.Add(-1)
			return result{err: fmt.Errorf("%w (then: %v)", res.err, err)}
		}
		backoff = min(2*backoff, s.cfg.Retry.MaxBackoff)
	}
}

// pace waits for the receiver's Retry-After and the rate limit.
func (s *Sink) pace(ctx context.Context) error {
	if err := sleep(ctx, time.Until(time.Unix(0, s.notBefore.Load()))); err != nil {
		return err
	}
	if s.limiter != nil {
		return s.limiter.Wait(ctx)
	}
	return nil
}

// attempt sends rq once and classifies the answer; retry says whether it is
// worth sending again.
func (s *Sink) attempt(ctx context.Context, rq *request, body []byte, key, where string) (result, bool) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := nethttp.NewRequestWithContext(rctx, s.cfg.Method, rq.url, bytes.NewReader(body))
	if err != nil {
		return result{err: fmt.Errorf("sink/http: sink %s: %s: %v", s.name, where, err)}, false
	}
	req.Header.Set("Content-Type", s.contentType)
	req.Header.Set("User-Agent", "weir")
	if s.cfg.Compression == "gzip" {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if key != "" {
		req.Header.Set(s.cfg.IdempotencyHeader, key)
	}
	for i, name := range s.hdrNames {
		req.Header.Set(name, rq.hdr[i])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text holds the URL, query and all
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer within timeout (%v)", s.cfg.Timeout)
		}
		return result{err: fmt.Errorf("sink/http: sink %s: %s: %s", s.name, where, s.redact(err.Error()))}, ctx.Err() == nil
	}
	excerpt := make([]byte, excerptBytes)
	n, _ := io.ReadFull(resp.Body, excerpt)
	// Read a little more so that the connection can be used again.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ex := s.redact(strings.TrimSpace(strings.ToValidUTF8(string(excerpt[:n]), "?")))
	st := resp.StatusCode
	res := result{status: st, excerpt: ex}
	switch {
	case st >= 200 && st < 300:
		return res, false
	case st == nethttp.StatusRequestEntityTooLarge || s.rejects[st]:
		res.refused = true
		res.err = fmt.Errorf("sink/http: sink %s: %s: %d %s: %s", s.name, where, st, nethttp.StatusText(st), ex)
		return res, false
	}
	res.err = fmt.Errorf("sink/http: sink %s: %s: %d %s: %s", s.name, where, st, nethttp.StatusText(st), ex)
	switch {
	case st == nethttp.StatusTooManyRequests || st == nethttp.StatusRequestTimeout || st == nethttp.StatusTooEarly || st >= 500:
		if ra, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			ra = min(ra, s.cfg.Retry.MaxRetryAfter)
			until := time.Now().Add(ra).UnixNano()
			for {
				cur := s.notBefore.Load()
				if cur >= until || s.notBefore.CompareAndSwap(cur, until) {
					break
				}
			}
		}
		return res, true
	}
	// 3xx, 401, 403, 404 and the like: the sink's configuration, not the
	// records; the group fails and the pipeline retries it.
	return res, false
}

// retryAfter parses a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 1<<31)) * time.Second, true
	}
	if t, err := nethttp.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
