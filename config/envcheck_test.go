package config

import (
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
)

// testEnvSinkConfig has options that name environment variables, one with
// a default, one nested.
type testEnvSinkConfig struct {
	PasswordEnv string `yaml:"password_env"`
	Auth        struct {
		TokenEnv string `yaml:"token_env"`
	} `yaml:"auth"`
}

func init() {
	connector.RegisterSink(connector.SinkDef[testEnvSinkConfig]{
		Name:   "test_envsink",
		Config: func() *testEnvSinkConfig { return &testEnvSinkConfig{PasswordEnv: "DEFAULT_PW"} },
		Build:  func(string, *testEnvSinkConfig) (connector.Sink, error) { return &testSink{}, nil },
	})
}

// An option named *_env that names a variable that is not set is a problem
// of the file, at the option's line (or the component's, for a default), so
// that weir validate finds what only weir run found before (issue 25): an
// unset password_env. An empty value names none; Offline (weir test, validate --offline)
// skips the check.
func TestUnsetEnvOptions(t *testing.T) {
	const file = `sources:
  a: { type: test_source, path: /a }
sinks:
  out:
    type: test_envsink
    inputs: [a]
    auth:
      token_env: THE_TOKEN
`
	_, err := ParseWith("p.yaml", []byte(file), Options{Lookup: env(nil)})
	if err == nil {
		t.Fatal("a file whose *_env options name unset variables loaded")
	}
	msg := err.Error()
	for _, want := range []string{
		"p.yaml:8: sinks.out.auth.token_env: names the environment variable THE_TOKEN (its value), which is not set",
		"p.yaml:4: sinks.out.password_env: names the environment variable DEFAULT_PW (the default), which is not set",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if _, err := ParseWith("p.yaml", []byte(file), Options{Lookup: env(map[string]string{"THE_TOKEN": "t", "DEFAULT_PW": ""})}); err != nil {
		t.Fatalf("with the variables set (one empty): %v", err)
	}
	if _, err := ParseWith("p.yaml", []byte(file+"    password_env: \"\"\n"), Options{Lookup: env(map[string]string{"THE_TOKEN": "t"})}); err != nil {
		t.Fatalf("with password_env empty: %v", err)
	}
	if _, err := ParseWith("p.yaml", []byte(file), Options{Lookup: env(nil), Offline: true}); err != nil {
		t.Fatalf("with Offline: %v", err)
	}
}

// metrics.token_env names the variable that holds the token of the
// endpoints that show records: unset or empty is a problem at its line;
// set, its value (trimmed) is the spec's token; Offline skips the check.
func TestMetricsTokenEnv(t *testing.T) {
	const file = `sources:
  a: { type: test_source, path: /a }
sinks:
  out: { type: test_sink, inputs: [a] }
metrics:
  address: 0.0.0.0:9464
  token_env: WEIR_TOK
`
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "p.yaml:7: metrics.token_env: names the environment variable WEIR_TOK, which is not set"},
		{map[string]string{"WEIR_TOK": "  "}, "p.yaml:7: metrics.token_env: names the environment variable WEIR_TOK, which is empty"},
	} {
		_, err := ParseWith("p.yaml", []byte(file), Options{Lookup: env(c.env)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("env %v: %v, want %q", c.env, err, c.want)
		}
	}
	sp, err := ParseWith("p.yaml", []byte(file), Options{Lookup: env(map[string]string{"WEIR_TOK": " tok\n"})})
	if err != nil || sp.Metrics.Token != "tok" {
		t.Fatalf("set: %v, token %q, want tok", err, sp.Metrics.Token)
	}
	if _, err := ParseWith("p.yaml", []byte(file), Options{Lookup: env(nil), Offline: true}); err != nil {
		t.Errorf("offline: %v", err)
	}
}
