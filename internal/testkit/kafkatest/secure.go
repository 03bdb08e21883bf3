package kafkatest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Secured holds the broker's TLS and SASL listeners, as `.ci/kafka.sh start`
// makes them: each field comes from the environment variable named in its
// comment, or else from the script's client.env in its state directory
// ($WEIR_KAFKA_DIR, by default $TMPDIR/weir-kafka).
type Secured struct {
	SASLBrokers    []string // WEIR_KAFKA_SASL_BROKERS: SASL_PLAINTEXT
	SASLTLSBrokers []string // WEIR_KAFKA_SASL_TLS_BROKERS: SASL_SSL
	SASLUser       string   // WEIR_KAFKA_SASL_USER
	// SASLPassword is read from the file WEIR_KAFKA_SASL_PASSWORD_FILE names.
	// Tests hand it to connectors through an environment variable, as a
	// pipeline file would, and never print it.
	SASLPassword string
	TLSBrokers   []string // WEIR_KAFKA_TLS_BROKERS: SSL, no client certificate
	MTLSBrokers  []string // WEIR_KAFKA_MTLS_BROKERS: SSL, client certificate required
	CAFile       string   // WEIR_KAFKA_TLS_CA: the test CA (PEM)
	CertFile     string   // WEIR_KAFKA_TLS_CERT: the client certificate (PEM)
	KeyFile      string   // WEIR_KAFKA_TLS_KEY: the client key (PEM)
}

// SecuredBrokers returns the secured listeners of the real broker. Like
// Brokers, it skips the test when WEIR_KAFKA_BROKERS is unset; it fails it
// when that broker's secured listeners cannot be found, so that a run against
// a real broker does not skip these tests silently.
func SecuredBrokers(t testing.TB) Secured {
	t.Helper()
	Brokers(t)
	file := readEnvFile(t)
	get := func(name string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return file[name]
	}
	list := func(name string) []string {
		v := get(name)
		if v == "" {
			t.Fatalf("%s is not set and not in the broker's client.env: start the broker with `bash .ci/kafka.sh start`, or export the variables `bash .ci/kafka.sh env` prints", name)
		}
		return strings.Split(v, ",")
	}
	s := Secured{
		SASLBrokers:    list("WEIR_KAFKA_SASL_BROKERS"),
		SASLTLSBrokers: list("WEIR_KAFKA_SASL_TLS_BROKERS"),
		SASLUser:       get("WEIR_KAFKA_SASL_USER"),
		TLSBrokers:     list("WEIR_KAFKA_TLS_BROKERS"),
		MTLSBrokers:    list("WEIR_KAFKA_MTLS_BROKERS"),
		CAFile:         get("WEIR_KAFKA_TLS_CA"),
		CertFile:       get("WEIR_KAFKA_TLS_CERT"),
		KeyFile:        get("WEIR_KAFKA_TLS_KEY"),
	}
	pwFile := get("WEIR_KAFKA_SASL_PASSWORD_FILE")
	if s.SASLUser == "" || pwFile == "" || s.CAFile == "" || s.CertFile == "" || s.KeyFile == "" {
		t.Fatal("the broker's SASL user, password file or TLS files are not named: see `bash .ci/kafka.sh env`")
	}
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatalf("reading the SASL password file: %v", err)
	}
	s.SASLPassword = strings.TrimSpace(string(pw))
	if s.SASLPassword == "" {
		t.Fatalf("the SASL password file %s is empty", pwFile)
	}
	return s
}

// readEnvFile reads NAME=value lines from the broker's client.env, or
// returns nothing when there is none.
func readEnvFile(t testing.TB) map[string]string {
	t.Helper()
	dir := os.Getenv("WEIR_KAFKA_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "weir-kafka")
	}
	out := map[string]string{}
	f, err := os.Open(filepath.Join(dir, "client.env"))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the broker's client.env: %v", err)
	}
	return out
}
