// Package conformance holds the shared suites every weir connector must pass:
// TestSource and TestSink. A connector's own test calls them with a harness
// that builds instances and, for sinks, reads back what was made durable.
// docs/connectors.md shows a connector written from scratch against them.
// The suites depend on the connector contract alone: the checks that run a
// connector inside a pipeline reach the runtime through the harness's
// Runtime (pipeline/pipelinetest.Runtime{}).
//
// The suites check weir's contract from the connector's side.
//
// For a source (TestSource), every batch is checked as the runtime checks
// it (its partition assigned, its positions going on from the last batch's
// end, every record carrying its own offset within them), and:
//   - CommitsNeverRegress: run by the runtime with failed writes that force
//     a rewind, commits of a partition never go back;
//   - FailedBatchesAreReplayedAfterRestart: with batches A to E, A, B and D
//     delivered, C and E failed, only the end of B is committed, and a new
//     instance assigns the partition there and reads C, D and E again;
//   - SeekReadsExactlyFromThePosition: after Seek to a batch's end (or
//     start), the same records come again, with the offsets they had;
//   - CancelledPollLosesNothing: a Poll whose context is cancelled (the
//     runtime's way of applying a rewind while Poll waits) loses nothing the
//     source had fetched.
//
// For a sink (TestSink):
//   - FlushedIsDurableAbortedIsNot: flushed groups are durable, in order, and
//     an aborted group never shows;
//   - CloseFlushesNothing: a group still open at Close never shows;
//   - CrashBetweenWriteAndFlush (with SinkHarness.Reopen): a new instance
//     over the same destination, after the first was abandoned between Write
//     and Flush (or after Seal, before Persist), finds the flushed groups and
//     nothing of the unflushed one: Flush returned only once its group was in
//     the destination, not in the process;
//   - RejectedRecordIsLeftOut (with SinkHarness.Unwritable): a record the
//     sink cannot write is a *connector.RejectError with its index, the
//     records before it are written and those after it are left for the next
//     Write;
//   - PositionsAreStoredWithTheirGroup (for a connector.PositionKeeper): the
//     positions given with a group are stored when the group becomes
//     durable (Flush, or Persist after Seal) and not before, not by an
//     aborted group, per source, from a copy of the runtime's slice, and a
//     crash before the Flush leaves the last durable group's;
//   - RuntimeRewindsFailedWrites, SealedGroupsPersistInOrder,
//     RuntimeRetriesFailedPersists: through the runtime, with injected
//     failures, every record becomes durable and every position is committed.
//
// For an exactly-once sink (a connector.PositionKeeper), TestExactlyOnce
// drives it with a fake runtime of its own, crashes it at every step of a
// commit that the sink reports (ExactlyOnceHarness.CrashPoints), reopens it,
// and checks that the positions it reports and the records its destination
// holds agree, with no record twice and none missing; with two instances at
// once it checks the fence against a zombie's late commit. ExpectBroken runs
// a suite against a connector's deliberately broken variant in a child
// process and checks which checks fail.
//
// What no in-process test can see is whether a destination survives the
// machine's crash: that Flush fsyncs (or waits for a broker's or database's
// acknowledgement) is the connector's promise, which its own tests and
// docs/connectors.md's checklist cover.
//
// The suites' own tests run each check against a connector broken in just
// the way the check is for, and expect it to fail (broken_test.go).
package conformance
