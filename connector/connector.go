// Package connector defines the interfaces that weir's sources and sinks
// implement, and the registry the configuration finds them in.
//
// The runtime (package pipeline) owns every goroutine and every acknowledgement:
// a source only reads and commits positions, a sink only writes and makes its
// writes durable. Neither touches AckRefs. That keeps connectors small and puts
// the delivery guarantee in one place.
//
// Each connector must pass the shared conformance suite in connector/conformance.
package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/record"
)

// Partition is the runtime's id of a source partition, returned by
// Host.Assign: a small dense integer, valid within one run. Sources keep their
// own stable names for partitions ("orders/3", a file's identity).
type Partition = checkpoint.Partition

// Position is a place in a partition, in the source's own unit (a Kafka
// offset, a byte offset). A record's Origin.Offset and a batch's End are
// positions: the records of a batch have offsets in order, at or above where
// the batch begins (the End of the batch before it, or the Assign's start),
// and normally below its End. A record may lie at or above its batch's End
// only when the batch must not claim it yet (a part of a transaction whose
// position only its last part reaches); an offset below where its batch
// begins is never allowed: the runtime stops the run, since it would skip
// such a record on a replay as already written.
type Position = checkpoint.Position

// Batch is one poll batch: records of a single partition, in order, and the
// position just after the last of them.
type Batch struct {
	Partition Partition
	// End is the position to commit once this batch and every batch before it
	// in the partition are delivered: for Kafka the next offset to read, for a
	// file the byte offset after the batch's last complete line.
	End     Position
	Records []record.Record
	// CaughtUp says that the source has read everything available for now
	// (a Kafka fetch returned less than it could, a file source reached the
	// end of its files); more may come later. The runtime then has the sinks
	// flush their groups at once instead of at their MaxAge, so that a
	// backlog's tail does not wait (at most once per MaxAge, so that a
	// trickling input is not written a record at a time).
	CaughtUp bool
}

// Reset empties b, keeping its capacity.
func (b *Batch) Reset() {
	clear(b.Records)
	*b = Batch{Records: b.Records[:0]}
}

// Commit is a position the source must persist for a partition: every record
// before it is durable in every sink it was routed to. (Epoch is the
// runtime's; sources ignore it.)
type Commit = checkpoint.Commit

// Host is what the runtime offers a source. Its methods are safe to call
// from any goroutine: from inside Open or Poll, or from a client's own
// goroutines while Poll waits (a Kafka consumer's rebalance callbacks are the
// case in point: Revoke must run inside the callback, so that the rebalance
// waits for the final commit). Revoke and Lost may also come after the last
// Poll returned, up to the end of Close (a client leaving its group on
// Close): the runtime has then committed for the last time, and Revoke
// returns an error at once. A batch of a partition that was revoked or lost
// before the batch reached the runtime stops the run: stop polling a
// partition before revoking it.
type Host interface {
	// Assign registers a partition the source now owns, under a name that is
	// stable across restarts ("orders/3", a file's identity), reading from start.
	// It returns the partition's id for Batch.Partition and Commit. Assigning
	// a partition that is already assigned starts a new epoch. Once Revoke or
	// Lost of a partition returned, its id may be given to another name:
	// forget it.
	Assign(name string, start Position) Partition
	// Revoke gives partitions up gracefully: no more batches of them will be
	// polled; Revoke waits, up to the configured drain timeout (one deadline
	// for all of them, counted from the call) or ctx, for the batches in
	// flight to resolve, commits their final watermarks through
	// Source.Commit, and then forgets them. Acknowledgements still in flight
	// afterwards are stale and never committed. Revoke every partition a
	// rebalance takes in one call: they drain together.
	Revoke(ctx context.Context, ps ...Partition) error
	// Lost forgets partitions at once, committing nothing (the source no
	// longer owns them, e.g. a Kafka session expired).
	Lost(ps ...Partition)
	// Skip counts input the source passed over on purpose, by the user's
	// configuration: a line longer than the limit with on_invalid: skip, a
	// malformed CSV row. It is in no batch, and positions are committed past
	// it; the run summary and weir_source_skipped_records_total{reason} say
	// how much. reason is a short stable word ("too_long", "bad_row").
	Skip(reason string, records int64)
	// Unread counts input that will never be read: the bytes of a file that
	// was gone before it was read to its end. The run summary and
	// weir_source_unread_bytes_total{reason} report it, and a run that ends
	// with unread input exits with its own code (see docs/runtime.md).
	Unread(reason string, bytes int64)
	// Logger returns the source's logger.
	Logger() *slog.Logger
}

