package jsonlsink_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/examples/connectors/jsonlsink"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
)

// lines returns the lines of the visible files in dir, in name order: what
// a reader of the output sees.
func lines(t *testing.T, dir string) [][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			out = append(out, []byte(sc.Text()))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The sink passes the shared suite, the crash check included: Reopen builds
// a new sink over the directory the abandoned one wrote to.
func TestConformance(t *testing.T) {
	dirs := map[connector.Sink]string{}
	build := func(t *testing.T, dir string) connector.Sink {
		c := jsonlsink.NewConfig()
		c.Dir = dir
		s, err := jsonlsink.New("out", c)
		if err != nil {
			t.Fatal(err)
		}
		dirs[s] = dir
		return s
	}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New:        func(t *testing.T) connector.Sink { return build(t, filepath.Join(t.TempDir(), "out")) },
		Count:      func(t *testing.T, s connector.Sink) int { return len(lines(t, dirs[s])) },
		Written:    func(t *testing.T, s connector.Sink) [][]byte { return lines(t, dirs[s]) },
		Reopen:     func(t *testing.T, s connector.Sink) connector.Sink { return build(t, dirs[s]) },
		Unwritable: func() record.Record { return record.New([]byte(`{"n":`)) },
	})
}
