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
// Each goroutine owns its state: no other goroutine touches it. What crosses
// between goroutines is a message (a channel), a snapshot published whole and
// never changed after (an atomic.Pointer), or an atomic counter whose comment
// names who writes it. A source runner's state is one struct per owner:
// sourceRunner.poller (the poller's), sourceRunner.ck (the checkpointer
// goroutine's) and sourceRunner.host (under hostMu), the crossings at the top
// level; a sink runner keeps its persister's in sinkRunner.pers. Four mutexes
// are left, for state that more than one goroutine must change and that is
// never on the path of a record:
//
//   - sourceRunner.hostMu: sourceRunner.host, the issuer and the partition
//     tables, which the connector.Host methods change from any goroutine (a
//     Kafka client's rebalance callbacks run on its own); the poller takes it
//     once per batch.
//   - runtime.inMu: the closing of the workers' inputs (shutdown) against the
//     flush requests a Revoke sends them.
//   - eventRing.mu: the ring of recent events, added to by every goroutine.
//   - Handover.mu: what an embedder asks a run to hand on, and what it handed.
//
// Lock order: hostMu before eventRing.mu (Assign records an event holding
// it); no other lock is taken while one of them is held, and none is held
// across a call into a connector, except inMu, held while a flush request
// waits for a worker's input. docs/runtime.md lists them with the goroutines.
//
// The runtime reads time from one clock, runtime.now (time.Now, or the test
// hook's), for every time it stores to compare later.
//
// docs/runtime.md records the design decisions.
package pipeline
