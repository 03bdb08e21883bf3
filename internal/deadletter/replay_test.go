package deadletter_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/internal/deadletter"
	"github.com/weir-etl/weir/pipeline"

	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/source/file"
)

// The first pipeline: file → map → a file sink whose records go to a dead
// letter file when it fails for good. Each record is a group of its own, so
// that only the records that fail are dead-lettered.
const firstYAML = `
sources:
  in: { type: file, paths: [%[1]s/in/*.ndjson], format: ndjson, mode: once, batch_size: 1, data_dir: %[1]s/state-%[2]s }
transforms:
  tidy:
    type: map
    inputs: [in]
    rename: { a: b }
sinks:
  out:
    type: file
    inputs: [tidy]
    path: %[1]s/%[2]s
    template: '{{field "region"}}/part'
    batch: { max_records: 1 }
    retry: { max_attempts: 2, initial_backoff: 1ms, max_backoff: 1ms, max_elapsed: 1s }
    on_failure: dead_letter
    dead_letter: dlq
  dlq: { type: file, path: %[1]s/dead, template: part }
metrics: { address: "off" }
`

// The replay: the dead letters, read back, to the original sink as it was
// configured.
const replayYAML = `
sources:
  dead: { type: file, paths: [%[1]s/dead/*.ndjson], format: dead_letter, mode: once, data_dir: %[1]s/state-replay }
sinks:
  out:
    type: file
    inputs: [dead]
    path: %[1]s/%[2]s
    template: '{{field "region"}}/part'
    batch: { max_records: 1 }
metrics: { address: "off" }
`

func runYAML(t *testing.T, dir, name, yaml string) {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pipeline.Run(context.Background(), spec, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// output returns what a file sink wrote under dir: for each directory, the
// lines of its chunks, in order of the chunks' sequence numbers.
func output(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ndjson") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(p))
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(l) > 0 {
				out[rel] = append(out[rel], string(l))
			}
		}
		return nil
	})
	for _, lines := range out {
		slices.Sort(lines)
	}
	return out
}

// Guarantee: dead letters can be replayed. Records that fail in a sink go to
// a dead letter file; a second pipeline reads it back (format dead_letter)
// and writes the records to the original sink; what it writes is byte for
// byte what the first pipeline would have written had the sink not failed,
// for values that are not UTF-8, big numbers and escapes too.
func TestDeadLettersReplayToTheOriginalSink(t *testing.T) {
	dir := t.TempDir()
	var in bytes.Buffer
	for i := range 20 {
		region := []string{"eu", "us", "ap"}[i%3]
		fmt.Fprintf(&in, `{"a":%d,"region":"%s","id":%d,"note":"caf\u00e9 \"%d\"","raw":"`, i, region, 12345678901234567000+uint64(i), i)
		if i%2 == 0 {
			in.WriteString("\xff") // not UTF-8: the envelope holds base64
		}
		in.WriteString(`","n":1.50e2}` + "\n")
	}
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in", "orders.ndjson"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// What the first pipeline writes when nothing fails.
	runYAML(t, dir, "reference", fmt.Sprintf(firstYAML, dir, "reference"))
	want := output(t, filepath.Join(dir, "reference"))

	// The same pipeline, with the sink unable to create the directory of
	// region eu: a file is in its way.
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out", "eu"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runYAML(t, dir, "first", fmt.Sprintf(firstYAML, dir, "out"))
	dead := output(t, filepath.Join(dir, "dead"))["."]
	if len(dead) != 7 {
		t.Fatalf("%d dead letters, want the 7 records of region eu", len(dead))
	}
	encodings := map[string]int{}
	for _, d := range dead {
		e, err := deadletter.Decode([]byte(strings.TrimSuffix(d, "\n")))
		if err != nil || e.Component != "sink" || e.Name != "out" {
			t.Fatalf("dead letter %s: %+v, %v", d, e, err)
		}
		_, enc, _ := strings.Cut(d, `"value_encoding":"`)
		encodings[enc[:4]]++
	}
	if encodings["json"] == 0 || encodings["base"] == 0 {
		t.Fatalf("dead letters hold values as %v; the test needs both json and base64", encodings)
	}
	if got := output(t, filepath.Join(dir, "out")); len(got["eu"]) != 0 || len(got["us"]) != len(want["us"]) {
		t.Fatalf("the first run wrote %d eu and %d us records", len(got["eu"]), len(got["us"]))
	}

	// Fixed: the file is gone. The replay completes the output.
	if err := os.Remove(filepath.Join(dir, "out", "eu")); err != nil {
		t.Fatal(err)
	}
	runYAML(t, dir, "replay", fmt.Sprintf(replayYAML, dir, "out"))
	got := output(t, filepath.Join(dir, "out"))
	if len(got) != len(want) {
		t.Fatalf("directories %v, want %v", keys(got), keys(want))
	}
	for d, lines := range want {
		if !slices.Equal(got[d], lines) {
			t.Errorf("%s: after the replay\n%q\nwant\n%q", d, got[d], lines)
		}
	}
}

func keys(m map[string][]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}
