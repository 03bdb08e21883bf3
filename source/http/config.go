package http

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
)

// Config is the source's configuration, the options under a source of
// `type: http_server`. NewConfig fills in the defaults.
type Config struct {
	Address string   `yaml:"address" doc:"host:port to listen on. A non-loopback address needs auth (a token, basic auth or an HMAC secret), or auth.none: true to accept anyone."`
	Paths   []string `yaml:"paths" doc:"The URL paths that take records, each starting with /; a request to another path gets 404."`
	// PartitionBy is "path" or "shared".
	PartitionBy string `yaml:"partition_by" doc:"path gives each path its own partition (a failing request of one path does not hold back the answers of another); shared puts every path in one."`
	Format      string `yaml:"format" doc:"auto decides by Content-Type (application/x-ndjson or application/jsonl: NDJSON; application/json: a JSON array is its elements, any other value one record; text/plain: lines); ndjson, json or lines take every body so, whatever its Content-Type."`
	// MaxBodyBytes bounds a request's body, after decompression.
	MaxBodyBytes int `yaml:"max_body_bytes" doc:"The largest body a request may have, as sent and after decompression; a larger one is answered 413 and nothing of it is taken."`
	// MaxInFlightRequests bounds the requests being read or waiting for their records to become durable.
	MaxInFlightRequests int           `yaml:"max_in_flight_requests" doc:"Most requests taken and not yet answered (being read, or waiting for their records to be durable); past it a request is answered 429 with Retry-After. With the source's max_in_flight_bytes (the records held for unanswered requests) it bounds the memory the source uses."`
	RetryAfter          time.Duration `yaml:"retry_after" doc:"The Retry-After a 429 or 503 answer carries (rounded up to whole seconds)."`
	BatchSize           int           `yaml:"batch_size" doc:"Most records in one poll batch; a request larger than that is several batches, and one batch may hold several small requests."`
	ReadHeaderTimeout   time.Duration `yaml:"read_header_timeout" doc:"How long a client may take to send a request's headers."`
	ReadTimeout         time.Duration `yaml:"read_timeout" doc:"How long a client may take to send a whole request, headers and body; a slower one is cut off and nothing of its request is taken."`
	IdleTimeout         time.Duration `yaml:"idle_timeout" doc:"How long a kept-alive connection may wait for its next request."`
	AckTimeout          time.Duration `yaml:"ack_timeout" doc:"How long a request waits for its records to become durable before it is answered 503 (its records may still be written: a client that sends it again may cause duplicates); 0 waits as long as the run goes on."`
	ConnectTimeout      time.Duration `yaml:"connect_timeout" doc:"How long the source waits at start for its address to become free (another process still holding it), retrying with backoff and a warning each time, before it fails. Other errors (a bad address, no permission) fail at once."`
	KeepHeaders         []string      `yaml:"keep_headers" doc:"Request headers copied to every record of the request as its headers (@headers[\"X-Request-Id\"] in expressions), matched without regard to case; \"*\" keeps all. Authorization, Cookie, Proxy-Authorization and the HMAC header are never kept."`
	Auth                Auth          `yaml:"auth" doc:"Who may send records. Checked before the body is read (the HMAC signature, which covers the body, right after)."`
	TLS                 TLS           `yaml:"tls" doc:"Serve HTTPS: the certificate and key files are read again when they change (a renewal needs no restart)."`
}

// Auth says who may send records. With several of bearer, basic and none
// set, any one of bearer and basic suffices; hmac is required in addition.
type Auth struct {
	BearerTokensEnv   string `yaml:"bearer_tokens_env" doc:"The environment variable that holds the accepted bearer tokens, separated by commas or whitespace (several let a token be rotated without a gap)."`
	BearerTokensFile  string `yaml:"bearer_tokens_file" doc:"A file of accepted bearer tokens, one a line (blank lines and lines starting with # are ignored)."`
	BasicUsername     string `yaml:"basic_username" doc:"The user name of HTTP basic authentication; its password comes from basic_password_env or basic_password_file."`
	BasicPasswordEnv  string `yaml:"basic_password_env" doc:"The environment variable that holds the basic authentication password."`
	BasicPasswordFile string `yaml:"basic_password_file" doc:"A file holding the basic authentication password (its first line)."`
	HMACHeader        string `yaml:"hmac_header" doc:"A header carrying an HMAC of the body (the webhook pattern: X-Hub-Signature-256, say); when set, a request whose signature does not match is answered 401."`
	HMACSecretEnv     string `yaml:"hmac_secret_env" doc:"The environment variable that holds the HMAC secret."`
	HMACSecretFile    string `yaml:"hmac_secret_file" doc:"A file holding the HMAC secret (its first line)."`
	HMACAlgorithm     string `yaml:"hmac_algorithm" doc:"sha256, sha1 or sha512."`
	HMACPrefix        string `yaml:"hmac_prefix" doc:"Text before the signature in the header, such as \"sha256=\" (GitHub's)."`
	HMACEncoding      string `yaml:"hmac_encoding" doc:"How the signature is written: hex or base64."`
	None              bool   `yaml:"none" doc:"Accept requests from anyone on a non-loopback address. Without it, such an address needs one of the other options."`
}

