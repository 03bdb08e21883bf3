// Package checkpoint tracks acknowledgements and decides, per source partition,
// which position is safe to commit.
//
// It is weir's core promise in code: a source position is committed only when
// every record read before it has been durably written by every sink it was
// routed to, or deliberately dropped.
//
// # The flow
//
// A source's polling goroutine owns an AckIssuer. For each poll batch it calls
// Issue, which returns the batch's first AckRef and the position that becomes
// committable once the batch and every earlier one are delivered. Every record
// of the batch carries a Clone of that reference (CloneN gives a whole batch's
// records theirs in one atomic add):
//
//   - a filter that drops a record releases its reference as Delivered;
//   - a flat_map that turns one record into n clones the reference n times and
//     releases the original;
//   - routing a record to n sinks clones it once per sink;
//   - a sink moves the references of the records it buffers into an AckSet and,
//     once the write is durable (fsync, COMMIT, broker acknowledgement), calls
//     Ack; on error it calls Fail.
//
// When the last reference of a batch is released, the batch resolves with the
// worst status it saw, and an AckMsg is queued for the Checkpointer. The queue
// is lock-free and never blocks a producer.
//
// # The loop a user writes
//
// The Checkpointer belongs to one goroutine, which runs roughly:
//
//	cp := checkpoint.New()
//	issuer := cp.NewIssuer() // handed to the polling goroutine
//	var pending []checkpoint.Commit
//	for {
//		select {
//		case <-cp.Wake():
//			stats := cp.Drain() // apply resolutions, assignments, revokes
//			record(stats)
//		case <-ticker.C:
//			cp.Drain()
//			pending = cp.Committable(pending[:0])
//			if err := source.Commit(ctx, pending); err == nil {
//				cp.MarkCommitted(pending)
//			} // on error the same positions come back next tick
//		}
//	}
//
// Assignment changes travel through the same queue as resolutions, so they are
// applied in the order they happened: AckIssuer.Assign starts a new epoch for a
// partition (also used to rewind, after seeking back to the watermark);
// AckIssuer.Revoke says that no more batches will be issued. After a revoke the
// owner may wait until Drained, commit the final watermark, and then Forget the
// partition; an acknowledgement of any epoch but the current one is Stale and
// never applied.
//
// # Invariants
//
//  1. Trackers are synchronous. PartitionTracker and the Checkpointer have no
//     goroutines, locks, clocks or I/O; time and events enter as calls, so the
//     same inputs always give the same watermarks. The one channel is the
//     Checkpointer's wake channel (Wake), of capacity 1: producers signal it
//     with a non-blocking send after they queue a node, and only the owning
//     goroutine receives from it. No method of the Checkpointer sends on it or
//     waits on it.
//  2. The ack path never blocks. Clone, CloneN, Release, AckSet.Ack and
//     AckSet.Fail use atomic operations only; the last release links a node
//     into an intrusive MPSC queue and makes a non-blocking send on a
//     capacity-1 wake channel. No mutex, no bounded channel, no waiting on the
//     Checkpointer.
//  3. A watermark never advances past an unacknowledged or failed batch,
//     including across rebalances: epochs make acknowledgements of revoked
//     assignments stale, and the check is made in one place (Checkpointer.Apply).
//
// Every atomic operation and the wake channel of the ack path live in
// internal/acksync, so that the modelcheck build tag can replace them with
// versions driven by a deterministic scheduler that explores interleavings.
package checkpoint
