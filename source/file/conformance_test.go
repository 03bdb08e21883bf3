package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/source/file"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	var data strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&data, "{\"n\":%d}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.ndjson"), []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Source {
			c := file.NewConfig()
			c.Paths = []string{filepath.Join(dir, "*.ndjson")}
			// One state directory per subtest: each starts from the same input.
			c.DataDir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
			c.BatchSize = 5
			// Tail mode keeps the source running while the runtime subtest
			// waits for its commits.
			c.Mode, c.PollInterval = "tail", time.Millisecond
			s, err := file.New("in", c)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	})
}
