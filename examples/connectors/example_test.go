package connectors_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/pipeline"

	// Importing a connector's package registers its type: "lines" and
	// "jsonl" become valid in a pipeline file.
	_ "github.com/weir-etl/weir/examples/connectors/jsonlsink"
	_ "github.com/weir-etl/weir/examples/connectors/linesource"
)

// The two example connectors in a pipeline, loaded from YAML as `weir run`
// loads it: two files of JSON lines (one line blank) are copied into JSON
// line files. A second run reads nothing again: every position was
// committed, and the state file says where.
func Example() {
	dir, err := os.MkdirTemp("", "weir-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	os.WriteFile(filepath.Join(dir, "in", "a.ndjson"), []byte("{\"id\":1}\n\n{\"id\":2}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "in", "b.ndjson"), []byte("{\"id\":3}\n"), 0o644)
	yaml := strings.ReplaceAll(`
sources:
  in:
    type: lines
    dir: DIR/in
    state_file: DIR/state.json
sinks:
  out:
    type: jsonl
    inputs: [in]
    dir: DIR/out
checkpoint:
  commit_interval: 100ms
metrics:
  address: "off"
`, "DIR", dir)

	for run := 1; run <= 2; run++ {
		spec, err := config.Parse("pipeline.yaml", []byte(yaml))
		if err != nil {
			fmt.Println(err)
			return
		}
		var rep *pipeline.Report
		err = pipeline.Run(context.Background(), spec,
			pipeline.WithLogger(slog.New(slog.DiscardHandler)),
			pipeline.WithReport(func(r *pipeline.Report) { rep = r }))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("run %d: read %d, skipped %v, wrote %d\n", run, rep.Sources[0].Read, rep.Sources[0].Skipped, rep.Sinks[0].Written)
	}

	// The two files' batches reach the sink through different workers, in
	// either order, and in one file or two: the lines are sorted here.
	files, _ := filepath.Glob(filepath.Join(dir, "out", "*.jsonl"))
	var lines []string
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines = append(lines, strings.Fields(string(data))...)
	}
	slices.Sort(lines)
	fmt.Println("out:", strings.Join(lines, " "))
	state, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	fmt.Println("state:", string(state))
	// Output:
	// run 1: read 3, skipped map[blank:1], wrote 3
	// run 2: read 0, skipped map[], wrote 0
	// out: {"id":1} {"id":2} {"id":3}
	// state: {"positions":{"a.ndjson":19,"b.ndjson":9}}
}
