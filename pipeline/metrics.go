package pipeline

import (
	"runtime/debug"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// metrics are the runtime's Prometheus metrics, on a registry of their own so
// that several pipelines in one process (tests, embedders) do not collide.
// Counters are added per batch or chunk, never per record. Gauges carry their
// unit in their name (position, bytes, seconds); every counter of a known
// component exists from the start, at 0, so that a rate is defined before
// the first event.
type metrics struct {
	reg          *prometheus.Registry
	recordsIn    *tallyVec              // component
	recordsOut   *tallyVec              // component
	rejected     *tallyVec              // component
	issued       *prometheus.CounterVec // source
	resolved     *prometheus.CounterVec // source, status
	stale        *prometheus.CounterVec // source
	leaked       *prometheus.CounterVec // source
	watermark    *prometheus.GaugeVec   // source, partition
	committed    *prometheus.GaugeVec   // source, partition
	stalled      *prometheus.GaugeVec   // source, partition
	commitTime   *prometheus.HistogramVec
	commitErrors *tallyVec
	inflightB    *prometheus.GaugeVec // source
	inflightBy   *prometheus.GaugeVec // source
	writeErrors  *tallyVec
	flushTime    *prometheus.HistogramVec // sink
	rewinds      *prometheus.CounterVec
	skipped      *prometheus.CounterVec // source, reason
	unread       *prometheus.CounterVec // source, reason
	sinkSkipped  *prometheus.CounterVec // sink
	alreadyHeld  *prometheus.CounterVec // sink, for exactly-once sinks only
	sinkFailures *prometheus.GaugeVec   // sink
}

func newMetrics() *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	tallies := func(name, help string, label string) *tallyVec {
		return &tallyVec{CounterVec: counter(name, help, label), by: map[string]*tally{}}
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		reg:          prometheus.NewRegistry(),
		recordsIn:    tallies("weir_records_in_total", "Records received by a component.", "component"),
		recordsOut:   tallies("weir_records_out_total", "Records emitted by a component (a sink: durably flushed).", "component"),
		rejected:     tallies("weir_records_rejected_total", "Records a transform or sink failed on for good (then routed by the failure policy).", "component"),
		issued:       counter("weir_batches_issued_total", "Poll batches issued an acknowledgement reference.", "source"),
		resolved:     counter("weir_batches_resolved_total", "Batch resolutions applied to a current epoch, by status.", "source", "status"),
		stale:        counter("weir_acks_stale_total", "Batch resolutions of an ended epoch, discarded.", "source"),
		leaked:       counter("weir_acks_leaked_total", "Batches resolved as failed because a reference was dropped without release.", "source"),
		watermark:    gauge("weir_partition_watermark_position", "Position below which everything is delivered.", "source", "partition"),
		committed:    gauge("weir_partition_committed_position", "Last position the source committed.", "source", "partition"),
		stalled:      gauge("weir_partition_stalled_seconds", "How long the partition's watermark has not moved while data was pending (0: not stalled).", "source", "partition"),
		commitTime:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "weir_commit_duration_seconds", Help: "Latency of Source.Commit.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"source"}),
		commitErrors: tallies("weir_commit_errors_total", "Failed Source.Commit calls (retried with backoff).", "source"),
		inflightB:    gauge("weir_inflight_batches", "Batches issued and not yet resolved.", "source"),
		inflightBy:   gauge("weir_inflight_bytes", "Estimated bytes of batches issued and not yet resolved.", "source"),
		writeErrors:  tallies("weir_sink_errors_total", "Failed sink writes or flushes, before retries.", "sink"),
		flushTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "weir_sink_flush_duration_seconds",
			Help:    "Time from the start of a group's flush (Flush, or Seal for a sink that seals) until it was durable; failed flushes are not counted.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"sink"}),
		rewinds:      counter("weir_rewinds_total", "Partitions rewound to their watermark to replay failed data.", "source"),
		skipped:      counter("weir_source_skipped_records_total", "Input records a source passed over on purpose (on_invalid: skip), by reason.", "source", "reason"),
		unread:       counter("weir_source_unread_bytes_total", "Input bytes a source will never read (a file gone before it was read to its end), by reason.", "source", "reason"),
		sinkSkipped:  counter("weir_sink_skipped_records_total", "Replayed records a sink already held durably, released without being written again.", "sink"),
		alreadyHeld:  counter("weir_sink_already_held_total", "For an exactly-once sink (connector.PositionKeeper), the records its stored positions or its own groups already held, released without being written again (after a restart, a rewind or a rebalance).", "sink"),
		sinkFailures: gauge("weir_sink_consecutive_failures", "Failed writes, flushes or persists of a sink since its last successful flush.", "sink"),
	}
	version, revision := buildVersion()
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_build_info", Help: "The running weir's version, VCS revision and Go version (value 1).",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion()}})
	info.Set(1)
	m.reg.MustRegister(m.recordsIn, m.recordsOut, m.rejected, m.issued, m.resolved, m.stale, m.leaked,
		m.watermark, m.committed, m.stalled, m.commitTime, m.commitErrors, m.inflightB, m.inflightBy,
		m.writeErrors, m.flushTime, m.rewinds, m.skipped, m.unread, m.sinkSkipped, m.alreadyHeld, m.sinkFailures, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// known creates every counter of g's components at 0.
func (m *metrics) known(g *graph) {
	for _, ss := range g.spec.Sources {
		n := ss.Name
		m.recordsOut.tally(n)
		m.issued.WithLabelValues(n)
		for _, st := range []checkpoint.AckStatus{checkpoint.Delivered, checkpoint.Failed, checkpoint.Rejected} {
			m.resolved.WithLabelValues(n, st.String())
		}
		m.stale.WithLabelValues(n)
		m.leaked.WithLabelValues(n)
		m.commitErrors.tally(n)
		m.rewinds.WithLabelValues(n)
		m.inflightB.WithLabelValues(n)
		m.inflightBy.WithLabelValues(n)
	}
	for _, ct := range g.transforms {
		m.recordsIn.tally(ct.name)
		m.recordsOut.tally(ct.name)
		m.rejected.tally(ct.name)
	}
	for _, sk := range g.sinks {
		m.recordsIn.tally(sk.Name)
		m.recordsOut.tally(sk.Name)
		m.rejected.tally(sk.Name)
		m.writeErrors.tally(sk.Name)
		m.sinkSkipped.WithLabelValues(sk.Name)
		if exactlyOnce(sk) {
			m.alreadyHeld.WithLabelValues(sk.Name)
		}
		m.sinkFailures.WithLabelValues(sk.Name)
	}
}

// buildVersion returns the main module's version and VCS revision from the
// build info ("devel" and "unknown" when the binary carries none).
func buildVersion() (version, revision string) {
	version, revision = "devel", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	return
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}

// drained records one Drain's statistics for source src.
func (m *metrics) drained(src string, st checkpoint.DrainStats) {
	if st.Messages == 0 {
		return
	}
	for s, n := range st.Statuses {
		if n > 0 {
			m.resolved.WithLabelValues(src, checkpoint.AckStatus(s).String()).Add(float64(n))
		}
	}
	if n := st.Outcome(checkpoint.Stale); n > 0 {
		m.stale.WithLabelValues(src).Add(float64(n))
	}
	if st.Leaked > 0 {
		m.leaked.WithLabelValues(src).Add(float64(st.Leaked))
	}
}

// lagPartitionCap is the most partitions of one source whose lag is
// exported with a partition label. A source that knows the ends of more
// exports only its total (weir_source_lag_position) and how many partitions
// it sums (weir_source_lag_partitions): a series per partition of a topic of
// thousands would swamp the scraper, and labelling only the worst hundred
// would make series come and go with every scrape.
const lagPartitionCap = 100

var (
	lagDesc = prometheus.NewDesc("weir_partition_lag_position",
		"How far the partition's committed position is behind its end, in the source's unit (Kafka: records; a source that implements connector.LagReporter). Exported while the source has at most 100 such partitions.",
		[]string{"source", "partition"}, nil)
	sourceLagDesc = prometheus.NewDesc("weir_source_lag_position",
		"The sum of the lags of the source's partitions whose end it knows (connector.LagReporter), in the source's unit.",
		[]string{"source"}, nil)
	sourceLagPartsDesc = prometheus.NewDesc("weir_source_lag_partitions",
		"How many of the source's partitions weir_source_lag_position sums; above 100, weir_partition_lag_position is not exported for the source.",
		[]string{"source"}, nil)
)

// lagCollector exports, at each scrape, the lag of the partitions of every
// source that reports its ends: the end it reports minus the position last
// committed. Nothing is computed between scrapes, and nothing per record.
type lagCollector struct{ rt *runtime }

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- sourceLagDesc
	ch <- sourceLagPartsDesc
}

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.rt.sources {
		lr, ok := s.src.(connector.LagReporter)
		if !ok {
			continue
		}
		lags := s.lags(lr.Ends())
		var total int64
		for _, l := range lags {
			total += l.lag
		}
		ch <- prometheus.MustNewConstMetric(sourceLagDesc, prometheus.GaugeValue, float64(total), s.spec.Name)
		ch <- prometheus.MustNewConstMetric(sourceLagPartsDesc, prometheus.GaugeValue, float64(len(lags)), s.spec.Name)
		if len(lags) > lagPartitionCap {
			continue
		}
		for _, l := range lags {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(l.lag), s.spec.Name, l.name)
		}
	}
}

