// Package kafkaclient is what weir's Kafka source and sink share: how they
// reach the cluster (the Conn options: brokers, TLS, SASL, the wait for a
// broker at start) and their validation, the franz-go client options made
// from them, the client's log lines, and Kafka error codes spelled out by
// name. Both connectors embed Conn, so they are configured alike, and
// neither imports the other.
//
// Its errors carry the prefix "kafka:", the users' name for both connectors.
package kafkaclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/weir-etl/weir/connector"
)

// DefaultConnectTimeout is how long a connector waits at start for a broker
// to answer, unless connect_timeout says otherwise: long enough to ride out a
// broker's restart or a rolling upgrade, short enough that a wrong address
// ends the run in minutes.
const DefaultConnectTimeout = 5 * time.Minute

// Conn is how a Kafka connector reaches its cluster. Both Kafka connectors
// embed it inline, so its options sit beside theirs in the configuration.
type Conn struct {
	// Brokers are the seed brokers, "host:port".
	Brokers []string `yaml:"brokers" doc:"Seed brokers, as host:port; the client finds the rest of the cluster from them."`
	// ClientID names the client in the brokers' logs and quotas.
	ClientID string `yaml:"client_id" doc:"Names the client in the brokers' logs and quotas."`
	// ConnectTimeout is how long Open waits for a broker to answer when the
	// connector starts, retrying with backoff and logging every failed
	// attempt, before it gives up with an error. Refusals no retry can fix
	// (bad credentials, an untrusted certificate) end the wait at once.
	ConnectTimeout time.Duration `yaml:"connect_timeout" doc:"How long the connector waits at start for a broker to answer, retrying with backoff and logging each failure, before it fails. Bad credentials or certificates fail at once."`
	// TLS configures encryption to the brokers.
	TLS TLS `yaml:"tls" doc:"Encryption to the brokers; on when enabled is true or any file is given."`
	// SASL configures authentication to the brokers.
	SASL SASL `yaml:"sasl" doc:"Authentication to the brokers; off unless mechanism is set."`
}

// DefaultConn returns the connection defaults both connectors start from.
func DefaultConn() Conn {
	return Conn{ClientID: "weir", ConnectTimeout: DefaultConnectTimeout}
}

// TLS configures encryption to the brokers. It is on when Enabled is true or
// any file is given.
type TLS struct {
	// Enabled turns TLS on with the system's roots when no file is given.
	Enabled bool `yaml:"enabled" doc:"Turns TLS on; implied by any of the file options or server_name."`
	// CAFile verifies the brokers' certificates; empty means the system roots.
	CAFile string `yaml:"ca_file" doc:"PEM file of the CA that signed the brokers' certificates; empty trusts the system roots."`
	// CertFile and KeyFile are the client certificate, for mutual TLS.
	CertFile string `yaml:"cert_file" doc:"PEM file of the client certificate, for brokers that require one (mutual TLS); needs key_file."`
	KeyFile  string `yaml:"key_file" doc:"PEM file of the client certificate's private key; needs cert_file."`
	// ServerName overrides the name checked in the brokers' certificates.
	ServerName string `yaml:"server_name" doc:"Overrides the name checked in the brokers' certificates."`
}

// SASL configures authentication. Mechanism is "plain", "scram-sha-256" or
// "scram-sha-512"; empty disables SASL.
type SASL struct {
	// Mechanism is "plain", "scram-sha-256" or "scram-sha-512"; empty is off.
	Mechanism string `yaml:"mechanism" doc:"\"plain\", \"scram-sha-256\" or \"scram-sha-512\"; empty turns SASL off."`
	// Username is the SASL user.
	Username string `yaml:"username" doc:"The SASL user name."`
	// Password is best given as ${ENV} in the configuration. It is never logged.
	Password Secret `yaml:"password" doc:"The SASL password; best given as ${ENV}. It is never printed or logged."`
}

// Secret is a string that is never printed: fmt and slog show it redacted.
type Secret string

// String returns a redacted form, so a Secret in a log line or an error shows
// nothing of its value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts %#v as well.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// LogValue redacts s in structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Validate reports every problem with c at once, as *connector.FieldError
// values joined with errors.Join, each naming its option and the fix.
func (c *Conn) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, connector.Fieldf("brokers", `is empty: list at least one seed broker, e.g. brokers: ["127.0.0.1:9092"]`))
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || !strings.Contains(b, ":") {
			errs = append(errs, connector.Fieldf(fmt.Sprintf("brokers[%d]", i), "%q is not host:port", b))
		}
	}
	if c.ConnectTimeout < time.Second {
		errs = append(errs, connector.Fieldf("connect_timeout", "%v is too short: use at least 1s (the default is %v)", c.ConnectTimeout, DefaultConnectTimeout))
	}
	switch {
	case c.TLS.CertFile != "" && c.TLS.KeyFile == "":
		errs = append(errs, connector.Fieldf("tls.key_file", "is empty while tls.cert_file is set: give both for a client certificate, or neither"))
	case c.TLS.CertFile == "" && c.TLS.KeyFile != "":
		errs = append(errs, connector.Fieldf("tls.cert_file", "is empty while tls.key_file is set: give both for a client certificate, or neither"))
	}
	switch strings.ToLower(c.SASL.Mechanism) {
	case "":
		if c.SASL.Username != "" || c.SASL.Password != "" {
			errs = append(errs, connector.Fieldf("sasl.mechanism", `is empty while sasl.username or sasl.password is set: set it to "plain", "scram-sha-256" or "scram-sha-512"`))
		}
	case "plain", "scram-sha-256", "scram-sha-512":
		if c.SASL.Username == "" {
			errs = append(errs, connector.Fieldf("sasl.username", "is empty: SASL needs a user name"))
		}
	default:
		errs = append(errs, connector.Fieldf("sasl.mechanism", `%q is not supported: use "plain", "scram-sha-256" or "scram-sha-512"`, c.SASL.Mechanism))
	}
	return errors.Join(errs...)
}

// Opts returns the client options for c. Certificate files are read here, so
// a missing file is reported when the connector opens.
func (c *Conn) Opts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	t := c.TLS
	if t.Enabled || t.CAFile != "" || t.CertFile != "" || t.ServerName != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return nil, fmt.Errorf("kafka: tls.ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kafka: tls.ca_file %s holds no PEM certificate", t.CAFile)
			}
			cfg.RootCAs = pool
		}
		if t.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("kafka: tls.cert_file/key_file: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	user, pass := c.SASL.Username, string(c.SASL.Password)
	switch strings.ToLower(c.SASL.Mechanism) {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	}
	return opts, nil
}
