// Package pgcdc is weir's PostgreSQL change data capture source
// (`type: postgres_cdc`): an initial snapshot of the captured tables, then
// the changes of a logical replication slot decoded by pgoutput. The slot
// is told, as its confirmed flush position, only the watermark the runtime
// committed: never a position read but not yet durable in every sink.
//
// # Partitions and positions
//
// The stream is one partition, "slot/<slot>". Its positions are LSNs:
//
//   - A batch holds whole transactions, in commit order, and its End is the
//     end LSN of its last transaction's commit record. Committing it tells
//     the server that every transaction committed before it is delivered:
//     a restart at that LSN skips exactly those (PostgreSQL skips a
//     transaction whose commit record starts before the start position).
//   - A record's Origin.Offset is its transaction's commit LSN (the start of
//     the commit record, pgoutput's final_lsn), shared by all changes of the
//     transaction. It lies below the transaction's end, and at or above the
//     end of any transaction committed before it, so every record of a
//     batch has an offset below the batch's End and every record of a later
//     batch one at or above it. Offsets are not unique: a transaction's
//     changes resolve together, and no position falls between two of them.
//   - A transaction with more changes than max_batch_records is split, so
//     that memory stays bounded. Its parts but the last carry the End of the
//     transaction before it: the watermark cannot move past the transaction
//     until its last part is delivered, and a restart reads it again whole.
//     Those parts are the one case where records lie at or above their
//     batch's End; the rule is relaxed on the safe side only (a position
//     never claims a record that is not delivered).
//
// Each table of a snapshot is a partition, "snapshot/<schema>.<table>",
// whose position is the number of rows read in key order; a record's offset
// is its row number. The key of the last row before each batch End is kept,
// and written to the state store (data_dir) with the position on Commit, so
// that a stopped snapshot resumes after that row.
//
// # The stream's goroutine
//
// One goroutine owns the replication connection: it receives, decodes,
// hands batches to Poll through a channel of one, and sends every standby
// status update. Commit stores the watermark in an atomic and wakes the
// goroutine (a read deadline moved to now), which sends it at once; it also
// sends it every status_interval, and whenever a keepalive asks for a reply.
// Keepalives carry the server's WAL end; it is never confirmed. While Poll
// is not taking batches the goroutine keeps sending status updates, so that
// the server does not drop a connection whose pipeline is merely slow.
//
// On a lost connection the goroutine reconnects with backoff and starts
// after the last transaction it received whole (the transaction it was
// reading is read again). The slot itself never starts before its confirmed
// position. A Seek starts the stream again at the watermark.
//
// # The snapshot and the seam
//
// When the source creates the slot (and snapshot is not never) it creates it
// with an exported snapshot and reads every table inside that snapshot: the
// rows are the state at the slot's consistent point, and the stream starts
// exactly there. Nothing is lost or seen twice at the seam.
//
// An exported snapshot dies with the connection that exported it, so a
// snapshot stopped part way (a crash, a kill, a restart) cannot go on in
// it. It resumes, per table, after the last committed row's key, in a
// snapshot of its own taken at the restart; the slot has not moved (nothing
// is streamed before the snapshot is complete), so the stream then replays
// every change since the consistent point. No change is lost: a change is
// either visible to the new snapshot or committed after it, and in the
// stream either way. Rows of tables read after the restart come out in their
// newer state, followed by the stream's older changes to them and then the
// newer ones: at-least-once, and a consumer applying changes in order ends
// at the right state once the stream passes the restart. A table without
// primary key or replica identity index is read again from its first row.
//
// The stream starts only once every snapshot position is committed, so
// that a snapshot row replayed by a rewind can never overtake a later
// change of the same row.
package pgcdc
