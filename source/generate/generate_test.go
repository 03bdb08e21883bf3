package generate_test

import (
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/source/generate"
)

func TestConformance(t *testing.T) {
	for _, parts := range []int{1, 3} {
		offsets := new(generate.Offsets)
		conformance.TestSource(t, conformance.SourceHarness{New: func(t *testing.T) connector.Source {
			s, err := generate.New("gen", generate.Config{Count: 0, Partitions: parts, BatchSize: 7, Template: `{"n":{{id}},"s":{{seq}},"fixed":"x"}`, Offsets: offsets})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}})
	}
}

func TestValidateNamesTheOption(t *testing.T) {
	c := generate.NewConfig()
	c.BatchSize = 0
	if err := c.Validate(); err == nil || err.Error() != "generate: batch_size must be positive" {
		t.Fatalf("got %v", err)
	}
}
