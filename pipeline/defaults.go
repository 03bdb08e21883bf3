package pipeline

import (
	"time"
)

// Defaults applied to zero settings.
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
	DefaultMetricsAddress       = "127.0.0.1:9464" // the command line's; a Spec's zero Address serves nothing
)

func sinkDefaults(sk *SinkSpec) error {
	b, r := &sk.Batch, &sk.Retry
	if b.MaxRecords < 0 || b.MaxBytes < 0 || b.MaxAge < 0 || b.Linger < 0 || b.Overlap < 0 {
		return specErr("sink %q: batch limits must not be negative (0 means the default)", sk.Name)
	}
	if r.MaxAttempts < 0 || r.InitialBackoff < 0 || r.MaxBackoff < 0 || r.MaxElapsed < 0 {
		return specErr("sink %q: retry settings must not be negative (0 means the default)", sk.Name)
	}
	if sk.OnFailure > Halt {
		return specErr("sink %q: unknown on_failure %d (use rewind, dead_letter or halt)", sk.Name, sk.OnFailure)
	}
	if b.MaxRecords == 0 {
		b.MaxRecords = DefaultBatchMaxRecords
	}
	if b.MaxBytes == 0 {
		b.MaxBytes = DefaultBatchMaxBytes
	}
	if b.MaxAge == 0 {
		b.MaxAge = DefaultBatchMaxAge
	}
	if b.Overlap == 0 {
		b.Overlap = DefaultBatchOverlap
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultRetryMaxAttempts
	}
	if r.InitialBackoff == 0 {
		r.InitialBackoff = DefaultRetryInitial
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(DefaultRetryMax, r.InitialBackoff)
	}
	if r.MaxElapsed == 0 {
		r.MaxElapsed = DefaultRetryMaxElapsed
	}
	return nil
}
func checkpointDefaults(c *CheckpointSettings) {
	if c.CommitInterval <= 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.StallWarning <= 0 {
		c.StallWarning = DefaultStallWarning
	}
	if c.CommitFailureTimeout <= 0 {
		c.CommitFailureTimeout = DefaultCommitFailureTimeout
	}
}
