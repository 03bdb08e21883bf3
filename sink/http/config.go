package http

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
)

// Config is the sink's configuration, the options under a sink of
// `type: http`. NewConfig fills in the defaults.
type Config struct {
	URL         string            `yaml:"url" doc:"Where records are sent: http:// or https://, a fixed URL or a template whose {{field}} parts are replaced by the record's fields (escaped for their place; dotted paths reach nested fields). Records with different URLs go in different requests. Must hold no password: use auth."`
	Method      string            `yaml:"method" doc:"POST or PUT."`
	Format      string            `yaml:"format" doc:"ndjson (records one a line), json_array (a JSON array of the records) or single (one request per record, its bytes as they are)."`
	ContentType string            `yaml:"content_type" doc:"The requests' Content-Type; empty is application/x-ndjson for ndjson and application/json otherwise."`
	Headers     map[string]string `yaml:"headers" doc:"Headers sent with every request; a value may be a {{field}} template like url (records with different values go in different requests)."`
	// MaxRequestRecords and MaxRequestBytes cut a group into requests.
	MaxRequestRecords int `yaml:"max_request_records" doc:"Most records in one request (ndjson and json_array); a group is sent as several requests when larger."`
	MaxRequestBytes   int `yaml:"max_request_bytes" doc:"Most body bytes in one request before compression (a single record larger than that is sent alone)."`
	Concurrency       int `yaml:"concurrency" doc:"Most requests in flight at once; 1 keeps the receiver's order of arrival the records' order."`
	// RateLimit bounds requests per second; 0 is no limit.
	RateLimit         float64       `yaml:"rate_limit" doc:"Most requests per second, retries included; 0 sets no limit."`
	Timeout           time.Duration `yaml:"timeout" doc:"How long one request may take, answer included; a receiver that hangs past it counts as a failure that is retried."`
	Retry             Retry         `yaml:"request_retry" doc:"How a request answered 429, 408, 425 or 5xx, or cut off, is sent again before the group fails (and the pipeline's own retry and failure policy take over)."`
	RejectStatuses    []int         `yaml:"reject_statuses" doc:"Statuses that mean the records are at fault: such a request is split to find the records the receiver refuses, and those go to the sink's failure policy (a dead letter with the status and the start of the answer). Other 4xx (401, 403, 404: credentials or the URL) fail the group, which is retried and never dropped."`
	IdempotencyHeader string        `yaml:"idempotency_header" doc:"The header carrying each request's idempotency key, a digest of the sink, URL and the records' origins and bytes: the same records sent again carry the same key. Empty sends none."`
	Compression       string        `yaml:"compression" doc:"none or gzip (Content-Encoding: gzip)."`
	Auth              Auth          `yaml:"auth" doc:"Credentials sent with every request."`
	TLS               TLS           `yaml:"tls" doc:"TLS to an https:// receiver."`
	ConnectTimeout    time.Duration `yaml:"connect_timeout" doc:"How long the sink waits at start for the receiver's host to accept a connection (a URL whose host is a template is not checked), retrying with backoff and a warning each time, before it fails."`
}

// Retry says how one request is sent again within the sink.
type Retry struct {
	MaxAttempts    int           `yaml:"max_attempts" doc:"Most times a request is sent (the first included) before the group fails."`
	InitialBackoff time.Duration `yaml:"initial_backoff" doc:"The first wait before sending again; it doubles each time, with jitter. A Retry-After the receiver sent is waited for instead when longer."`
	MaxBackoff     time.Duration `yaml:"max_backoff" doc:"The longest wait between two attempts of our own choosing."`
	MaxRetryAfter  time.Duration `yaml:"max_retry_after" doc:"The longest Retry-After honoured; a longer one is cut to it."`
}

// Auth is the credentials of the requests. Bearer, basic and oauth2 are
// exclusive.
type Auth struct {
	BearerTokenEnv    string `yaml:"bearer_token_env" doc:"The environment variable holding a token sent as Authorization: Bearer."`
	BearerTokenFile   string `yaml:"bearer_token_file" doc:"A file holding the bearer token (its first line); read again at every start."`
	BasicUsername     string `yaml:"basic_username" doc:"The user of HTTP basic authentication."`
	BasicPasswordEnv  string `yaml:"basic_password_env" doc:"The environment variable holding the basic password."`
	BasicPasswordFile string `yaml:"basic_password_file" doc:"A file holding the basic password (its first line)."`
	OAuth2            OAuth2 `yaml:"oauth2" doc:"OAuth2 client credentials: a token is fetched from token_url at start and again before it expires."`
}

