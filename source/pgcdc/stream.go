package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// streamBatch is a batch the stream's goroutine hands to Poll.
type streamBatch struct {
	gen     uint64 // the Seek generation it was read in; older ones are dropped
	end     uint64 // the position after its last complete transaction
	records []record.Record
}

// stream reads the slot. One goroutine (run) owns the replication
// connection: it receives, decodes, hands batches to Poll, and sends every
// standby status update, so nothing else ever writes to the connection.
//
// The flush position it sends is committed: the watermark the runtime gave
// Commit, never anything read. Keepalives, whatever WAL position they carry,
// are answered with it too.
type stream struct {
	src  *Source
	cfg  *Config
	log  *slog.Logger
	part connector.Partition
	// maxBytes bounds a batch's records (Source.batchBytes), as
	// max_batch_records bounds their number.
	maxBytes int

	out  chan *streamBatch    // to Poll; capacity 1, so batches grow while Poll is busy
	free chan []record.Record // record slices back from Poll, for reuse
	errc chan error           // a failure no reconnection fixes; capacity 1

	// committed is the position the runtime committed (accessed atomically):
	// the only flush position ever sent.
	committed atomic.Uint64
	// received is the end of the last transaction read from the server
	// (accessed atomically). Only the unsafe_confirm build sends it.
	received atomic.Uint64

	// gen counts Seeks (accessed atomically); batches of an older generation
	// are dropped by Poll.
	gen atomic.Uint64

	// mu guards the pending seek's target and the connection wake()
	// interrupts.
	mu      sync.Mutex
	seekTo  uint64
	seekGen uint64
	conn    *pgconn.PgConn
	// seeking and stopping are flags the goroutine checks on every message
	// (accessed atomically); seeking is set under mu with seekTo.
	seeking  atomic.Bool
	stopping atomic.Bool

	// woken is set by wake before it interrupts a read (accessed
	// atomically); the goroutine checks it after arming its deadline, so
	// that a wake-up is never lost (see wake).
	woken atomic.Bool
	wakec chan struct{} // capacity 1: wakes a hand-off that waits for Poll
	// pendingWaiting is true while the goroutine holds records it could not
	// hand over because Poll had not taken the last batch (accessed
	// atomically): Poll then wakes it after taking one.
	pendingWaiting atomic.Bool

	// failing is the failure the goroutine reconnects after, for
	// Source.Failing: set at a lost connection or a failed reconnection,
	// kept (its since and a count) while they go on, cleared once
	// streaming starts again; nil while it streams.
	failing atomic.Pointer[streamFailure]

	done chan struct{}
}

// streamFailure is one state of a failing stream, never changed once
// published.
type streamFailure struct {
	since time.Time
	n     int
	err   error
}

// failed notes a lost connection or a failed reconnection.
func (st *stream) failed(err error) {
	f := &streamFailure{since: time.Now(), n: 1, err: err}
	if old := st.failing.Load(); old != nil {
		f.since, f.n = old.since, old.n+1
	}
	st.failing.Store(f) // only the stream's goroutine writes
}

