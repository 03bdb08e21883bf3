package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weir-etl/weir/checkpoint"
)

// metrics are the runtime's Prometheus metrics, on a registry of their own so
// that several pipelines in one process (tests, embedders) do not collide.
// Counters are added per batch or chunk, never per record.
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
	commitTime   *prometheus.HistogramVec
	commitErrors *prometheus.CounterVec
	inflightB    *prometheus.GaugeVec // source
	inflightBy   *prometheus.GaugeVec // source
	writeErrors  *prometheus.CounterVec
	flushTime    *prometheus.HistogramVec // sink
	rewinds      *prometheus.CounterVec
	skipped      *prometheus.CounterVec // source, reason
	sinkSkipped  *prometheus.CounterVec // sink
	unread       *prometheus.CounterVec // source, reason
}

func newMetrics() *metrics {
	m := &metrics{
		reg:          prometheus.NewRegistry(),
		recordsIn:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_records_in_total", Help: "Records received by a component."}, []string{"component"}),
		recordsOut:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_records_out_total", Help: "Records emitted by a component (a sink: durably flushed)."}, []string{"component"}),
		rejected:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_records_rejected_total", Help: "Records a transform or sink failed on for good (then routed by the failure policy)."}, []string{"component"}),
		issued:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_batches_issued_total", Help: "Poll batches issued an acknowledgement reference."}, []string{"source"}),
		resolved:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_batches_resolved_total", Help: "Batch resolutions applied to a current epoch, by status."}, []string{"source", "status"}),
		stale:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_acks_stale_total", Help: "Batch resolutions of an ended epoch, discarded."}, []string{"source"}),
		leaked:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_acks_leaked_total", Help: "Batches resolved as failed because a reference was dropped without release."}, []string{"source"}),
		watermark:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "weir_partition_watermark", Help: "Position below which everything is delivered."}, []string{"source", "partition"}),
		committed:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "weir_partition_committed", Help: "Last position the source committed."}, []string{"source", "partition"}),
		commitTime:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "weir_commit_duration_seconds", Help: "Latency of Source.Commit.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"source"}),
		commitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_commit_errors_total", Help: "Failed Source.Commit calls (retried next interval)."}, []string{"source"}),
		inflightB:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "weir_inflight_batches", Help: "Batches issued and not yet resolved."}, []string{"source"}),
		inflightBy:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "weir_inflight_bytes", Help: "Estimated bytes of batches issued and not yet resolved."}, []string{"source"}),
		writeErrors:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_sink_errors_total", Help: "Failed sink writes or flushes, before retries."}, []string{"sink"}),
		flushTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "weir_sink_flush_duration_seconds",
			Help:    "Time from the start of a group's flush (Flush, or Seal for a sink that seals) until it was durable; failed flushes are not counted.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"sink"}),
		rewinds:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_rewinds_total", Help: "Partitions rewound to their watermark to replay failed data."}, []string{"source"}),
		skipped:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_source_skipped_records_total", Help: "Input records a source passed over on purpose (on_invalid: skip), by reason."}, []string{"source", "reason"}),
		sinkSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_sink_skipped_records_total", Help: "Replayed records a sink already held durably, released without being written again."}, []string{"sink"}),
		unread:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weir_source_unread_bytes_total", Help: "Input bytes a source will never read (a file gone before it was read to its end), by reason."}, []string{"source", "reason"}),
	}
	m.reg.MustRegister(m.recordsIn, m.recordsOut, m.rejected, m.issued, m.resolved, m.stale, m.leaked,
		m.watermark, m.committed, m.commitTime, m.commitErrors, m.inflightB, m.inflightBy,
		m.writeErrors, m.flushTime, m.rewinds, m.skipped, m.unread, m.sinkSkipped)
	return m
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
