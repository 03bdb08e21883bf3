//go:build e2e

// Package expr runs the real binary on the defect that made metadata a
// root of its own: a record's own "timestamp" and "key" fields were
// silently replaced by the read time and the message key.
package expr

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var filePartRE = regexp.MustCompile(`^[0-9]+[@:][0-9]+#[0-9a-f]+$`)

const pipelineFile = `sources:
  in:
    type: file
    paths: [IN/*.ndjson]
    format: ndjson
    mode: once
    data_dir: STATE
transforms:
  t:
    type: map
    inputs: [in]
    set:
      t2: string(timestamp)
      k2: key
      meta_key: '@key'
      read_at: string(@timestamp)
      part: '@origin.partition'
      src: '@origin.source'
sinks:
  out:
    type: file
    inputs: [t]
    path: OUT
    format: ndjson
    compression: none
    batch: { max_records: 10, max_age: 100ms }
checkpoint:
  commit_interval: 100ms
metrics:
  address: "off"
`

// Guarantee: in an expression a name is the record's field, always; the
// metadata is under @. Run by the real binary: the record's "timestamp"
// and "key" arrive unchanged in t2 and k2, @timestamp is the read time and
// @origin the file; validate warns about each bare use, at its line and
// column, with the replacement.
func TestFieldsAreNeverShadowedByMetadata(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "a.ndjson"), []byte(`{"timestamp":"2020-01-01T00:00:00Z","key":"k1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("IN", in, "STATE", filepath.Join(dir, "state"), "OUT", out).Replace(pipelineFile)
	cfgPath := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	v, err := exec.Command(bin, "validate", "-c", cfgPath).CombinedOutput()
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, v)
	}
	for _, w := range []string{
		`p.yaml:13:18: transforms.t.set.t2: warning: timestamp is the record's field "timestamp", no longer its metadata: write @timestamp`,
		`p.yaml:14:11: transforms.t.set.k2: warning: key is the record's field "key", no longer its metadata: write @key`,
	} {
		if !strings.Contains(string(v), w) {
			t.Errorf("validate does not warn %q:\n%s", w, v)
		}
	}

	start := time.Now()
	run := exec.Command(bin, "run", "-c", cfgPath)
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, b)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", "*.ndjson"))
	more, _ := filepath.Glob(filepath.Join(out, "*.ndjson"))
	files = append(files, more...)
	if len(files) != 1 {
		t.Fatalf("output files %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got["timestamp"] != "2020-01-01T00:00:00Z" || got["key"] != "k1" || got["t2"] != "2020-01-01T00:00:00Z" || got["k2"] != "k1" {
		t.Errorf("the record's own fields were not its own: %s", b)
	}
	// A file's partition is named by its identity, not its path
	// (docs/file-connectors.md): <inode>@<birth ns>#<hash> or
	// <device>:<inode>#<hash>.
	if got["meta_key"] != "" || got["src"] != "in" || !filePartRE.MatchString(got["part"]) {
		t.Errorf("metadata under @: %s", b)
	}
	read, err := time.Parse(time.RFC3339Nano, got["read_at"])
	if err != nil || read.Before(start.Add(-time.Minute)) || read.After(time.Now().Add(time.Minute)) {
		t.Errorf("@timestamp %q is not the read time (%v)", got["read_at"], err)
	}
	if strings.Contains(string(b), "m=+") {
		t.Errorf("Go's internal text of a time leaked: %s", b)
	}
}
