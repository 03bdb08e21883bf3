package generate_test

import (
	"math"
	"slices"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/source/generate"
)

func TestConformance(t *testing.T) {
	for _, parts := range []int{1, 3} {
		offsets := new(generate.Offsets)
		conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{}, New: func(t *testing.T) connector.Source {
			s, err := generate.New("gen", generate.Config{Count: 0, Partitions: parts, BatchSize: 7, Template: `{"n":{{id}},"s":{{seq}},"fixed":"x"}`, Offsets: offsets})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}})
	}
}

// TestValidateNamesEveryOption checks that Validate reports every bad option
// at once, each as a field error naming the option.
func TestValidateNamesEveryOption(t *testing.T) {
	c := generate.NewConfig()
	c.Count, c.Rate, c.BatchSize, c.Partitions, c.Template = -1, math.NaN(), 0, 1<<16+1, ""
	fields, other := connector.FieldErrors(c.Validate())
	var got []string
	for _, fe := range fields {
		got = append(got, fe.Field)
	}
	if want := []string{"count", "rate", "batch_size", "partitions", "template"}; !slices.Equal(got, want) || other != nil {
		t.Fatalf("field errors for %v, others %v; want one for each of %v", got, other, want)
	}
	if err := generate.NewConfig().Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	c = generate.NewConfig()
	c.BatchSize = 0
	if _, err := generate.New("gen", *c); err == nil || err.Error() != "generate: batch_size: must be more than 0" {
		t.Fatalf("New: got %v", err)
	}
}