// Source reads records from partitioned input.
//
// Poll is called from one goroutine. Commit is called from the runtime's
// checkpointer goroutine, possibly while Poll is blocked, and must be safe for
// that. Seek is called between Polls from the polling goroutine (a rewind must
// start its new epoch before the next batch is issued), but a source should be
// safe for it from any goroutine. Close is called once, after the last Poll
// returned.
type Source interface {
	// Open connects, finds or is assigned its partitions (reporting each through
	// h.Assign at its committed position), and gets ready to Poll.
	Open(ctx context.Context, h Host) error
	// Poll fills b with the next batch of one partition and returns nil, or
	// returns ErrEndOfInput when a finite source has nothing more to read. It
	// blocks until there is data or ctx is done. The runtime also cancels ctx
	// to apply a rewind while Poll waits on an idle partition: a Poll that
	// returns for that must keep whatever it has buffered for the next call. An empty batch is allowed (it
	// may carry a position that advances past skipped input).
	Poll(ctx context.Context, b *Batch) error
	// Commit durably records positions. When it fails the runtime retries the
	// same (or newer) positions later. Commits for one partition never regress.
	Commit(ctx context.Context, commits []Commit) error
	// Seek makes the next batches of p start at pos again: the runtime rewinds a
	// partition to its watermark to replay failed data. After Seek the runtime
	// starts a new epoch for p (Host.Assign is not needed).
	Seek(ctx context.Context, p Partition, pos Position) error
	// Close releases the source's resources.
	Close(ctx context.Context) error
}

// LagReporter is an optional interface of a Source that knows where its
// partitions end: the Kafka source its high-water marks. With it the status
// shows each partition's lag, the end minus the committed position, and
// /metrics exports it (weir_partition_lag_position, weir_source_lag_position).
//
// Ends returns the end position of each partition it knows, by partition
// name (as given to Host.Assign), in the unit of the source's positions: the
// position the next record appended would have. It is called while the
// status is read and at each scrape of /metrics (at most a few times a
// second, from an HTTP handler's goroutine), concurrently with Poll and the
// Host's methods, so it must be safe for concurrent use and fast: return
// what the source already knows (the last fetch's high-water marks, a size
// from the last stat), never ask a broker or the disk on each call, and
// never the map the source keeps updating. Nothing is asked of it per record.
// Partitions it names that are not assigned are ignored.
type LagReporter interface {
	Ends() map[string]Position
}

// ReadAheadLimiter is an optional interface for a source that reads ahead
// of Poll into buffers of its own, as a Kafka client prefetches. The runtime
// calls LimitReadAhead once, before Open, with the source's in-flight byte
// limit (SourceSpec.MaxInFlightBytes, its default filled in): the runtime
// holds at most about that much of the source's records, and the source
// sizes its read-ahead from it, so that one setting bounds the memory of
// both. The source's documentation says how.
type ReadAheadLimiter interface {
	Source
	LimitReadAhead(inFlightBytes int64)
}

// PromptCommitter is an optional interface for a source whose commits
// somebody waits on: an HTTP source answers a request only once its records
// are committed, so a commit made on the next commit_interval tick (5s by
// default) would be up to that much latency per request. When
// CommitPromptly returns true, the runtime commits the source's partitions
// as soon as their watermarks move (after each drain of acknowledgements),
// as well as on the interval; a failed commit still backs off as usual.
// The runtime asks once, when the source starts. Commit must then be cheap: it is
// called as often as acknowledgements arrive.
type PromptCommitter interface {
	Source
	CommitPromptly() bool
}

// Detacher is an optional interface for a source that can be handed from one
// run of a pipeline to the next, as a reload that leaves the source's
// settings unchanged does, without giving up what it owns: a Kafka member
// stays in its group with its partitions, so the group does not rebalance.
//
// The runtime calls Detach in place of Close, at the end of a run that
// stopped cleanly and was asked to hand the source on: after the last Poll
// returned and the final commit. From then on until Reattach the source has
// no Host: it must not call the old one, and it forgets partitions it loses
// meanwhile (their positions were committed by the final commit, or are read
// again by their next owner). The next run calls Reattach in place of Open
// with its own Host; the source then reports each partition it still owns
// through h.Assign, at the position the last run committed for it (not where
// its reading had got to: what was read past the committed position is read
// again), and goes on. A source that is not taken by a next run is closed
// with Close. LimitReadAhead is not called again: the settings are the same.
type Detacher interface {
	Source
	Detach(ctx context.Context) error
	Reattach(ctx context.Context, h Host) error
}