// OAuth2 is the client credentials grant.
type OAuth2 struct {
	TokenURL         string   `yaml:"token_url" doc:"The token endpoint; setting it turns OAuth2 on."`
	ClientID         string   `yaml:"client_id" doc:"The client id."`
	ClientSecretEnv  string   `yaml:"client_secret_env" doc:"The environment variable holding the client secret."`
	ClientSecretFile string   `yaml:"client_secret_file" doc:"A file holding the client secret (its first line)."`
	Scopes           []string `yaml:"scopes" doc:"The scopes asked for."`
}

// TLS is how the sink checks an https:// receiver and proves itself to it.
type TLS struct {
	CAFile             string `yaml:"ca_file" doc:"PEM file of the CAs that signed the receiver's certificate; empty trusts the system's."`
	CertFile           string `yaml:"cert_file" doc:"PEM file of a client certificate (mutual TLS); needs key_file."`
	KeyFile            string `yaml:"key_file" doc:"PEM file of the client certificate's key."`
	ServerName         string `yaml:"server_name" doc:"The name checked in the receiver's certificate, when not the URL's host."`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify" doc:"Accept any certificate: for tests only, anyone between weir and the receiver can read and change the records."`
}

// Defaults.
const (
	DefaultMaxRequestRecords = 500
	DefaultMaxRequestBytes   = 1 << 20
	DefaultConcurrency       = 4
	DefaultTimeout           = 30 * time.Second
	DefaultConnectTimeout    = 5 * time.Minute
)

// DefaultRejectStatuses are the statuses that say the records are at
// fault. 401, 403, 404 and 405 are not among them: they say the sink's
// credentials or URL are wrong, and dropping every record into a dead letter
// for that would lose data to a configuration error.
var DefaultRejectStatuses = []int{400, 409, 410, 412, 414, 415, 422}

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Method:            "POST",
		Format:            "ndjson",
		MaxRequestRecords: DefaultMaxRequestRecords,
		MaxRequestBytes:   DefaultMaxRequestBytes,
		Concurrency:       DefaultConcurrency,
		Timeout:           DefaultTimeout,
		Retry: Retry{MaxAttempts: 5, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 30 * time.Second,
			MaxRetryAfter: 5 * time.Minute},
		RejectStatuses:    slices.Clone(DefaultRejectStatuses),
		IdempotencyHeader: "Idempotency-Key",
		Compression:       "none",
		ConnectTimeout:    DefaultConnectTimeout,
	}
}

