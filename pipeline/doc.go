// Package pipeline is weir's runtime: it runs a Spec, and it is the one package
// that starts goroutines.
//
// For each source, Run starts a polling goroutine, which owns the source's
// checkpoint.AckIssuer, and a checkpointer goroutine, which owns the source's
// checkpoint.Checkpointer and calls Source.Commit. Batches go from the poller to
// transform workers (sharded by partition, so a partition's order is kept), and
// from the workers to one goroutine per sink, which groups records, writes and
// flushes them, and acknowledges a group only after Flush returned nil. A sink
// that implements connector.Sealer gets a second goroutine, the persister: the
// sink goroutine seals a group and goes on writing, and the persister
// acknowledges the group once its Persist returned nil.
//
// Every record carries a clone of its batch's AckRef. Whoever consumes a record
// releases the reference exactly once: a transform that drops it (Delivered), a
// transform that fails on it (Rejected, unless the sinks downstream send it to
// their dead letter sinks), a sink after a durable flush (Delivered) or after
// its failure policy gave up (Failed). The checkpointer goroutine commits only
// contiguous, delivered positions.
//
// docs/runtime.md records the design decisions.
package pipeline