type partLag struct {
	name string
	lag  int64
}

// lags returns the lag of every assigned partition that ends names and
// that has a committed position: the end minus that position, 0 if the end
// is behind it.
func (s *sourceRunner) lags(ends map[string]connector.Position) []partLag {
	if len(ends) == 0 {
		return nil
	}
	ids := make([]checkpoint.Partition, 0, len(ends))
	out := make([]partLag, 0, len(ends))
	s.hostMu.Lock()
	for name, end := range ends {
		if id, ok := s.host.byName[name]; ok {
			ids = append(ids, id)
			out = append(out, partLag{name: name, lag: int64(end)})
		}
	}
	s.hostMu.Unlock()
	kept := out[:0]
	for i, id := range ids {
		if c := s.committedOf(id); c >= 0 {
			kept = append(kept, partLag{name: out[i].name, lag: max(out[i].lag-int64(c), 0)})
		}
	}
	return kept
}

// tallyVec is a counter vector of one label whose count for every known
// component the runtime also keeps itself, in an atomic beside the
// Prometheus counter: the read model reads its own totals (total), never
// Prometheus's. The tallies are made by known, before any goroutine
// starts, and the map is never written after.
type tallyVec struct {
	*prometheus.CounterVec
	by map[string]*tally
}

// tally is a Prometheus counter with the runtime's own count of it.
type tally struct {
	prometheus.Counter
	n atomic.Int64
}

func (t *tally) Inc()          { t.n.Add(1); t.Counter.Inc() }
func (t *tally) Add(v float64) { t.n.Add(int64(v)); t.Counter.Add(v) }

// tally makes name's tally, at 0. Only known calls it.
func (v *tallyVec) tally(name string) {
	if v.by[name] == nil {
		v.by[name] = &tally{Counter: v.CounterVec.WithLabelValues(name)}
	}
}

// WithLabelValues returns the counter of a component, counting in its
// tally when it is a known one.
func (v *tallyVec) WithLabelValues(lvs ...string) prometheus.Counter {
	if len(lvs) == 1 {
		if t := v.by[lvs[0]]; t != nil {
			return t
		}
	}
	return v.CounterVec.WithLabelValues(lvs...)
}

// total is the count of component name so far (0 for an unknown one).
func (v *tallyVec) total(name string) int64 {
	if t := v.by[name]; t != nil {
		return t.n.Load()
	}
	return 0
}
