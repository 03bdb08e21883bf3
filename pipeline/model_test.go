package pipeline

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/weir-etl/weir/pipeline/view"
)

// TestModelRatesShareNothing pins that building a model never changes the
// samples of the model before it: two readers building from the same
// published model at once each keep their own samples, and the rate is the
// change over the window's oldest sample.
func TestModelRatesShareNothing(t *testing.T) {
	rt := &runtime{}
	now := time.Now()
	rt.status.rateStart = now.Add(-3 * time.Second)
	samples := make([]rateSample, 2, 8) // room to append in place
	samples[0] = rateSample{at: now.Add(-2 * time.Second), in: []int64{0}, out: []int64{0}}
	samples[1] = rateSample{at: now.Add(-time.Second), in: []int64{5}, out: []int64{2}}
	prev := &published{m: &view.Model{}, samples: samples}

	m1 := &view.Model{Nodes: []view.StatusNode{{In: 20, Out: 10}}}
	s1 := rt.modelRates(m1, prev)
	m2 := &view.Model{Nodes: []view.StatusNode{{In: 40, Out: 30}}}
	s2 := rt.modelRates(m2, prev)

	if len(prev.samples) != 2 || prev.samples[1].in[0] != 5 {
		t.Fatalf("the previous samples changed: %+v", prev.samples)
	}
	if len(s1) != 3 || s1[2].in[0] != 20 || len(s2) != 3 || s2[2].in[0] != 40 {
		t.Fatalf("samples %+v and %+v, want each its own newest", s1, s2)
	}
	// About 20 records over about 2 seconds.
	if r := m1.Nodes[0].InPerSec; math.Abs(r-10) > 1 {
		t.Fatalf("in rate %v, want about 10/s", r)
	}
}

// TestTalliesCountBoth pins that a known component's counter counts in the
// runtime's own tally, which the read model reads, and in Prometheus, which
// /metrics exports, alike; an unknown label still reaches Prometheus.
func TestTalliesCountBoth(t *testing.T) {
	m := newMetrics()
	m.recordsOut.tally("in")
	c := m.recordsOut.WithLabelValues("in")
	c.Add(3)
	c.Inc()
	m.recordsOut.WithLabelValues("other").Inc()
	if got := m.recordsOut.total("in"); got != 4 {
		t.Fatalf("tally %d, want 4", got)
	}
	var d dto.Metric
	if err := m.recordsOut.CounterVec.WithLabelValues("in").Write(&d); err != nil || d.GetCounter().GetValue() != 4 {
		t.Fatalf("Prometheus counter %v (%v), want 4", d.GetCounter().GetValue(), err)
	}
	if err := m.recordsOut.CounterVec.WithLabelValues("other").Write(&d); err != nil || d.GetCounter().GetValue() != 1 || m.recordsOut.total("other") != 0 {
		t.Fatalf("unknown label: Prometheus %v, tally %d", d.GetCounter().GetValue(), m.recordsOut.total("other"))
	}
}
