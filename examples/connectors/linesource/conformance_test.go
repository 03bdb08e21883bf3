package linesource_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/examples/connectors/linesource"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
)

// The source passes the shared suite: three files of 300 lines each, a blank
// line every tenth, in batches of five lines.
func TestConformance(t *testing.T) {
	in := t.TempDir()
	for f := range 3 {
		var data strings.Builder
		for i := range 300 {
			if i%10 == 9 {
				data.WriteString("\n")
				continue
			}
			fmt.Fprintf(&data, "{\"file\":%d,\"n\":%d}\n", f, i)
		}
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("in-%d.ndjson", f)), []byte(data.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	states := t.TempDir()
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Source {
			c := linesource.NewConfig()
			c.Dir = in
			// One state file per subtest: each starts from the start of the
			// input, and its second instance resumes from its first's commits.
			c.StateFile = filepath.Join(states, strings.ReplaceAll(t.Name(), "/", "_")+".json")
			c.BatchSize = 5
			s, err := linesource.New("in", c)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}
