package pipeline

import (
	"time"
)

// Defaults of the settings a Spec leaves at zero. They are declared here and
// nowhere else: the configuration loader fills them in through FillDefaults.
const (
	DefaultMaxInFlightBatches   = 1024
	DefaultMaxInFlightBytes     = 64 << 20
	DefaultBatchMaxRecords      = 10000
	DefaultBatchMaxBytes        = 8 << 20
	DefaultBatchMaxAge          = time.Second
	DefaultBatchOverlap         = 2
	DefaultRetryMaxAttempts     = 5
	DefaultRetryInitial         = 100 * time.Millisecond
	DefaultRetryMax             = 10 * time.Second
	DefaultRetryMaxElapsed      = time.Minute
	DefaultCommitInterval       = 5 * time.Second
	DefaultShutdownTimeout      = 30 * time.Second
	DefaultDrainTimeout         = 30 * time.Second
	DefaultStallWarning         = 60 * time.Second
	DefaultCommitFailureTimeout = 5 * time.Minute
	DefaultCommitTimeout        = 30 * time.Second
	DefaultGiveUpAfter          = 10 * time.Minute
	DefaultMetricsAddress       = "127.0.0.1:9464" // the command line's; a Spec's zero Address serves nothing
)

// DefaultBatchMaxRecordsCeiling bounds the adapted group size (linger.go)
// when batch.max_records is left to its default.
const DefaultBatchMaxRecordsCeiling = 100000

// FillDefaults replaces every zero setting of s that has a default by that
// default, so that s says what runs: the in-flight limits of each source, the
// batch and retry settings of each sink, and the checkpoint settings. Run
// does the same to its own copy; the configuration loader calls it so that
// `weir validate` shows what runs. Negative settings are left as they are for
// Validate to report, and so is Metrics.Address, whose zero value serves
// nothing. It modifies the elements of s.Sources and s.Sinks in place.
func FillDefaults(s *Spec) {
	for i := range s.Sources {
		ss := &s.Sources[i]
		ss.MaxInFlightBatches = orDefault(ss.MaxInFlightBatches, DefaultMaxInFlightBatches)
		ss.MaxInFlightBytes = orDefault(ss.MaxInFlightBytes, DefaultMaxInFlightBytes)
	}
	for i := range s.Sinks {
		sk := &s.Sinks[i]
		sk.Batch = sk.Batch.withDefaults()
		sk.Retry = sk.Retry.withDefaults()
		sk.GiveUpAfter = orDefault(sk.GiveUpAfter, DefaultGiveUpAfter)
	}
	s.Checkpoint = s.Checkpoint.withDefaults()
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func (b BatchSettings) withDefaults() BatchSettings {
	if b.MaxRecords == 0 {
		// Left to its default: the group size follows the sink's pace,
		// from DefaultBatchMaxRecords up (linger.go).
		b.AdaptRecords = true
	}
	b.MaxRecords = orDefault(b.MaxRecords, DefaultBatchMaxRecords)
	b.MaxBytes = orDefault(b.MaxBytes, DefaultBatchMaxBytes)
	b.MaxAge = orDefault(b.MaxAge, DefaultBatchMaxAge)
	b.Overlap = orDefault(b.Overlap, DefaultBatchOverlap)
	return b
}

// withDefaults fills the retry settings. A default backoff never contradicts
// the one that is set: the initial backoff is at most a MaxBackoff that is
// set, and the default MaxBackoff at least the initial backoff.
func (r RetrySettings) withDefaults() RetrySettings {
	r.MaxAttempts = orDefault(r.MaxAttempts, DefaultRetryMaxAttempts)
	if r.InitialBackoff == 0 {
		r.InitialBackoff = DefaultRetryInitial
		if r.MaxBackoff > 0 {
			r.InitialBackoff = min(DefaultRetryInitial, r.MaxBackoff)
		}
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(DefaultRetryMax, r.InitialBackoff)
	}
	r.MaxElapsed = orDefault(r.MaxElapsed, DefaultRetryMaxElapsed)
	return r
}

func (c CheckpointSettings) withDefaults() CheckpointSettings {
	c.CommitInterval = orDefault(c.CommitInterval, DefaultCommitInterval)
	c.ShutdownTimeout = orDefault(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.DrainTimeout = orDefault(c.DrainTimeout, DefaultDrainTimeout)
	c.StallWarning = orDefault(c.StallWarning, DefaultStallWarning)
	c.CommitFailureTimeout = orDefault(c.CommitFailureTimeout, DefaultCommitFailureTimeout)
	c.CommitTimeout = orDefault(c.CommitTimeout, DefaultCommitTimeout)
	return c
}
