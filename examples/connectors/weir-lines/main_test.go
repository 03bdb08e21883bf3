package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command runs a pipeline file with the example connectors to its end,
// and a second run reads nothing again.
func TestRunsAPipelineOfTheExampleConnectors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in", "a.ndjson"), []byte("{\"n\":1}\n{\"n\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipelineFile := filepath.Join(dir, "p.yaml")
	yaml := strings.ReplaceAll(`
sources:
  in: { type: lines, dir: DIR/in, state_file: DIR/state/in.json }
sinks:
  out: { type: jsonl, inputs: [in], dir: DIR/out }
metrics: { address: "off" }
`, "DIR", dir)
	if err := os.WriteFile(pipelineFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"2 records read", "0 records read"} {
		var stderr bytes.Buffer
		if code := run([]string{"-c", pipelineFile}, &stderr); code != 0 || !strings.Contains(stderr.String(), want) {
			t.Fatalf("run %d: exit %d, want 0 and %q in:\n%s", i+1, code, want, stderr.String())
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", "part-00000001.jsonl"))
	if err != nil || string(data) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Fatalf("output %q (%v), want both lines", data, err)
	}
}

func TestExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("sources:\n  in: { type: lines }\nsinks:\n  out: { type: jsonl, inputs: [in] }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-c", bad}, &stderr); code != 1 || !strings.Contains(stderr.String(), "dir: is empty") {
		t.Fatalf("invalid file: exit %d, want 1 naming the missing dir:\n%s", code, stderr.String())
	}
	if code := run(nil, &stderr); code != 2 {
		t.Fatalf("no -c: exit %d, want 2", code)
	}
}
