//go:build integration

package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/record"

	// The pipeline files here have a Kafka source too; the sink does not
	// import the source, so register it.
	_ "github.com/weir-etl/weir/source/kafka"
)

// passwordEnv carries the SASL password into the pipeline file as
// ${WEIR_TEST_KAFKA_PASSWORD}, the way a deployment gives it.
const passwordEnv = "WEIR_TEST_KAFKA_PASSWORD"

// saslYAML is the sasl block of a connector, its password from passwordEnv.
func saslYAML(mechanism, user string) string {
	return fmt.Sprintf("    sasl:\n      mechanism: %s\n      username: %s\n      password: ${%s}\n", mechanism, user, passwordEnv)
}

// tlsYAML is the tls block of a connector: the CA, and a client certificate
// when cert is set.
func tlsYAML(sec kafkatest.Secured, cert bool) string {
	s := fmt.Sprintf("    tls:\n      ca_file: %q\n", sec.CAFile)
	if cert {
		s += fmt.Sprintf("      cert_file: %q\n      key_file: %q\n", sec.CertFile, sec.KeyFile)
	}
	return s
}

// securedPipeline loads a pipeline file with a Kafka source and a Kafka sink
// on brokers, both with the connection options conn, and returns them built
// (not opened).
func securedPipeline(t *testing.T, brokers []string, conn, topic, group string) (connector.Source, connector.Sink) {
	t.Helper()
	list := fmt.Sprintf("[%q]", strings.Join(brokers, `", "`))
	yaml := fmt.Sprintf(`sources:
  in:
    type: kafka
    brokers: %s
    group: %s
    topics: [%s]
    session_timeout: 6s
    rebalance_timeout: 10s
%ssinks:
  out:
    type: kafka
    inputs: [in]
    brokers: %s
    topic: %s
%s`, list, group, topic, conn, list, topic, conn)
	spec, err := config.Parse("secured.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return spec.Sources[0].Source, spec.Sinks[0].Sink
}

// roundTrip writes records through weir's Kafka sink and reads them back
// through weir's Kafka source, both connected with conn to brokers; a plain
// client on the plaintext listener checks what landed in the topic.
func roundTrip(t *testing.T, brokers []string, conn string) {
	t.Helper()
	ctx := testCtx(t)
	plain := kafkatest.Brokers(t)
	cl := kafkatest.Client(t, plain)
	topic := kafkatest.CreateTopic(ctx, t, cl, "weir-secured", 2)
	src, snk := securedPipeline(t, brokers, conn, topic, "weir-secured-"+topic)

	if err := snk.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = snk.Close(context.Background()) })
	const n = 600
	for g := 0; g < 3; g++ {
		var recs []record.Record
		for i := g * n / 3; i < (g+1)*n/3; i++ {
			recs = append(recs, rec(fmt.Sprintf(`{"i":%d}`, i), fmt.Sprint(i)))
		}
		if err := snk.Write(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := snk.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	h := kafkatest.NewHost()
	h.Source = src
	if err := src.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	loopCtx, stop := context.WithCancel(ctx)
	wait := kafkatest.PollLoop(loopCtx, src, h)
	if err := h.WaitFor(ctx, fmt.Sprintf("%d records through the source", n), func() bool { return h.Count() >= n }); err != nil {
		stop()
		t.Fatal(err)
	}
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for p := 0; p < 2; p++ {
		offs := h.Offsets(fmt.Sprintf("%s/%d", topic, p))
		for i, off := range offs {
			if off != int64(i) {
				t.Fatalf("%s/%d: the source read offset %d at %d, want contiguous from 0", topic, p, off, i)
			}
		}
		total += len(offs)
	}
	if total != n {
		t.Fatalf("the source read %d records, want %d", total, n)
	}

	seen := map[string]bool{}
	for _, r := range consume(ctx, t, plain, topic, n) {
		if string(r.Value) != fmt.Sprintf(`{"i":%s}`, r.Key) {
			t.Fatalf("record key %q value %q do not match", r.Key, r.Value)
		}
		seen[string(r.Key)] = true
	}
	if len(seen) != n {
		t.Fatalf("the topic holds %d distinct records, want %d", len(seen), n)
	}
}

// Against the broker's SASL_PLAINTEXT listener: the sink produces and the
// source consumes with each SASL mechanism, the password given as ${ENV} in
// the pipeline file.
func TestIntegrationSASL(t *testing.T) {
	sec := kafkatest.SecuredBrokers(t)
	t.Setenv(passwordEnv, sec.SASLPassword)
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		t.Run(mech, func(t *testing.T) {
			roundTrip(t, sec.SASLBrokers, saslYAML(mech, sec.SASLUser))
		})
	}
}

