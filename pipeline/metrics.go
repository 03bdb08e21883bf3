package pipeline

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/weir-etl/weir/checkpoint"
)

// metrics are the runtime's Prometheus metrics, on a registry of their own so
// that several pipelines in one process (tests, embedders) do not collide.
// Counters are added per batch or chunk, never per record. Gauges carry their
// unit in their name (position, bytes, seconds); every counter of a known
// component exists from the start, at 0, so that a rate is defined before
// the first event.
type metrics struct {
	reg          *prometheus.Registry
	recordsIn    *prometheus.CounterVec // component
	recordsOut   *prometheus.CounterVec // component
	rejected     *prometheus.CounterVec // component
	issued       *prometheus.CounterVec // source
	resolved     *prometheus.CounterVec // source, status
	stale        *prometheus.CounterVec // source
	leaked       *prometheus.CounterVec // source
	watermark    *prometheus.GaugeVec   // source, partition
	committed    *prometheus.GaugeVec   // source, partition
	stalled      *prometheus.GaugeVec   // source, partition
	commitTime   *prometheus.HistogramVec
	commitErrors *prometheus.CounterVec
	inflightB    *prometheus.GaugeVec // source
	inflightBy   *prometheus.GaugeVec // source
	writeErrors  *prometheus.CounterVec
	flushTime    *prometheus.HistogramVec // sink
	rewinds      *prometheus.CounterVec
	skipped      *prometheus.CounterVec // source, reason
	unread       *prometheus.CounterVec // source, reason
	sinkSkipped  *prometheus.CounterVec // sink
	sinkFailures *prometheus.GaugeVec   // sink
}

func newMetrics() *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		reg:          prometheus.NewRegistry(),
		recordsIn:    counter("weir_records_in_total", "Records received by a component.", "component"),
		recordsOut:   counter("weir_records_out_total", "Records emitted by a component (a sink: durably flushed).", "component"),
		rejected:     counter("weir_records_rejected_total", "Records a transform or sink failed on for good (then routed by the failure policy).", "component"),
		issued:       counter("weir_batches_issued_total", "Poll batches issued an acknowledgement reference.", "source"),
		resolved:     counter("weir_batches_resolved_total", "Batch resolutions applied to a current epoch, by status.", "source", "status"),
		stale:        counter("weir_acks_stale_total", "Batch resolutions of an ended epoch, discarded.", "source"),
		leaked:       counter("weir_acks_leaked_total", "Batches resolved as failed because a reference was dropped without release.", "source"),
		watermark:    gauge("weir_partition_watermark_position", "Position below which everything is delivered.", "source", "partition"),
		committed:    gauge("weir_partition_committed_position", "Last position the source committed.", "source", "partition"),
		stalled:      gauge("weir_partition_stalled_seconds", "How long the partition's watermark has not moved while data was pending (0: not stalled).", "source", "partition"),
		commitTime:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "weir_commit_duration_seconds", Help: "Latency of Source.Commit.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"source"}),
		commitErrors: counter("weir_commit_errors_total", "Failed Source.Commit calls (retried with backoff).", "source"),
		inflightB:    gauge("weir_inflight_batches", "Batches issued and not yet resolved.", "source"),
		inflightBy:   gauge("weir_inflight_bytes", "Estimated bytes of batches issued and not yet resolved.", "source"),
		writeErrors:  counter("weir_sink_errors_total", "Failed sink writes or flushes, before retries.", "sink"),
		flushTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "weir_sink_flush_duration_seconds",
			Help:    "Time from the start of a group's flush (Flush, or Seal for a sink that seals) until it was durable; failed flushes are not counted.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"sink"}),
		rewinds:      counter("weir_rewinds_total", "Partitions rewound to their watermark to replay failed data.", "source"),
		skipped:      counter("weir_source_skipped_records_total", "Input records a source passed over on purpose (on_invalid: skip), by reason.", "source", "reason"),
		unread:       counter("weir_source_unread_bytes_total", "Input bytes a source will never read (a file gone before it was read to its end), by reason.", "source", "reason"),
		sinkSkipped:  counter("weir_sink_skipped_records_total", "Replayed records a sink already held durably, released without being written again.", "sink"),
		sinkFailures: gauge("weir_sink_consecutive_failures", "Failed writes, flushes or persists of a sink since its last successful flush.", "sink"),
	}
	version, revision := buildVersion()
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_build_info", Help: "The running weir's version, VCS revision and Go version (value 1).",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion()}})
	info.Set(1)
	m.reg.MustRegister(m.recordsIn, m.recordsOut, m.rejected, m.issued, m.resolved, m.stale, m.leaked,
		m.watermark, m.committed, m.stalled, m.commitTime, m.commitErrors, m.inflightB, m.inflightBy,
		m.writeErrors, m.flushTime, m.rewinds, m.skipped, m.unread, m.sinkSkipped, m.sinkFailures, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// known creates every counter of g's components at 0.
func (m *metrics) known(g *graph) {
	for _, ss := range g.spec.Sources {
		n := ss.Name
		m.recordsOut.WithLabelValues(n)
		m.issued.WithLabelValues(n)
		for _, st := range []checkpoint.AckStatus{checkpoint.Delivered, checkpoint.Failed, checkpoint.Rejected} {
			m.resolved.WithLabelValues(n, st.String())
		}
		m.stale.WithLabelValues(n)
		m.leaked.WithLabelValues(n)
		m.commitErrors.WithLabelValues(n)
		m.rewinds.WithLabelValues(n)
		m.inflightB.WithLabelValues(n)
		m.inflightBy.WithLabelValues(n)
	}
	for _, ct := range g.transforms {
		m.recordsIn.WithLabelValues(ct.name)
		m.recordsOut.WithLabelValues(ct.name)
		m.rejected.WithLabelValues(ct.name)
	}
	for _, sk := range g.sinks {
		m.recordsIn.WithLabelValues(sk.Name)
		m.recordsOut.WithLabelValues(sk.Name)
		m.rejected.WithLabelValues(sk.Name)
		m.writeErrors.WithLabelValues(sk.Name)
		m.sinkSkipped.WithLabelValues(sk.Name)
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
