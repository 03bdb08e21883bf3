package config

import (
	"strings"
	"testing"
)

// A substituted value that is a word of YAML or a number is replaced by
// its ${NAME} only where it is quoted whole: messages use such words
// themselves. It once read `"${TLS}" is not ${TLS} or false`.
func TestRedactKeepsTheMessagesWords(t *testing.T) {
	data := []byte("sources:\n  in:\n    type: test_source\n    path: /a\n    tls:\n      verify: \"${TLS}\"\n    port: \"${PORT}\"\nsinks:\n  out: { type: test_sink, inputs: [in] }\n")
	_, err := parse("p.yaml", data, env(map[string]string{"TLS": "true", "PORT": "8080"}))
	for _, want := range []string{`sources.in.tls.verify: "${TLS}" is not true or false`, `sources.in.port: "${PORT}" is not a whole number`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %q", err, want)
		}
	}
}