// Against the broker's TLS listeners: verified by the test CA (tls.ca_file),
// with a client certificate where the broker requires one, and SCRAM over TLS.
func TestIntegrationTLS(t *testing.T) {
	sec := kafkatest.SecuredBrokers(t)
	t.Setenv(passwordEnv, sec.SASLPassword)
	t.Run("ca_file", func(t *testing.T) {
		roundTrip(t, sec.TLSBrokers, tlsYAML(sec, false))
	})
	t.Run("mutual", func(t *testing.T) {
		roundTrip(t, sec.MTLSBrokers, tlsYAML(sec, true))
	})
	t.Run("sasl_ssl", func(t *testing.T) {
		roundTrip(t, sec.SASLTLSBrokers, tlsYAML(sec, false)+saslYAML("scram-sha-512", sec.SASLUser))
	})
}

// openFails opens the sink of a pipeline with conn against brokers and
// returns the error, which must come within the deadline.
func openFails(t *testing.T, brokers []string, conn string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, snk := securedPipeline(t, brokers, conn, "weir-refused", "weir-refused")
	err := snk.Open(ctx)
	if err == nil {
		_ = snk.Close(context.Background())
		t.Fatal("Open succeeded, want it refused")
	}
	if ctx.Err() != nil {
		t.Fatalf("Open failed only at the deadline: %v", err)
	}
	return err
}

// A wrong password is refused at Open with an error that says authentication
// failed and holds neither the wrong nor the right password.
func TestIntegrationSASLWrongPassword(t *testing.T) {
	sec := kafkatest.SecuredBrokers(t)
	buf := make([]byte, 12)
	if _, err := rand.Read(buf); err != nil {
		t.Fatal(err)
	}
	wrong := "wrong" + hex.EncodeToString(buf)
	t.Setenv(passwordEnv, wrong)
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		t.Run(mech, func(t *testing.T) {
			err := openFails(t, sec.SASLBrokers, saslYAML(mech, sec.SASLUser))
			msg := err.Error()
			if strings.Contains(msg, wrong) || strings.Contains(msg, sec.SASLPassword) {
				t.Fatal("the error holds the password")
			}
			t.Logf("error: %s", msg)
			if !strings.Contains(strings.ToLower(msg), "authentication") {
				t.Fatalf("the error does not say authentication failed: %s", msg)
			}
			if !strings.Contains(msg, "kafka: sink out") {
				t.Fatalf("the error does not name the sink: %s", msg)
			}
		})
	}
}

// The TLS listeners refuse what they must: a broker certificate not signed
// by a trusted CA, and a client without a certificate where one is required.
func TestIntegrationTLSRefused(t *testing.T) {
	sec := kafkatest.SecuredBrokers(t)
	t.Run("unknown_ca", func(t *testing.T) {
		err := openFails(t, sec.TLSBrokers, "    tls:\n      enabled: true\n")
		if !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("the error does not name the certificate: %v", err)
		}
		t.Logf("error: %v", err)
	})
	t.Run("no_client_cert", func(t *testing.T) {
		err := openFails(t, sec.MTLSBrokers, tlsYAML(sec, false))
		if !strings.Contains(err.Error(), "tls") {
			t.Fatalf("the error does not name TLS: %v", err)
		}
		t.Logf("error: %v", err)
	})
}
