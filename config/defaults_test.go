package config

import (
	"testing"
	"time"

	"github.com/weir-etl/weir/pipeline"
)

// TestDefaultsDeclaredOnce checks that what the loader puts in the Spec for
// settings a file leaves out is what pipeline's defaults give for the same
// settings left at zero: the defaults are pipeline's, declared once.
func TestDefaultsDeclaredOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		yaml string
		// zero is the same pipeline in Go, with what the file leaves out at zero.
		zero pipeline.Spec
	}{
		{"empty sections", `
sources:
  in: { type: test_source, path: /in }
sinks:
  out: { type: test_sink, inputs: [in], batch: {}, retry: {} }
checkpoint: {}
metrics: {}
`, pipeline.Spec{Sources: []pipeline.SourceSpec{{}}, Sinks: []pipeline.SinkSpec{{}}}},
		{"sections left out", `
sources:
  in: { type: test_source, path: /in }
sinks:
  out: { type: test_sink, inputs: [in] }
`, pipeline.Spec{Sources: []pipeline.SourceSpec{{}}, Sinks: []pipeline.SinkSpec{{}}}},
		// A default never contradicts what the file sets.
		{"initial_backoff above the default max_backoff", `
sources:
  in: { type: test_source, path: /in }
sinks:
  out: { type: test_sink, inputs: [in], retry: { initial_backoff: 20s } }
`, pipeline.Spec{Sources: []pipeline.SourceSpec{{}}, Sinks: []pipeline.SinkSpec{{Retry: pipeline.RetrySettings{InitialBackoff: 20 * time.Second}}}}},
		{"max_backoff below the default initial_backoff", `
sources:
  in: { type: test_source, path: /in }
sinks:
  out: { type: test_sink, inputs: [in], retry: { max_backoff: 10ms } }
`, pipeline.Spec{Sources: []pipeline.SourceSpec{{}}, Sinks: []pipeline.SinkSpec{{Retry: pipeline.RetrySettings{MaxBackoff: 10 * time.Millisecond}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parse("p.yaml", []byte(c.yaml), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			want := c.zero
			pipeline.FillDefaults(&want)
			if g, w := got.Sources[0].MaxInFlightBatches, want.Sources[0].MaxInFlightBatches; g != w {
				t.Errorf("max_in_flight_batches %d, want %d", g, w)
			}
			if g, w := got.Sources[0].MaxInFlightBytes, want.Sources[0].MaxInFlightBytes; g != w {
				t.Errorf("max_in_flight_bytes %d, want %d", g, w)
			}
			if g, w := got.Sinks[0].Batch, want.Sinks[0].Batch; g != w {
				t.Errorf("batch %+v, want %+v", g, w)
			}
			if g, w := got.Sinks[0].Retry, want.Sinks[0].Retry; g != w {
				t.Errorf("retry %+v, want %+v", g, w)
			}
			if got.Checkpoint != want.Checkpoint {
				t.Errorf("checkpoint %+v, want %+v", got.Checkpoint, want.Checkpoint)
			}
			// The one setting whose file default differs from its zero value:
			// a file serves metrics unless it says off.
			if got.Metrics.Address != pipeline.DefaultMetricsAddress {
				t.Errorf("metrics address %q, want %q", got.Metrics.Address, pipeline.DefaultMetricsAddress)
			}
		})
	}
}
