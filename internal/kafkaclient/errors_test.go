package kafkaclient

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/reach"
)

// A Kafka error code reads as its name, number and meaning wherever it sits
// in a chain, and errors.Is still finds it.
func TestExplain(t *testing.T) {
	wrapped := fmt.Errorf("committing t/0: %w", kerr.UnknownMemberID)
	for _, tc := range []struct {
		in   error
		want string
	}{
		{kerr.UnknownMemberID, "UNKNOWN_MEMBER_ID (25): The coordinator is not aware of this member."},
		{wrapped, "committing t/0: UNKNOWN_MEMBER_ID (25): The coordinator is not aware of this member."},
		{fmt.Errorf("outer: %w", Explain(wrapped)), "outer: committing t/0: UNKNOWN_MEMBER_ID (25): The coordinator is not aware of this member."},
		{ForCode(kerr.IllegalGeneration.Code), "ILLEGAL_GENERATION (22): " + kerr.IllegalGeneration.Description},
	} {
		got := Explain(tc.in)
		if got.Error() != tc.want {
			t.Errorf("Explain(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !errors.Is(got, kerr.UnknownMemberID) && !errors.Is(got, kerr.IllegalGeneration) {
			t.Errorf("Explain(%q) hides the kerr error from errors.Is", tc.in)
		}
	}
	if again := Explain(Explain(wrapped)); strings.Count(again.Error(), "(25)") != 1 {
		t.Errorf("explaining twice gives %q", again)
	}
	plain := errors.New("dial tcp: connection refused")
	if Explain(plain) != plain || Explain(nil) != nil || ForCode(0) != nil {
		t.Error("Explain changed an error without a Kafka code, or nil")
	}
}

func TestRefused(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("x: %w", kerr.TopicAuthorizationFailed),
		kerr.SaslAuthenticationFailed,
		Explain(kerr.GroupAuthorizationFailed),
	} {
		if !Refused(err) {
			t.Errorf("Refused(%v) = false", err)
		}
	}
	for _, err := range []error{kerr.UnknownMemberID, kerr.NotCoordinator, errors.New("EOF")} {
		if Refused(err) {
			t.Errorf("Refused(%v) = true: a retry may fix it", err)
		}
	}
	for _, err := range []error{
		fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}),
		&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")},
	} {
		if !reach.TLSRefused(err) {
			t.Errorf("reach.TLSRefused(%v) = false", err)
		}
	}
	if reach.TLSRefused(&net.OpError{Op: "dial", Err: errors.New("connection refused")}) {
		t.Error("a refused dial counted as a TLS refusal: the broker may come up")
	}
}

func TestJoin(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if Join() != nil || Join(nil, nil) != nil || Join(nil, a) != a {
		t.Error("Join of nothing, or of one error")
	}
	j := Join(a, nil, b)
	if j.Error() != "a; b" || !errors.Is(j, a) || !errors.Is(j, b) {
		t.Errorf("Join(a, b) = %q", j)
	}
}

// The client's own log lines arrive in the connector's log at WARN and
// ERROR, with error codes spelled out; below WARN they are dropped.
func TestClientLog(t *testing.T) {
	var buf bytes.Buffer
	l := &clientLog{l: slog.New(slog.NewTextHandler(&buf, nil))}
	if l.Level() != kgo.LogLevelWarn {
		t.Errorf("level %v, want warn", l.Level())
	}
	l.Log(kgo.LogLevelWarn, "heartbeat errored", "group", "g", "err", kerr.UnknownMemberID)
	l.Log(kgo.LogLevelError, "fatal", "err", io.EOF)
	l.Log(kgo.LogLevelInfo, "chatter")
	// A failed offset commit logs the response's bare code.
	l.Log(kgo.LogLevelWarn, "unable to commit offset for topic partition", "partition", int32(3), "error_code", int16(27), "commit_to", int64(25))
	out := buf.String()
	for _, part := range []string{"level=WARN", `msg="kafka client: heartbeat errored"`, "group=g", "UNKNOWN_MEMBER_ID (25): The coordinator", "level=ERROR", "component=kafka-client",
		`error_code="REBALANCE_IN_PROGRESS (27): `, "partition=3", "commit_to=25"} {
		if !strings.Contains(out, part) {
			t.Errorf("log %q lacks %q", out, part)
		}
	}
	if strings.Contains(out, "chatter") {
		t.Errorf("an INFO line of the client reached the log: %q", out)
	}
}