// ErrTooLarge is wrapped by a sink's error when a group is too large to be
// written as one (more than a broker or a server accepts at once). The
// runtime then writes the group again in smaller parts, down to one record,
// before it counts a failure. A full disk (ENOSPC) or a file too large (EFBIG)
// is treated the same way.
var ErrTooLarge = errors.New("connector: group too large")

// ErrEndOfInput is returned by Poll when a finite source has been read to the end.
var ErrEndOfInput = errors.New("connector: end of input")

// Sink writes records to a destination.
//
// The runtime calls a sink from one goroutine (and, for a Sealer, the sealed
// groups' methods from a second one). It hands records to Write and
// calls Flush when a group should become durable (by count, size or age, the
// sink's batching settings); only after Flush returns nil does it acknowledge
// the group's records. When Write or Flush fails, the runtime calls Abort and,
// per the failure policy, writes the same records again, sends them to a dead
// letter sink, or halts. So a sink must make a group all-or-nothing where it
// can (a temp file renamed on Flush, a transaction committed on Flush) and must
// never report success for data that is not durable.
type Sink interface {
	// Open connects and prepares the first group.
	Open(ctx context.Context) error
	// Write adds records to the current group. The records are not durable yet.
	// A record the sink can never write returns a *RejectError naming it;
	// records before it were accepted, records after it were not.
	Write(ctx context.Context, recs []record.Record) error
	// Flush makes the current group durable and visible, then starts a new one.
	Flush(ctx context.Context) error
	// Abort discards the current group after a failed Write or Flush.
	Abort(ctx context.Context) error
	// Close flushes nothing: the runtime calls Flush first if it wants to.
	Close(ctx context.Context) error
}

// Sealer is an optional interface for a sink whose Flush spends most of its
// time waiting for a device or a peer (an fsync, a broker's acknowledgement).
// The runtime then splits each flush in two: Seal, on the sink's goroutine,
// closes the current group and starts the next at once; Persist, on a second
// goroutine, waits for the sealed group to become durable while Write already
// fills the next one. A group's records are acknowledged only after its
// Persist returned nil, so the guarantee is Flush's; only the waiting overlaps.
//
// The runtime keeps a bounded number of sealed groups (BatchSettings.Overlap)
// and calls their Persists one at a time, in the order they were sealed, so
// groups become visible in order. The sink's other methods, for later groups,
// run while a Persist does: a sink must give each SealedGroup everything it
// needs and share no unsynchronised state with it.
//
// When Seal fails, the runtime handles it as a failed Flush: it calls Abort,
// which must discard the group Seal was sealing too. When Persist fails, the
// runtime calls that group's Discard and writes its records again.
type Sealer interface {
	Sink
	// Seal ends the current group, as Flush does, without waiting for it to
	// become durable, and starts a new group.
	Seal(ctx context.Context) (SealedGroup, error)
}

// SealedGroup is a group a Sealer has sealed and handed over. The runtime
// calls Persist once, and Discard only after a Persist that failed, both from
// one goroutine other than the sink's.
type SealedGroup interface {
	// Persist makes the group durable and visible, and returns nil only once
	// it is: the records may then be acknowledged.
	Persist(ctx context.Context) error
	// Discard removes what a failed Persist left of the group (temporary
	// files); what already became visible may stay (the records are written
	// again: at-least-once).
	Discard(ctx context.Context) error
}

// RejectError is returned by Sink.Write for a record that can never be
// written as it is (it cannot be encoded in the sink's format, say). Replay will
// not help, so the record resolves as Rejected and the failure policy decides.
type RejectError struct {
	Index int // index in the slice passed to Write
	Err   error
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("connector: record %d rejected: %v", e.Index, e.Err)
}

func (e *RejectError) Unwrap() error { return e.Err }

// Describer is an optional interface a Sink may implement to say where its
// output went, for the summary `weir run` prints when a pipeline ends: for
// example "./out/paid: 2 chunks, 373 records". The runtime calls Describe
// once, after the sink's goroutine has finished and before Close; it should
// be cheap and must not block. It returns one short line, or "" for nothing
// to add.
type Describer interface {
	Describe() string
}

