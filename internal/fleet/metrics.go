package fleet

import (
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/weir-etl/weir/pipeline"
)

// processWide are the families every run's registry has that describe the
// process, not the pipeline: exported once, from the fleet's own registry.
func processWide(name string) bool {
	return name == "weir_build_info" || strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_")
}

// key identifies one series of a family by its labels.
func key(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName())
		b.WriteByte('=')
		b.WriteString(l.GetValue())
		b.WriteByte(',')
	}
	return b.String()
}

// carries reports whether a family's values are summed across runs: the
// counters and histograms (a count since the process started); gauges
// describe the running run alone.
func carries(t dto.MetricType) bool {
	return t == dto.MetricType_COUNTER || t == dto.MetricType_HISTOGRAM
}

// carry adds the finished run's counters and histograms into p.carried and
// forgets the run's registry. p.mu is held.
func (p *pipe) carry() {
	if p.gather == nil {
		return
	}
	fams, _ := p.gather.Gather()
	p.gather = nil
	for _, fam := range fams {
		if processWide(fam.GetName()) || !carries(fam.GetType()) {
			continue
		}
		have, ok := p.carried[fam.GetName()]
		if !ok {
			have = &dto.MetricFamily{Name: fam.Name, Help: fam.Help, Type: fam.Type}
			p.carried[fam.GetName()] = have
		}
		addFamily(have, fam)
	}
}

// addFamily adds every series of src into dst, by labels.
func addFamily(dst, src *dto.MetricFamily) {
	idx := map[string]*dto.Metric{}
	for _, m := range dst.Metric {
		idx[key(m)] = m
	}
	for _, m := range src.GetMetric() {
		d, ok := idx[key(m)]
		if !ok {
			d = proto.Clone(m).(*dto.Metric)
			dst.Metric = append(dst.Metric, d)
			idx[key(m)] = d
			continue
		}
		addMetric(d, m)
	}
}

func addMetric(d, m *dto.Metric) {
	if c := m.GetCounter(); c != nil && d.Counter != nil {
		d.Counter.Value = proto.Float64(d.Counter.GetValue() + c.GetValue())
	}
	if h := m.GetHistogram(); h != nil && d.Histogram != nil {
		dh := d.Histogram
		dh.SampleCount = proto.Uint64(dh.GetSampleCount() + h.GetSampleCount())
		dh.SampleSum = proto.Float64(dh.GetSampleSum() + h.GetSampleSum())
		for i, b := range h.GetBucket() {
			if i < len(dh.Bucket) && dh.Bucket[i].GetUpperBound() == b.GetUpperBound() {
				dh.Bucket[i].CumulativeCount = proto.Uint64(dh.Bucket[i].GetCumulativeCount() + b.GetCumulativeCount())
			}
		}
	}
}

// families returns the pipeline's families since the process started: the
// carried counters plus the running run's, its gauges as they are. p.mu is
// held.
func (p *pipe) families() []*dto.MetricFamily {
	out := map[string]*dto.MetricFamily{}
	for n, fam := range p.carried {
		out[n] = proto.Clone(fam).(*dto.MetricFamily)
	}
	if p.gather != nil {
		fams, _ := p.gather.Gather()
		for _, fam := range fams {
			if processWide(fam.GetName()) {
				continue
			}
			have, ok := out[fam.GetName()]
			if !ok || !carries(fam.GetType()) {
				out[fam.GetName()] = fam
				continue
			}
			addFamily(have, fam)
		}
	}
	list := make([]*dto.MetricFamily, 0, len(out))
	for _, fam := range out {
		list = append(list, fam)
	}
	return list
}

