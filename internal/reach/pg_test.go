package reach

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

// A server with ssl off refuses TLS: with tls.mode require that is the only
// attempt, and no wait can fix it; with prefer a plaintext attempt follows,
// whose error is the cause, and that may pass.
func TestTLSRefusedAtEveryAttemptIsUnfixable(t *testing.T) {
	refused := func() error {
		return fmt.Errorf("failed to connect to `user=weir`: 127.0.0.1:5432: %w", errors.New("server refused TLS connection"))
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"require: one attempt, refused TLS", errors.Join(refused()), true},
		{"require, two hosts: both refused TLS", errors.Join(refused(), refused()), true},
		{"wrapped once more", fmt.Errorf("acquire: %w", errors.Join(refused())), true},
		{"prefer: refused TLS, then plaintext not reached", errors.Join(refused(), dial), false},
		{"connection refused", errors.Join(dial), false},
		{"a plain error", errors.New("timeout"), false},
	} {
		if got := PgUnfixable(c.err); got != c.want {
			t.Errorf("%s: PgUnfixable = %v, want %v", c.name, got, c.want)
		}
		explained := PgExplain(c.err).Error()
		if hinted := strings.Contains(explained, "turn ssl on in the server, or set tls.mode"); hinted != c.want {
			t.Errorf("%s: PgExplain = %q: the fix named %v, want %v", c.name, explained, hinted, c.want)
		}
		if !errors.Is(PgExplain(c.err), c.err) {
			t.Errorf("%s: PgExplain does not wrap the error", c.name)
		}
	}
}