// PositionKeeper is an optional interface for an exactly-once sink: one that
// stores, atomically with each group's data, the source positions the group
// reaches, and reports them back when a partition is assigned. The runtime
// then never hands it a record its stored positions cover: not after a
// crash, a rewind, a rebalance, or a replay caused by another sink. The
// source's own commit stays the contiguous watermark over all sinks; the
// stored positions only keep the replays that watermark causes out of this
// sink. One mechanism serves every such sink (pipeline/sinkprogress.go);
// docs/DESIGN.md ("Per-sink progress") has the argument, and the
// exactly-once suite in connector/conformance (TestExactlyOnce) checks a
// sink's side of it by crashing it at every step of a commit.
//
// Positions are exclusive, like Batch.End and Commit: a stored position P of
// a partition says that every record of it with Origin.Offset below P that
// was routed to this sink is in the sink.
//
// What a PositionKeeper must guarantee:
//
//  1. One atomic step. A group's data and the positions given with it
//     become durable in one step that a crash cannot split: after a crash at
//     any point of Flush (or Seal and Persist), a new instance over the same
//     destination finds either the whole group and its positions, or
//     neither. Readers of the destination (the ones the sink's
//     documentation names: a read_committed consumer, the files a reader
//     counts, a SELECT) see a group's records only once the step is taken,
//     and never a part of a group. A sink that commits a group partition
//     by partition (the S3 sink: a position object per partition) keeps
//     this per partition, each partition's records of the group and its
//     position in one step: positions are per partition, so the runtime
//     needs no more, and the suite's harness says so (PartitionsApart).
//  2. Only what was given. The positions stored with a group are those of
//     its last GroupPositions call, copied (the slice is the runtime's);
//     an aborted group, or a sealed group that was discarded, stores none.
//  3. Never lower. A stored position only goes up: a group that carries a
//     lower position for a partition than the one stored leaves it.
//  4. Agreement. StoredPositions reports, per partition, the highest
//     position stored by a group that became durable, read from the
//     destination rather than from memory: a position another instance (a
//     restarted process, another member of a Kafka group) stored since this
//     one opened must be seen. What it reports and what the destination
//     holds come from the same durable groups, so they agree: every record
//     below a reported position is held, once, and a record at or past it
//     is held only if its group was given a position below it (the runtime
//     gives one only when an earlier record failed and will come again).
//  5. A fence, where several instances may write one destination at once
//     (the members of a Kafka group, or a process that lost a partition
//     without knowing it: a zombie): a group must not become durable with a
//     record that positions stored by another instance already cover. Either
//     its commit fails (the runtime writes the group again) or it leaves
//     those records out. A destination only one instance can ever write
//     needs no fence.
//
// What the runtime promises in return:
//
//   - GroupPositions is called on the sink's goroutine after the group's
//     last Write and right before its Flush or Seal, again before a retried
//     Flush (after Abort, with the records written anew), and before each
//     part of a group written in parts. It names every source partition the
//     group has records of, with a position no record of the group reaches
//     (a record at or past it is in a later group).
//   - StoredPositions is called on the sink's goroutine when the runtime
//     first routes a record of a partition the source (re)assigned, and
//     after the sink's groups of the partition's earlier assignment settled
//     (were made durable or failed). The runtime then never hands the sink a
//     record below the reported position, nor below one its own groups
//     stored, in that assignment.
//   - A position never passes a record that is not durable in the sink: it
//     stops before a group that failed and will be written again, and
//     before a rejected record whose dead letter is not durable yet.
//   - Sealed groups are persisted one at a time in sealing order; after a
//     failed Persist no group sealed later in the same round is persisted
//     (each is discarded and written again, in order).
type PositionKeeper interface {
	Sink
	// StoredPositions returns the stored positions of the named partitions
	// of source (partition names as the source gives them to Host.Assign);
	// a partition with nothing stored is left out. It reads the destination
	// (guarantee 4) and may be called while a sealed group's Persist runs.
	// An error makes the runtime retry within the sink's retry settings and
	// then fail the partition's records (they are replayed): it never
	// guesses a position.
	StoredPositions(ctx context.Context, source string, partitions []string) (map[string]Position, error)
	// GroupPositions gives the positions the current group reaches, one per
	// source partition with records in it (see the runtime's promises for
	// when). The sink stores them with the group, in its atomic step, and
	// forgets them on Abort. The slice is the runtime's: copy what is kept.
	GroupPositions(ps []GroupPosition)
}

// GroupPosition is the position a group reaches in one source partition.
type GroupPosition struct {
	Source    string   // the source component's name
	Partition string   // the source's name for the partition
	Position  Position // every record of the partition before it is in the group or earlier ones
}