var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Validate reports every invalid option at once, each a
// *connector.FieldError naming the option and the fix. It reads no file nor
// environment variable.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	if c.URL == "" {
		bad("url", "is empty: give the receiver's URL, e.g. url: https://collector.example/ingest")
	} else if t, err := parseTemplate(c.URL); err != nil {
		bad("url", "%v", err)
	} else {
		// The fixed parts, with each field replaced by a placeholder, must
		// make a URL.
		u, err := url.Parse(t.render(func(int) string { return "x" }))
		switch {
		case err != nil:
			bad("url", "%s is not a URL: %v", redactURL(c.URL), err)
		case u.Scheme != "http" && u.Scheme != "https":
			bad("url", "%s must start with http:// or https://", redactURL(c.URL))
		case u.Host == "":
			bad("url", "%s names no host", redactURL(c.URL))
		case u.User != nil:
			bad("url", "holds credentials: remove them from the URL and use auth.basic_username with basic_password_env")
		}
	}
	switch c.Method {
	case "POST", "PUT":
	default:
		bad("method", "%q is not taken: use POST or PUT", c.Method)
	}
	switch c.Format {
	case "ndjson", "json_array", "single":
	default:
		bad("format", "%q is unknown: use ndjson, json_array or single", c.Format)
	}
	for k, v := range c.Headers {
		if !headerName.MatchString(k) {
			bad("headers."+k, "is not a header name")
		}
		if _, err := parseTemplate(v); err != nil {
			bad("headers."+k, "%v", err)
		}
		switch strings.ToLower(k) {
		case "authorization", "content-length", "content-encoding", "host":
			bad("headers."+k, "is set by the sink: use auth for credentials, compression for the encoding")
		}
	}
	for _, o := range []struct {
		name string
		val  int
	}{
		{"max_request_records", c.MaxRequestRecords},
		{"max_request_bytes", c.MaxRequestBytes},
		{"concurrency", c.Concurrency},
		{"request_retry.max_attempts", c.Retry.MaxAttempts},
	} {
		if o.val < 1 {
			bad(o.name, "%d must be at least 1", o.val)
		}
	}
	if c.RateLimit < 0 {
		bad("rate_limit", "%v must not be negative (0 sets no limit)", c.RateLimit)
	}
	for _, o := range []struct {
		name string
		val  time.Duration
		zero bool
	}{
		{"timeout", c.Timeout, false},
		{"request_retry.initial_backoff", c.Retry.InitialBackoff, false},
		{"request_retry.max_backoff", c.Retry.MaxBackoff, false},
		{"request_retry.max_retry_after", c.Retry.MaxRetryAfter, true},
		{"connect_timeout", c.ConnectTimeout, true},
	} {
		if o.val < 0 || (o.val == 0 && !o.zero) {
			bad(o.name, "%v must be positive, e.g. 10s", o.val)
		}
	}
	for i, st := range c.RejectStatuses {
		if st < 400 || st > 499 || st == 408 || st == 425 || st == 429 || st == 413 {
			bad(fmt.Sprintf("reject_statuses[%d]", i), "%d cannot mean the records are at fault: list 4xx statuses other than 408, 413, 425 and 429 (retried, or split)", st)
		}
	}
	if c.IdempotencyHeader != "" && !headerName.MatchString(c.IdempotencyHeader) {
		bad("idempotency_header", "%q is not a header name", c.IdempotencyHeader)
	}
	switch c.Compression {
	case "none", "gzip":
	default:
		bad("compression", "%q is unknown: use none or gzip", c.Compression)
	}
	a := &c.Auth
	ways := 0
	if a.BearerTokenEnv != "" || a.BearerTokenFile != "" {
		ways++
	}
	if a.BasicUsername != "" {
		ways++
	}
	if a.OAuth2.TokenURL != "" {
		ways++
	}
	if ways > 1 {
		bad("auth", "sets more than one of bearer, basic and oauth2: keep one")
	}
	for _, o := range []struct{ name, env, file string }{
		{"auth.bearer_token", a.BearerTokenEnv, a.BearerTokenFile},
		{"auth.basic_password", a.BasicPasswordEnv, a.BasicPasswordFile},
		{"auth.oauth2.client_secret", a.OAuth2.ClientSecretEnv, a.OAuth2.ClientSecretFile},
	} {
		if o.env != "" && !envName.MatchString(o.env) {
			bad(o.name+"_env", "is not an environment variable name: give the variable's name, not the secret")
		}
		if o.env != "" && o.file != "" {
			bad(o.name+"_file", "and %s_env are both set: keep one", o.name)
		}
	}
	if a.BasicUsername != "" && a.BasicPasswordEnv == "" && a.BasicPasswordFile == "" {
		bad("auth.basic_username", "is set without a password: set auth.basic_password_env or auth.basic_password_file")
	}
	if o := a.OAuth2; o.TokenURL != "" {
		if u, err := url.Parse(o.TokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			bad("auth.oauth2.token_url", "must be an http:// or https:// URL without credentials")
		}
		if o.ClientID == "" {
			bad("auth.oauth2.client_id", "is empty: the token endpoint needs the client's id")
		}
		if o.ClientSecretEnv == "" && o.ClientSecretFile == "" {
			bad("auth.oauth2.client_secret_env", "is empty: set it or client_secret_file")
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file", "and tls.key_file go together: give both for a client certificate, or neither")
	}
	return errors.Join(errs...)
}

// redactURL is u without its query, which may hold a key, for messages.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}
