package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Conn is how a Kafka connector reaches its cluster. The Kafka sink embeds it
// too, so both are configured alike.
type Conn struct {
	// Brokers are the seed brokers, "host:port".
	Brokers []string `yaml:"brokers"`
	// ClientID names the client in the brokers' logs and quotas.
	ClientID string `yaml:"client_id"`
	TLS      TLS    `yaml:"tls"`
	SASL     SASL   `yaml:"sasl"`
}

// TLS configures encryption to the brokers. It is on when Enabled is true or
// any file is given.
type TLS struct {
	Enabled bool `yaml:"enabled"`
	// CAFile verifies the brokers' certificates; empty means the system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client certificate, for mutual TLS.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked in the brokers' certificates.
	ServerName string `yaml:"server_name"`
}

// SASL configures authentication. Mechanism is "plain", "scram-sha-256" or
// "scram-sha-512"; empty disables SASL.
type SASL struct {
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// Password is best given as ${ENV} in the configuration. It is never logged.
	Password Secret `yaml:"password"`
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

// Validate reports the first problem with c, naming the option to fix.
func (c *Conn) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New(`kafka: brokers is empty: list at least one seed broker, e.g. brokers: ["127.0.0.1:9092"]`)
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || !strings.Contains(b, ":") {
			return fmt.Errorf("kafka: brokers[%d] %q is not host:port", i, b)
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return errors.New("kafka: tls.cert_file and tls.key_file go together: give both for a client certificate, or neither")
	}
	switch strings.ToLower(c.SASL.Mechanism) {
	case "":
		if c.SASL.Username != "" || c.SASL.Password != "" {
			return errors.New(`kafka: sasl.username or sasl.password is set without sasl.mechanism: set mechanism to "plain", "scram-sha-256" or "scram-sha-512"`)
		}
	case "plain", "scram-sha-256", "scram-sha-512":
		if c.SASL.Username == "" {
			return errors.New("kafka: sasl.username is empty: SASL needs a user name")
		}
	default:
		return fmt.Errorf(`kafka: sasl.mechanism %q is not supported: use "plain", "scram-sha-256" or "scram-sha-512"`, c.SASL.Mechanism)
	}
	return nil
}

// Opts returns the client options for c. Certificate files are read here, so
// a missing file is reported when the connector is built.
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

// LogAdapter routes the client's own log lines into a connector's logger at
// warnings and above; below that the client is too chatty for a pipeline log.
func LogAdapter(l *slog.Logger) kgo.Opt {
	return kgo.WithLogger(kgo.BasicLogger(slogWriter{l}, kgo.LogLevelWarn, nil))
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(strings.TrimSpace(string(p)), "component", "kafka-client")
	return len(p), nil
}
