//go:build e2e

package failure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// Guarantee: with on_failure dead_letter, a record whose templated path
// cannot be made (its directory would lie under a regular file) goes to the
// dead letter sink alone, with the error that names its path; every other
// record is in its file once, no chunk holds more records than
// batch.max_records, and the job exits 0 with a summary counting the one
// failed record and the one dead letter. Before, the whole group of 1,000
// records (a file source's batch, past max_records 500) was dead-lettered
// with it.
func TestBadPathDeadLettersOneRecord(t *testing.T) {
	bin := weirtest.BuildTemp(t, "")
	dir := t.TempDir()
	const n, badID, maxRecords = 3000, 1234, 500
	var b strings.Builder
	for i := range n {
		d := "ok"
		if i == badID {
			d = "blocked"
		}
		fmt.Fprintf(&b, `{"id":%d,"dir":"%s","pad":"%s"}`+"\n", i, d, strings.Repeat("x", 40))
	}
	write(t, filepath.Join(dir, "in", "a.ndjson"), b.String())
	// blocked is a regular file: the directory the record's path needs
	// cannot be made under it.
	write(t, filepath.Join(dir, "lake", "blocked"), "a file where a directory would be")
	cfg := write(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(`
sources:
  in: { type: file, paths: [%[1]s/in/*.ndjson], mode: once, data_dir: %[1]s/state }
sinks:
  lake:
    type: file
    inputs: [in]
    path: %[1]s/lake
    template: '{{field "dir"}}/part'
    format: ndjson
    batch: { max_records: %[2]d }
    retry: { max_attempts: 2, initial_backoff: 10ms, max_backoff: 20ms }
    on_failure: dead_letter
    dead_letter: dead
  dead: { type: file, path: %[1]s/dead, format: ndjson }
checkpoint: { commit_interval: 100ms }
metrics: { address: "off" }
`, dir, maxRecords))
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v, want exit 0 (the failed record went to the dead letter sink)\n%s", err, stderr.String())
	}
	got := map[int]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "lake", "ok", "*.ndjson"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if c := bytes.Count(data, []byte("\n")); c > maxRecords {
			t.Errorf("%s holds %d records, more than batch.max_records %d: a group grew past it", f, c, maxRecords)
		}
		for line := range bytes.Lines(data) {
			var r struct{ ID int }
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %s: %v", f, line, err)
			}
			got[r.ID]++
		}
	}
	var dead []int
	var deadErr string
	letters, _ := filepath.Glob(filepath.Join(dir, "dead", "*", "*.ndjson"))
	for _, f := range letters {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			var env struct {
				Error string `json:"error"`
				Sink  string `json:"sink"`
				Value struct{ ID int }
			}
			if err := json.Unmarshal(line, &env); err != nil {
				t.Fatalf("dead letter %s: %v", line, err)
			}
			dead = append(dead, env.Value.ID)
			deadErr = env.Error
		}
	}
	if len(dead) != 1 || dead[0] != badID {
		t.Errorf("dead letters hold ids %v (%d of them), want exactly [%d]", head(dead), len(dead), badID)
	}
	if !strings.Contains(deadErr, "blocked") || !strings.Contains(deadErr, "not a directory") {
		t.Errorf("the dead letter's error %q does not name the path and why it cannot be made", deadErr)
	}
	missing, dups := 0, 0
	for i := range n {
		switch {
		case i == badID:
			if got[i] != 0 {
				t.Errorf("record %d is in the lake too", i)
			}
		case got[i] == 0:
			missing++
		case got[i] > 1:
			dups++
		}
	}
	if missing+dups > 0 {
		t.Errorf("of %d good records, %d missing from the lake and %d written twice or more, want each once", n-1, missing, dups)
	}
	out := stderr.String()
	if !regexp.MustCompile(`sink\s+lake\s+2999 written\s+1 failed`).MatchString(out) || !regexp.MustCompile(`sink\s+dead\s+1 written`).MatchString(out) {
		t.Errorf("the summary does not count 2999 written and 1 failed for lake, 1 written for dead:\n%s", out)
	}
}

func head(s []int) []int { return s[:min(len(s), 10)] }
