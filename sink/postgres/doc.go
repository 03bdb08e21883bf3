// Package postgres is weir's PostgreSQL sink: each group of records becomes
// one transaction that writes the rows (COPY in insert mode; COPY into a
// staging table and INSERT ... ON CONFLICT DO UPDATE in upsert mode) and, in
// the same transaction, the source positions the group reaches. It is a
// connector.PositionKeeper, so the runtime never hands it a record those
// positions cover, and it reads them under a row lock in each transaction
// and leaves out the rows they cover, which keeps it exactly-once against a
// process that lost a partition and against a COMMIT whose answer was lost.
//
// Write encodes records into rows in COPY's text format, from the record's
// JSON bytes (numbers keep their literal), and rejects a record it cannot
// turn into a row, naming the column. Flush, or the Persist of a sealed
// group, runs the transaction and returns nil only after COMMIT returned; a
// sealed group's transaction begins at Seal, which copies its rows on a
// connection of its own while the group before it commits (ahead.go). A
// row the server refuses for its data fails the whole COPY; the sink then
// finds the refused rows (refuse.go) and rejects them when the runtime
// writes the group again.
//
// docs/postgres.md describes the configuration, the type mapping, the
// positions table and the decisions behind them.
package postgres
