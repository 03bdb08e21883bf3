package iceberg

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
)

// The shared sink suite on a SQLite catalog and a local warehouse: flushed
// groups are in the table and aborted ones never; a sink abandoned between
// Write and Flush leaves nothing of the group; positions are stored with
// their group's snapshot; and through the runtime, with injected failures,
// every record lands. The table keeps each record value as written (a
// string column with value: true) and the field n in a long column, so
// that a record whose n is not an integer cannot be written.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	n := 0
	cfgs := map[connector.Sink]*Config{}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			n++
			cfg := sqliteConfig(dir, fmt.Sprintf("conf_%d", n),
				Column{Name: "doc", Value: true, Required: true}, Column{Name: "n", Type: "long"})
			s := newSink(t, cfg)
			cfgs[s] = cfg
			// An instance the suite abandons, as a crashed process, has
			// its catalog connection closed when the check ends, as the
			// dead process's kernel would close it (goleak, main_test.go).
			t.Cleanup(func() { s.Close(context.Background()) })
			return s
		},
		Count: func(t *testing.T, s connector.Sink) int {
			return len(columnValues(t, s.(*Sink), "doc"))
		},
		Written: func(t *testing.T, s connector.Sink) [][]byte {
			var out [][]byte
			for _, v := range columnValues(t, s.(*Sink), "doc") {
				out = append(out, []byte(v))
			}
			return out
		},
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			s2 := newSink(t, cfgs[s])
			cfgs[s2] = cfgs[s]
			return s2
		},
		Unwritable: func() record.Record { return record.New([]byte(`{"n":"twelve"}`)) },
	})
}