func newStream(src *Source, part connector.Partition, start uint64) *stream {
	st := &stream{
		src: src, cfg: &src.cfg, log: src.log, part: part, maxBytes: src.batchBytes(),
		out:   make(chan *streamBatch, 1),
		free:  make(chan []record.Record, 4),
		errc:  make(chan error, 1),
		wakec: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	st.committed.Store(start)
	return st
}

// wake makes the goroutine look at its flags now. The flag is set before the
// read deadline is moved to now; the goroutine arms its own deadline before it
// reads the flag. Either the deadline lands after the goroutine armed its own
// (and interrupts the read), or the goroutine's flag check comes after the
// store: a wake-up is never lost. A spurious interruption only costs a loop.
func (st *stream) wake() {
	st.woken.Store(true)
	st.mu.Lock()
	if st.conn != nil {
		_ = st.conn.Conn().SetReadDeadline(time.Now())
	}
	st.mu.Unlock()
	select {
	case st.wakec <- struct{}{}:
	default:
	}
}

// commit records a committed position and has it sent soon.
func (st *stream) commit(pos uint64) {
	for {
		old := st.committed.Load()
		if pos <= old || st.committed.CompareAndSwap(old, pos) {
			break
		}
	}
	st.wake()
}

// seek makes the stream start again at pos.
func (st *stream) seek(pos uint64) {
	st.mu.Lock()
	st.seekTo, st.seekGen = pos, st.gen.Add(1)
	st.seeking.Store(true)
	st.mu.Unlock()
	st.wake()
}

// stop ends the goroutine, which sends a last status update first.
func (st *stream) stop() {
	st.stopping.Store(true)
	st.wake()
}

// flushPosition is the flush (and write and apply) position of a status
// update: the committed watermark, never more.
func (st *stream) flushPosition() uint64 {
	return st.unsafeConfirm(st.committed.Load())
}

// poll hands the next batch to the runtime.
func (st *stream) poll(ctx context.Context, b *connector.Batch) error {
	for {
		select {
		case sb := <-st.out:
			if sb.gen != st.gen.Load() {
				st.recycle(sb.records)
				continue
			}
			b.Reset()
			old := b.Records
			b.Partition = st.part
			b.End = connector.Position(sb.end)
			b.Records = sb.records
			st.recycle(old)
			if st.pendingWaiting.Load() {
				st.wake()
			}
			return nil
		case err := <-st.errc:
			st.errc <- err // every later Poll fails the same way
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (st *stream) recycle(rs []record.Record) {
	if cap(rs) == 0 {
		return
	}
	clear(rs)
	select {
	case st.free <- rs[:0]:
	default:
	}
}

func (st *stream) newRecords() []record.Record {
	select {
	case rs := <-st.free:
		return rs
	default:
		return make([]record.Record, 0, 64)
	}
}

// run is the stream's goroutine: serve first (the connection startStream
// made), and on a lost connection reconnect with backoff, resuming after
// the last transaction it holds.
func (st *stream) run(ctx context.Context, start uint64, first *pgconn.PgConn) {
	defer close(st.done)
	dec := newDecoder(st.src.cat, st.src.name, st.src.slotPartName())
	p := &pending{records: st.newRecords(), end: start}
	backoff := st.cfg.ReconnectBackoff
	gen := st.gen.Load()
	for {
		if st.isStopping() {
			if first != nil {
				_ = first.Close(context.Background())
			}
			return
		}
		if pos, g, ok := st.takeSeek(); ok {
			p.drop()
			p.end, gen = pos, g
			if first != nil { // streams from elsewhere
				_ = first.Close(context.Background())
				first = nil
			}
		}
		conn, err := first, error(nil)
		if first == nil {
			conn, err = st.connect(ctx, p.end)
		}
		first = nil
		if err == nil {
			backoff = st.cfg.ReconnectBackoff
			st.failing.Store(nil)
			err = st.serve(ctx, conn, dec, p, &gen)
			st.setConn(nil)
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			dec.reset()
			p.dropOpen()
		}
		if err == nil || st.isStopping() {
			continue // a seek, or stopping: the loop's top handles both
		}
		if fatal(err) {
			st.errc <- fmt.Errorf("pgcdc: slot %s: %w", st.cfg.Slot, err)
			return
		}
		err = st.src.explainBusy(err)
		st.failed(err)
		st.log.Warn("pgcdc: replication connection lost; reconnecting", "slot", st.cfg.Slot,
			"resume_lsn", formatLSN(p.end), "backoff", backoff, "err", err)
		// Full jitter between half and all of the step.
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		backoff = min(backoff*2, st.cfg.ReconnectBackoffMax)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-st.wakec:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

func (st *stream) isStopping() bool { return st.stopping.Load() }

func (st *stream) takeSeek() (uint64, uint64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.seeking.Load() {
		return 0, 0, false
	}
	st.seeking.Store(false)
	return st.seekTo, st.seekGen, true
}

func (st *stream) setConn(c *pgconn.PgConn) {
	st.mu.Lock()
	st.conn = c
	st.mu.Unlock()
}

// connect opens a replication connection and starts streaming after from.
// The server skips every transaction whose commit lies before from, and never
// starts before the slot's confirmed position.
func (st *stream) connect(ctx context.Context, from uint64) (*pgconn.PgConn, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := st.cfg.connectReplication(cctx)
	if err != nil {
		return nil, err
	}
	args := []string{"proto_version '1'", "publication_names " + quoteLiteral(st.cfg.Publication)}
	if st.src.version >= 140000 {
		args = append(args, "messages 'true'")
	}
	err = pglogrepl.StartReplication(cctx, conn, st.cfg.Slot, pglogrepl.LSN(from), pglogrepl.StartReplicationOptions{PluginArgs: args})
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("starting replication at %s: %w", formatLSN(from), err)
	}
	st.setConn(conn)
	st.log.Info("pgcdc: streaming", "slot", st.cfg.Slot, "from_lsn", formatLSN(from), "confirmed_lsn", formatLSN(st.flushPosition()))
	return conn, nil
}

// pending is what the goroutine has read but not handed over yet.
type pending struct {
	records []record.Record
	// bytes is the records' size (record.Record.Size): a batch is cut by
	// it as by the records' number, so that wide rows cannot pile up.
	bytes int
	// end is the position after the last complete transaction read.
	end uint64
	// open is the index of the first record of the transaction being read;
	// records before it belong to complete transactions.
	open int
	// dirty is true when end moved since the last hand-over (a transaction
	// without records, such as a heartbeat, still advances the position),
	// and since is when it became so.
	dirty bool
	since time.Time
}

// linger is how long complete transactions wait for more before they are
// handed over in a batch that is not full. While changes stream in, a
// batch fills up (max_batch_records) well within it; when they trickle, it
// is the latency a change gains. Without it every transaction became a batch
// of its own, and the runtime paid its cost per batch for each.
const linger = time.Millisecond

// drop forgets everything (a seek starts elsewhere).
func (p *pending) drop() {
	clear(p.records)
	p.records, p.open, p.dirty, p.bytes = p.records[:0], 0, false, 0
}

// dropOpen forgets the records of the transaction being read (the
// connection was lost): the server sends it again, whole.
func (p *pending) dropOpen() {
	p.bytes -= size(p.records[p.open:])
	clear(p.records[p.open:])
	p.records = p.records[:p.open]
}

// full reports whether the records make a batch: max_batch_records of
// them, or maxBytes.
func (st *stream) full(p *pending) bool {
	return len(p.records) >= st.cfg.MaxBatchRecords || p.bytes >= st.maxBytes
}

// size is the records' size, as the runtime counts in-flight bytes.
func size(rs []record.Record) int {
	n := 0
	for i := range rs {
		n += rs[i].Size()
	}
	return n
}

// serve runs one connection until it fails (the error), or a seek or a stop
// asks to leave it (nil).
func (st *stream) serve(ctx context.Context, conn *pgconn.PgConn, dec *decoder, p *pending, gen *uint64) error {
	now := time.Now()
	var sent uint64
	status := func(force bool) error {
		pos := st.flushPosition()
		if pos == 0 || (!force && pos == sent) {
			return nil
		}
		err := pglogrepl.SendStandbyStatusUpdate(ctx, conn, pglogrepl.StandbyStatusUpdate{
			WALWritePosition: pglogrepl.LSN(pos), WALFlushPosition: pglogrepl.LSN(pos), WALApplyPosition: pglogrepl.LSN(pos)})
		if err != nil {
			return fmt.Errorf("sending a status update: %w", err)
		}
		sent = pos
		return nil
	}
	if err := status(true); err != nil {
		return err
	}
	nextStatus := now.Add(st.cfg.StatusInterval)
	var nextBeat time.Time
	if st.cfg.HeartbeatInterval > 0 {
		nextBeat = now.Add(st.cfg.HeartbeatInterval)
	}
	nextWAL := now
	var deadline time.Time
	for {
		st.woken.Store(false)
		if st.isStopping() {
			return st.finish(conn, status)
		}
		if st.seeking.Load() {
			return nil
		}
		now := time.Now()
		if p.dirty && !now.Before(p.since.Add(linger)) {
			st.handOff(p, *gen, p.open, false)
		}
		if !now.Before(nextStatus) {
			if err := status(true); err != nil {
				return err
			}
			nextStatus = now.Add(st.cfg.StatusInterval)
		} else if err := status(false); err != nil {
			return err
		}
		if !nextBeat.IsZero() && !now.Before(nextBeat) {
			st.src.heartbeat(ctx)
			nextBeat = now.Add(st.cfg.HeartbeatInterval)
		}
		if !now.Before(nextWAL) {
			st.src.checkWAL(ctx)
			nextWAL = now.Add(st.cfg.WALCheckInterval)
		}
		next := nextStatus
		if !nextBeat.IsZero() && nextBeat.Before(next) {
			next = nextBeat
		}
		if nextWAL.Before(next) {
			next = nextWAL
		}
		if p.dirty && !st.pendingWaiting.Load() && p.since.Add(linger).Before(next) {
			// (When Poll has not taken the last batch, its taking wakes
			// this goroutine instead: a deadline in the past would spin.)
			next = p.since.Add(linger)
		}
		if !next.Equal(deadline) {
			if err := conn.Conn().SetReadDeadline(next); err != nil {
				return err
			}
			deadline = next
		}
		if st.woken.Load() {
			deadline = time.Time{} // a wake may have moved it: arm it again
			continue
		}
		msg, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			if pgconn.Timeout(err) {
				deadline = time.Time{}
				continue
			}
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if len(m.Data) == 0 {
				continue
			}
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return err
				}
				// The server's WAL end is not ours to confirm: only the
				// committed watermark is sent, now if asked to.
				if ka.ReplyRequested {
					if err := status(true); err != nil {
						return err
					}
					nextStatus = time.Now().Add(st.cfg.StatusInterval)
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return err
				}
				before := len(p.records)
				recs, end, err := dec.handle(ctx, xld.WALData, p.records)
				p.records = recs
				if len(recs) > before {
					p.bytes += size(recs[before:])
				}
				var le *lookupError
				if errors.As(err, &le) {
					st.src.reconnectMeta(ctx)
					return err
				}
				if err != nil {
					// A message the source cannot decode is not cured by
					// reading it again: stop rather than skip it.
					st.errc <- fmt.Errorf("pgcdc: slot %s: at %s: %w", st.cfg.Slot, xld.WALStart, err)
					st.stopping.Store(true)
					return nil
				}
				if end > 0 {
					if !p.dirty {
						p.since = time.Now()
					}
					p.end, p.open, p.dirty = end, len(p.records), true
					st.received.Store(end)
					if st.full(p) {
						if !st.handOff(p, *gen, len(p.records), true) {
							return st.leave(conn, status)
						}
					}
				} else if st.full(p) {
					// Full in mid-transaction: the complete transactions
					// go first; a transaction larger than a batch by
					// itself is handed over in parts, at the position
					// before it (see the package documentation), the
					// rest following at its commit.
					n := p.open
					if n == 0 {
						n = len(p.records)
					}
					if !st.handOff(p, *gen, n, true) {
						return st.leave(conn, status)
					}
				}
			}
		case *pgproto3.ErrorResponse:
			return pgconn.ErrorResponseToPgError(m)
		case *pgproto3.CopyDone:
			return errors.New("the server ended the replication stream")
		}
	}
}

// leave ends serve after a hand-off that a seek or a stop interrupted.
func (st *stream) leave(conn *pgconn.PgConn, status func(bool) error) error {
	if st.isStopping() {
		return st.finish(conn, status)
	}
	return nil
}

// finish sends the committed position a last time and ends the copy
// stream cleanly: the walsender reads its input only between sends, and one
// that finds the connection closed while it sends exits without reading the
// last status update. After CopyDone it stops sending and answers, having
// read everything before it.
func (st *stream) finish(conn *pgconn.PgConn, status func(bool) error) error {
	if err := status(true); err != nil {
		return err
	}
	_ = conn.Conn().SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := pglogrepl.SendStandbyCopyDone(context.Background(), conn); err != nil {
		st.log.Debug("pgcdc: ending the replication stream", "err", err)
	}
	return nil
}

// handOff gives Poll p's first n records: the complete transactions (n =
// p.open), or the open one's records too (a transaction larger than a
// batch, handed over at the position before it). Without wait it gives only
// if Poll has room, and otherwise keeps collecting, so batches grow while the
// runtime is busy. It returns false when a seek or a stop interrupted a
// waiting hand-off; p is then emptied, as both discard it.
func (st *stream) handOff(p *pending, gen uint64, n int, wait bool) bool {
	if n == 0 && !p.dirty {
		return true
	}
	// This goroutine is the only sender: room now is room at the send. The
	// flag is raised before the look, so that a Poll taking the last batch
	// in between sees it and wakes this goroutine.
	if !wait {
		st.pendingWaiting.Store(true)
		if len(st.out) == cap(st.out) {
			return true
		}
	}
	st.pendingWaiting.Store(false)
	var recs []record.Record
	if n == len(p.records) {
		recs, p.records = p.records, st.newRecords()
		p.bytes = 0
	} else {
		p.bytes -= size(p.records[:n])
		recs = append(st.newRecords(), p.records[:n]...)
		rest := copy(p.records, p.records[n:])
		clear(p.records[rest:])
		p.records = p.records[:rest]
	}
	p.open -= min(n, p.open)
	// The batch carries the position after the last complete transaction:
	// what remains is the open transaction's, which has none yet.
	p.dirty = false
	sb := &streamBatch{gen: gen, end: p.end, records: recs}
	select {
	case st.out <- sb:
		return true
	default:
	}
	statusTick := time.NewTicker(st.cfg.StatusInterval)
	defer statusTick.Stop()
	for {
		select {
		case st.out <- sb:
			return true
		case <-st.wakec:
		case <-statusTick.C:
		}
		// Waiting for the runtime must not silence the connection: a
		// walsender that hears nothing for wal_sender_timeout drops it.
		if err := st.sendStatus(); err != nil {
			st.log.Debug("pgcdc: status update while waiting for the pipeline failed", "err", err)
		}
		if st.seeking.Load() || st.stopping.Load() {
			p.drop()
			return false
		}
	}
}

// sendStatus sends the committed position on the current connection, from
// the goroutine that owns it.
func (st *stream) sendStatus() error {
	st.mu.Lock()
	conn := st.conn
	st.mu.Unlock()
	pos := st.flushPosition()
	if conn == nil || pos == 0 {
		return nil
	}
	return pglogrepl.SendStandbyStatusUpdate(context.Background(), conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pglogrepl.LSN(pos), WALFlushPosition: pglogrepl.LSN(pos), WALApplyPosition: pglogrepl.LSN(pos)})
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
