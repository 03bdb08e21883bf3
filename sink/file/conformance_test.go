package file_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/sink/file"
)

func TestConformance(t *testing.T) {
	dirs := map[connector.Sink]string{}
	written := func(t *testing.T, s connector.Sink) [][]byte {
		var out [][]byte
		filepath.WalkDir(dirs[s], func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				out = append(out, []byte(sc.Text()))
			}
			return sc.Err()
		})
		return out
	}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			c := file.NewConfig()
			c.Path = filepath.Join(t.TempDir(), "out")
			s, err := file.New("out", c)
			if err != nil {
				t.Fatal(err)
			}
			dirs[s] = c.Path
			return s
		},
		Count:   func(t *testing.T, s connector.Sink) int { return len(written(t, s)) },
		Written: written,
	})
}
