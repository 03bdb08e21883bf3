package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/weir-etl/weir/internal/builtin"
)

// TestJSONLogsAreAllJSON: with --log-format json, every line weir run writes
// to stderr is one JSON object: the pipeline's log lines, the lines of a
// connector that logs to slog.Default() (the Kafka sink, whose broker is not
// there), the run summary, and the reason it stopped; and the summary is
// one object holding every component.
func TestJSONLogsAreAllJSON(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, yaml string
		code       int
		want       []string // messages that must be among the lines
	}{
		{"finished", `
sources: { in: { type: file, paths: ["` + in + `"], mode: once, data_dir: "` + filepath.Join(dir, "s1") + `" } }
transforms: { f: { type: filter, inputs: [in], condition: 'id > 1' } }
sinks: { out: { type: blackhole, inputs: [f] } }
metrics: { address: "off" }
`, ExitOK, []string{"run summary"}},
		{"a broker that is not there", `
sources: { in: { type: file, paths: ["` + in + `"], mode: once, data_dir: "` + filepath.Join(dir, "s2") + `" } }
sinks: { out: { type: kafka, inputs: [in], brokers: ["127.0.0.1:1"], topic: t, connect_timeout: 1s } }
metrics: { address: "off" }
`, ExitRuntime, []string{"kafka: no broker answers; retrying", "stopped"}},
		{"a configuration with problems", `
sources: { in: { type: file, pahts: ["` + in + `"] } }
sinks: { out: { type: blackhole, inputs: [in] } }
`, ExitConfig, []string{"configuration refused"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI("run", "--log-format", "json", "-c", writeConfig(t, c.yaml))
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			msgs := map[string]map[string]any{}
			for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("a line of stderr is not JSON (%v):\n%s\nstderr:\n%s", err, line, stderr)
				}
				msg, _ := m["msg"].(string)
				msgs[msg] = m
			}
			for _, w := range c.want {
				if msgs[w] == nil {
					t.Errorf("no line with msg %q:\n%s", w, stderr)
				}
			}
			if s, ok := msgs["run summary"]["summary"].(map[string]any); c.code == ExitOK && ok {
				tr := s["transforms"].([]any)[0].(map[string]any)
				if tr["in"] != 2.0 || tr["out"] != 1.0 || tr["dropped"] != 1.0 {
					t.Errorf("the summary's filter: %v", tr)
				}
			} else if c.code == ExitOK {
				t.Errorf("the summary is not one object: %v", msgs["run summary"])
			}
			if m := msgs["kafka: no broker answers; retrying"]; m != nil && m["connect_timeout"] != "1s" {
				t.Errorf("a duration is not written as Go writes it: %v", m["connect_timeout"])
			}
			if m := msgs["stopped"]; m != nil && m["exit_code"] != float64(c.code) {
				t.Errorf("stopped with exit_code %v, want %d", m["exit_code"], c.code)
			}
		})
	}
}
