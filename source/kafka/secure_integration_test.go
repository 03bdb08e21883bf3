//go:build integration

package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/source/kafka"
)

const passwordEnv = "WEIR_TEST_KAFKA_PASSWORD"

// logHost is a kafkatest.Host whose logger keeps what the source logs.
type logHost struct {
	*kafkatest.Host
	mu  sync.Mutex
	buf bytes.Buffer
}

func (h *logHost) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.Write(p)
}

func (h *logHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(h, nil)) }

func (h *logHost) logged() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

// securedConfig is a source configuration for brokers with SASL mechanism
// mech, its password read from passwordEnv like ${WEIR_TEST_KAFKA_PASSWORD}
// in a pipeline file, and TLS verified by the test CA when ca is set.
func securedConfig(sec kafkatest.Secured, brokers []string, mech, ca, group, topic string) *kafka.Config {
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Group = group
	cfg.Topics = []string{topic}
	cfg.SessionTimeout = 6 * time.Second
	cfg.RebalanceTimeout = 10 * time.Second
	cfg.SASL = kafka.SASL{Mechanism: mech, Username: sec.SASLUser, Password: kafka.Secret(os.Getenv(passwordEnv))}
	cfg.TLS.CAFile = ca
	return cfg
}

// Against the broker's SASL listeners: the source consumes what a plain
// client produced, with SCRAM-SHA-256 and with SCRAM-SHA-512 over TLS, and
// its configuration prints without the password.
func TestIntegrationSourceSecured(t *testing.T) {
	sec := kafkatest.SecuredBrokers(t)
	t.Setenv(passwordEnv, sec.SASLPassword)
	for _, c := range []struct {
		name, mech, ca string
		brokers        []string
	}{
		{"scram-sha-256", "scram-sha-256", "", sec.SASLBrokers},
		{"scram-sha-512 over tls", "scram-sha-512", sec.CAFile, sec.SASLTLSBrokers},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t)
			cl := kafkatest.Client(t, kafkatest.Brokers(t))
			const parts, perPart = 2, 300
			topic := kafkatest.CreateTopic(ctx, t, cl, "weir-src-secured", parts)
			kafkatest.Produce(ctx, t, cl, topic, parts, perPart)
			cfg := securedConfig(sec, c.brokers, c.mech, c.ca, "weir-src-secured-"+topic, topic)
			for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
				if strings.Contains(fmt.Sprintf(f, cfg), sec.SASLPassword) {
					t.Fatalf("the configuration printed with %s holds the password", f)
				}
			}
			src, err := kafka.New("in", cfg)
			if err != nil {
				t.Fatal(err)
			}
			h := &logHost{Host: kafkatest.NewHost()}
			h.Source = src
			if err := src.Open(ctx, h); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = src.Close(context.Background()) })
			loopCtx, stop := context.WithCancel(ctx)
			wait := kafkatest.PollLoop(loopCtx, src, h.Host)
			err = h.WaitFor(ctx, "every record", func() bool { return h.Count() >= parts*perPart })
			stop()
			if err != nil {
				t.Fatal(err)
			}
			if err := wait(); err != nil {
				t.Fatal(err)
			}
			if err := h.CommitAll(ctx); err != nil {
				t.Fatal(err)
			}
			for p, off := range kafkatest.Committed(ctx, t, cl, cfg.Group, topic, parts) {
				if off != perPart {
					t.Errorf("partition %d committed %d through SASL, want %d", p, off, perPart)
				}
			}
			if strings.Contains(h.logged(), sec.SASLPassword) {
				t.Fatal("the source logged the password")
			}
		})
	}
}

// A wrong password fails the source's Open at once, with an error that says
// authentication failed; neither it nor the source's log holds a password.
func TestIntegrationSourceWrongPassword(t *testing.T) {
	sec := kafkatest.SecuredBrokers(t)
	const wrong = "not-the-password-4f1c9a"
	t.Setenv(passwordEnv, wrong)
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		t.Run(mech, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			src, err := kafka.New("in", securedConfig(sec, sec.SASLBrokers, mech, "", "weir-refused", "weir-refused"))
			if err != nil {
				t.Fatal(err)
			}
			h := &logHost{Host: kafkatest.NewHost()}
			h.Source = src
			err = src.Open(ctx, h)
			if err == nil {
				_ = src.Close(context.Background())
				t.Fatal("Open succeeded with a wrong password")
			}
			if ctx.Err() != nil {
				t.Fatalf("Open failed only at the deadline: %v", err)
			}
			for what, s := range map[string]string{"error": err.Error(), "log": h.logged()} {
				if strings.Contains(s, wrong) || strings.Contains(s, sec.SASLPassword) {
					t.Fatalf("the %s holds a password", what)
				}
			}
			if !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") || !strings.Contains(err.Error(), "kafka: source in") {
				t.Fatalf("the error does not say which source failed to authenticate: %v", err)
			}
			t.Logf("error: %v", err)
		})
	}
}