// TLS serves HTTPS.
type TLS struct {
	CertFile     string `yaml:"cert_file" doc:"PEM file of the server certificate (with its chain); needs key_file."`
	KeyFile      string `yaml:"key_file" doc:"PEM file of the certificate's private key."`
	ClientCAFile string `yaml:"client_ca_file" doc:"PEM file of the CAs whose client certificates are required (mutual TLS); empty asks for none."`
}

// Defaults.
const (
	DefaultAddress             = "127.0.0.1:8080"
	DefaultMaxBodyBytes        = 16 << 20
	DefaultMaxInFlightRequests = 1024
	DefaultRetryAfter          = time.Second
	DefaultBatchSize           = 1000
	DefaultReadHeaderTimeout   = 10 * time.Second
	DefaultReadTimeout         = time.Minute
	DefaultIdleTimeout         = 2 * time.Minute
	DefaultConnectTimeout      = 5 * time.Minute
)

// NewConfig returns a Config with the defaults filled in.
func NewConfig() *Config {
	return &Config{
		Address:             DefaultAddress,
		Paths:               []string{"/"},
		PartitionBy:         "path",
		Format:              "auto",
		MaxBodyBytes:        DefaultMaxBodyBytes,
		MaxInFlightRequests: DefaultMaxInFlightRequests,
		RetryAfter:          DefaultRetryAfter,
		BatchSize:           DefaultBatchSize,
		ReadHeaderTimeout:   DefaultReadHeaderTimeout,
		ReadTimeout:         DefaultReadTimeout,
		IdleTimeout:         DefaultIdleTimeout,
		ConnectTimeout:      DefaultConnectTimeout,
		Auth:                Auth{HMACAlgorithm: "sha256", HMACEncoding: "hex"},
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every invalid option at once, each as a
// *connector.FieldError naming the option and the fix. It reads no file
// and no environment variable: weir validate may run elsewhere.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, connector.Fieldf(field, format, args...))
	}
	host, _, err := net.SplitHostPort(c.Address)
	if err != nil {
		bad("address", "%q is not host:port (%v): e.g. address: 127.0.0.1:8080, or :8080 for every interface", c.Address, err)
	}
	if len(c.Paths) == 0 {
		bad("paths", "is empty: list the paths that take records, e.g. paths: [/ingest]")
	}
	seen := map[string]bool{}
	for i, p := range c.Paths {
		f := fmt.Sprintf("paths[%d]", i)
		switch {
		case !strings.HasPrefix(p, "/"):
			bad(f, "%q must start with /, e.g. /ingest", p)
		case strings.ContainsAny(p, "?# \t"):
			bad(f, "%q holds a query, a fragment or a space: give the path only", p)
		case seen[p]:
			bad(f, "%q is listed twice: remove one", p)
		}
		seen[p] = true
	}
	switch c.PartitionBy {
	case "path", "shared":
	default:
		bad("partition_by", "%q is unknown: use path (a partition per path) or shared (one for all)", c.PartitionBy)
	}
	switch c.Format {
	case "auto", "ndjson", "json", "lines":
	default:
		bad("format", "%q is unknown: use auto (by Content-Type), ndjson, json or lines", c.Format)
	}
	for _, o := range []struct {
		name     string
		val, min int
	}{
		{"max_body_bytes", c.MaxBodyBytes, 1},
		{"max_in_flight_requests", c.MaxInFlightRequests, 1},
		{"batch_size", c.BatchSize, 1},
	} {
		if o.val < o.min {
			bad(o.name, "%d must be at least %d", o.val, o.min)
		}
	}
	for _, o := range []struct {
		name string
		val  time.Duration
		zero bool // 0 is allowed
	}{
		{"retry_after", c.RetryAfter, false},
		{"read_header_timeout", c.ReadHeaderTimeout, false},
		{"read_timeout", c.ReadTimeout, false},
		{"idle_timeout", c.IdleTimeout, false},
		{"ack_timeout", c.AckTimeout, true},
		{"connect_timeout", c.ConnectTimeout, true},
	} {
		if o.val < 0 || (o.val == 0 && !o.zero) {
			bad(o.name, "%v must be positive, e.g. 10s", o.val)
		}
	}
	for i, h := range c.KeepHeaders {
		if h == "" {
			bad(fmt.Sprintf("keep_headers[%d]", i), "is empty: remove it")
		}
	}
	a := &c.Auth
	for _, o := range []struct{ name, val string }{
		{"auth.bearer_tokens_env", a.BearerTokensEnv},
		{"auth.basic_password_env", a.BasicPasswordEnv},
		{"auth.hmac_secret_env", a.HMACSecretEnv},
	} {
		if o.val != "" && !envName.MatchString(o.val) {
			bad(o.name, "is not an environment variable name: give the variable's name, such as WEIR_HTTP_TOKEN, not the secret")
		}
	}
	if a.BasicUsername != "" && a.BasicPasswordEnv == "" && a.BasicPasswordFile == "" {
		bad("auth.basic_username", "is set without a password: set auth.basic_password_env or auth.basic_password_file")
	}
	if a.BasicUsername == "" && (a.BasicPasswordEnv != "" || a.BasicPasswordFile != "") {
		bad("auth.basic_username", "is empty while a basic password is set: name the user, e.g. basic_username: hooks")
	}
	if a.BasicPasswordEnv != "" && a.BasicPasswordFile != "" {
		bad("auth.basic_password_file", "and basic_password_env are both set: keep one")
	}
	if a.HMACSecretEnv != "" && a.HMACSecretFile != "" {
		bad("auth.hmac_secret_file", "and hmac_secret_env are both set: keep one")
	}
	if a.HMACHeader != "" && a.HMACSecretEnv == "" && a.HMACSecretFile == "" {
		bad("auth.hmac_header", "is set without a secret: set auth.hmac_secret_env or auth.hmac_secret_file")
	}
	if a.HMACHeader == "" && (a.HMACSecretEnv != "" || a.HMACSecretFile != "") {
		bad("auth.hmac_header", "is empty while an HMAC secret is set: name the header that carries the signature, e.g. X-Hub-Signature-256")
	}
	if a.HMACHeader != "" {
		if _, ok := hmacHash(a.HMACAlgorithm); !ok {
			bad("auth.hmac_algorithm", "%q is unknown: use sha256, sha1 or sha512", a.HMACAlgorithm)
		}
		switch a.HMACEncoding {
		case "hex", "base64":
		default:
			bad("auth.hmac_encoding", "%q is unknown: use hex or base64", a.HMACEncoding)
		}
	}
	if err == nil && !a.None && !a.configured() && !loopback(host) {
		bad("address", "%s is not a loopback address and no auth is set: anyone who reaches it could send records. Set auth.bearer_tokens_env (or _file), auth.basic_username with a password, or auth.hmac_header with a secret; or auth.none: true to accept anyone", c.Address)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file", "and tls.key_file go together: give both to serve HTTPS, or neither")
	}
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		bad("tls.client_ca_file", "needs tls.cert_file and tls.key_file: client certificates are asked for over HTTPS only")
	}
	return errors.Join(errs...)
}

// configured reports whether any way of authenticating is set.
func (a *Auth) configured() bool {
	return a.BearerTokensEnv != "" || a.BearerTokensFile != "" || a.BasicUsername != "" || a.HMACHeader != ""
}

// loopback reports whether host names only this machine: a loopback
// address or localhost. An empty host (":8080") is every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// readSecret returns the secret held by the environment variable env or the
// file path (its first line, or every line for a list), and what it came
// from for errors that must not show the secret.
func readSecret(env, path string) (string, string, error) {
	switch {
	case env != "":
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return "", "", fmt.Errorf("the environment variable %s is not set or empty", env)
		}
		return v, "environment variable " + env, nil
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return "", "", fmt.Errorf("reading %s: %w", path, pathErr(err))
		}
		return string(b), "file " + path, nil
	}
	return "", "", nil
}

// pathErr keeps what an os error says about the file, not its content.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
