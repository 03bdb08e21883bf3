package cli

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIStdin is runCLI with stdin.
func runCLIStdin(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb syncBuffer
	c := &command{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}
	code = c.main(args)
	return code, out.String(), errb.String()
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Every flag of run and validate, with what it does and how it says no:
// --set edits the file before decoding (typed as YAML, errors naming the
// flag), --metrics-addr overrides metrics.address, -c - reads stdin, and
// --log-format and --log-level shape the log.
func TestFlags(t *testing.T) {
	ok := writeConfig(t, okConfig)
	bad := writeConfig(t, badConfig)
	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string
		stderr []string
		absent []string // on stderr
	}{
		{"--set a value", "", []string{"validate", "-c", ok, "--set", "sinks.out.batch.max_age=2s"}, ExitOK, []string{": ok"}, nil, nil},
		{"--set a bad value names the flag", "", []string{"validate", "-c", ok, "--set", "sinks.out.batch.max_age=5"}, ExitConfig, nil,
			[]string{`--set sinks.out.batch.max_age=5: sinks.out.batch.max_age: "5" has no unit`}, nil},
		{"--set an unknown option names the flag", "", []string{"validate", "-c", ok, "--set", "sinks.out.colour=red"}, ExitConfig, nil,
			[]string{`--set sinks.out.colour=red: sinks.out: unknown option "colour"`}, nil},
		{"--set fixes a file", "", []string{"validate", "-c", bad, "--set", "sources.in.type=generate", "--set", "sinks.out={type: blackhole, inputs: [in]}"}, ExitOK, []string{": ok"}, nil, nil},
		{"--set without =", "", []string{"validate", "-c", ok, "--set", "sinks.out"}, ExitUsage, nil, []string{"invalid value", "write path=value"}, nil},
		{"--set a bad path", "", []string{"validate", "-c", ok, "--set", "sinks..out=1"}, ExitUsage, nil, []string{"has an empty name"}, nil},
		{"--metrics-addr", "", []string{"validate", "-c", ok, "--metrics-addr", "nowhere"}, ExitConfig, nil,
			[]string{`--metrics-addr nowhere: metrics.address`, "host:port"}, nil},
		{"--metrics-addr off", "", []string{"run", "-c", ok, "--metrics-addr", "off"}, ExitOK, nil, []string{"all input read and committed"}, []string{"metrics listening"}},
		{"-c - reads stdin", okConfig, []string{"validate", "-c", "-"}, ExitOK, []string{"stdin: ok"}, nil, nil},
		{"-c - with problems", badConfig, []string{"validate", "-c", "-"}, ExitConfig, nil, []string{"config: 2 problems in stdin", "stdin:3: sources.in.type"}, nil},
		{"-c - runs", okConfig, []string{"run", "-c", "-"}, ExitOK, nil, []string{"all input read and committed"}, nil},
		{"--watch needs a file", okConfig, []string{"run", "-c", "-", "--watch"}, ExitUsage, nil, []string{"--watch needs a file"}, nil},
		{"--log-level error", "", []string{"run", "-c", ok, "--log-level", "error"}, ExitOK, nil, []string{"run summary"}, []string{"level=INFO"}},
		{"--log-level debug", "", []string{"run", "-c", ok, "--log-level", "debug"}, ExitOK, nil, []string{"level=INFO"}, nil},
		{"--log-level bad", "", []string{"run", "-c", ok, "--log-level", "loud"}, ExitUsage, nil, []string{`--log-level "loud": use debug, info, warn or error`}, nil},
		{"--log-format bad", "", []string{"run", "-c", ok, "--log-format", "xml"}, ExitUsage, nil, []string{`--log-format "xml": use text or json`}, nil},
		{"flags after the arguments", "", []string{"tap", "paid", "-rate", "0"}, ExitUsage, nil, []string{"-rate 0"}, nil},
		{"tap needs a component", "", []string{"tap"}, ExitUsage, nil, []string{"name the component"}, nil},
		{"tap -n negative", "", []string{"tap", "x", "-n", "-1"}, ExitUsage, nil, []string{"-n -1"}, nil},
		{"tap with nothing listening", "", []string{"tap", "x", "-a", closedAddr(t)}, ExitRuntime, nil, []string{"weir: tap:", "is weir running"}, nil},
		{"schema takes no argument", "", []string{"schema", "x"}, ExitUsage, nil, []string{`unexpected argument "x"`}, nil},
		{"list takes no argument", "", []string{"list", "x"}, ExitUsage, nil, []string{`unexpected argument "x"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLIStdin(tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr has %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// --log-format json writes every log line as one JSON object; the summary
// and messages stay text.
func TestLogFormatJSON(t *testing.T) {
	code, _, stderr := runCLI("run", "-c", writeConfig(t, okConfig), "--log-format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	logs := 0
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["level"] == nil || m["msg"] == nil {
			t.Errorf("log line %q: %v", line, err)
		}
		logs++
	}
	if logs == 0 || !strings.Contains(stderr, `"msg":"all input read and committed"`) || !strings.Contains(stderr, "run summary") {
		t.Errorf("no JSON log lines, or no summary:\n%s", stderr)
	}
}

// What --metrics-addr sets is what runs: the endpoints listen there.
func TestMetricsAddrServes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(cfg, []byte(okConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("run", "-c", cfg, "--metrics-addr", "127.0.0.1:0")
	if code != ExitOK || !strings.Contains(stderr, `msg="metrics listening" address=127.0.0.1:`) {
		t.Errorf("exit %d; want the endpoints served where --metrics-addr says:\n%s", code, stderr)
	}
}