// countsLocked sums the pipeline's record counts from its families: read
// is what its sources emitted, written what its sinks made durable.
func (p *pipe) countsLocked() Counts {
	var c Counts
	sources, sinks := map[string]bool{}, map[string]bool{}
	for _, s := range p.spec.Sources {
		sources[s.Name] = true
	}
	for _, s := range p.spec.Sinks {
		sinks[s.Name] = true
	}
	transforms := map[string]bool{}
	for _, t := range p.spec.Transforms {
		transforms[t.Name] = true
	}
	in := map[string]float64{}
	out := map[string]float64{}
	for _, fam := range p.families() {
		for _, m := range fam.GetMetric() {
			comp := label(m, "component")
			v := m.GetCounter().GetValue()
			switch fam.GetName() {
			case "weir_records_out_total":
				out[comp] += v
				switch {
				case sources[comp]:
					c.Read += int64(v)
				case sinks[comp]:
					c.Written += int64(v)
				}
			case "weir_records_in_total":
				in[comp] += v
			case "weir_records_rejected_total":
				c.Errors += int64(v)
				if transforms[comp] {
					out[comp] += v // a rejection is not a drop
				}
			}
		}
	}
	for _, t := range p.spec.Transforms {
		if t.Type == "filter" {
			c.Dropped += int64(in[t.Name] - out[t.Name])
		}
	}
	return c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// metricsHandler serves every pipeline's metrics since the process started,
// each series with a pipeline label, and the process's own once.
func (f *Fleet) metricsHandler() http.Handler {
	own := prometheus.NewRegistry()
	own.MustRegister(f.reloads, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		merged := map[string]*dto.MetricFamily{}
		f.mu.Lock()
		ps := make([]*pipe, 0, len(f.pipes)+len(f.removed))
		for _, p := range f.pipes {
			ps = append(ps, p)
		}
		ps = append(ps, f.removed...)
		f.mu.Unlock()
		for _, p := range ps {
			p.mu.Lock()
			fams := p.families()
			p.mu.Unlock()
			for _, fam := range fams {
				have, ok := merged[fam.GetName()]
				if !ok {
					have = &dto.MetricFamily{Name: fam.Name, Help: fam.Help, Type: fam.Type}
					merged[fam.GetName()] = have
				}
				for _, m := range fam.GetMetric() {
					m = proto.Clone(m).(*dto.Metric)
					m.Label = append([]*dto.LabelPair{{Name: proto.String("pipeline"), Value: proto.String(p.name)}}, m.Label...)
					have.Metric = append(have.Metric, m)
				}
			}
		}
		ownFams, _ := own.Gather()
		for _, fam := range ownFams {
			merged[fam.GetName()] = fam
		}
		if info := buildInfo(ps); info != nil {
			merged[info.GetName()] = info
		}
		names := make([]string, 0, len(merged))
		for n := range merged {
			names = append(names, n)
		}
		sort.Strings(names)
		format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, n := range names {
			fam := merged[n]
			sort.SliceStable(fam.Metric, func(i, j int) bool { return key(fam.Metric[i]) < key(fam.Metric[j]) })
			_ = enc.Encode(fam)
		}
	})
}

// buildInfo takes weir_build_info from a running run, if any.
func buildInfo(ps []*pipe) *dto.MetricFamily {
	for _, p := range ps {
		p.mu.Lock()
		g := p.gather
		p.mu.Unlock()
		if g == nil {
			continue
		}
		fams, _ := g.Gather()
		if i := slices.IndexFunc(fams, func(f *dto.MetricFamily) bool { return f.GetName() == "weir_build_info" }); i >= 0 {
			return fams[i]
		}
	}
	return nil
}

// Totals sums the Reports of a pipeline's runs, component by component:
// records read, in, out and written since the first run; the committed
// positions and where output is are the last run's. The zero value is
// empty.
type Totals struct{ r *pipeline.Report }

// Add adds the Report of one more run.
func (t *Totals) Add(r *pipeline.Report) {
	if t.r == nil {
		c := *r
		c.Sources = slices.Clone(r.Sources)
		c.Transforms = slices.Clone(r.Transforms)
		c.Sinks = slices.Clone(r.Sinks)
		t.r = &c
		return
	}
	prev := t.r
	next := &pipeline.Report{Elapsed: prev.Elapsed + r.Elapsed}
	for _, s := range r.Sources {
		if i := slices.IndexFunc(prev.Sources, func(o pipeline.SourceReport) bool { return o.Name == s.Name }); i >= 0 {
			o := prev.Sources[i]
			s.Read += o.Read
			s.Skipped = sumMaps(o.Skipped, s.Skipped)
			s.Unread = sumMaps(o.Unread, s.Unread)
		}
		next.Sources = append(next.Sources, s)
	}
	for _, s := range r.Transforms {
		if i := slices.IndexFunc(prev.Transforms, func(o pipeline.TransformReport) bool { return o.Name == s.Name }); i >= 0 {
			o := prev.Transforms[i]
			s.In, s.Out, s.Rejected = s.In+o.In, s.Out+o.Out, s.Rejected+o.Rejected
		}
		next.Transforms = append(next.Transforms, s)
	}
	for _, s := range r.Sinks {
		if i := slices.IndexFunc(prev.Sinks, func(o pipeline.SinkReport) bool { return o.Name == s.Name }); i >= 0 {
			o := prev.Sinks[i]
			s.Written, s.Failed, s.Skipped = s.Written+o.Written, s.Failed+o.Failed, s.Skipped+o.Skipped
		}
		next.Sinks = append(next.Sinks, s)
	}
	t.r = next
}

// Report returns the sum of every run's Report, or nil before one.
func (t *Totals) Report() *pipeline.Report {
	if t.r == nil {
		return nil
	}
	c := *t.r
	return &c
}

func sumMaps(a, b map[string]int64) map[string]int64 {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := map[string]int64{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
