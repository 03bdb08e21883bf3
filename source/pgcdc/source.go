package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/reach"
	"github.com/weir-etl/weir/internal/statestore"
)

// ErrClosed is returned by Poll, Commit and Seek after Close.
var ErrClosed = errors.New("pgcdc: source closed")

// The source's phases, in order. Only the polling goroutine moves them.
const (
	phaseSnapshotRead = iota // reading the tables' chunks
	phaseSnapshotWait        // every chunk read; waiting until every one is committed
	phaseStream              // streaming the slot
)

// Source is the PostgreSQL change data capture source. Create it with New.
type Source struct {
	name string
	cfg  Config
	host connector.Host
	log  *slog.Logger

	// meta is the ordinary connection: setup, then the catalog lookups,
	// heartbeats and WAL checks of the stream's goroutine.
	meta    *pgx.Conn
	cat     *catalog
	version int // server_version_num
	store   *statestore.Store

	closed atomic.Bool

	// Owned by the polling goroutine.
	phase    int
	snap     *snapshot
	snapPh   snapshotState
	slotPart connector.Partition
	stream   *stream
	cancel   context.CancelFunc // ends the stream's goroutine

	// mu guards the snapshot tables' shared fields (see snapTable) and
	// byPart; snapSig (capacity 1) tells a waiting Poll that a commit came.
	mu      sync.Mutex
	byPart  map[connector.Partition]*snapTable
	snapSig chan struct{}
	// streamP is the stream once started, for Commit and Seek (accessed
	// atomically).
	streamP atomic.Pointer[stream]

	// inFlightBytes is the runtime's in-flight limit (LimitReadAhead), 0
	// until it is known.
	inFlightBytes int64
}

// readAheadShare is the fraction of the in-flight byte limit a batch may
// be: the stream holds at most two batches of its own (one collecting, one
// waiting for Poll), so the source keeps at most a quarter of the limit
// beside what the runtime holds.
const readAheadShare = 8

// LimitReadAhead implements connector.ReadAheadLimiter: batches are cut at
// max_batch_bytes or at an eighth of the pipeline's in-flight byte limit,
// whichever is smaller.
func (s *Source) LimitReadAhead(inFlightBytes int64) { s.inFlightBytes = inFlightBytes }

// batchBytes is the byte bound of a batch.
func (s *Source) batchBytes() int {
	b := s.cfg.MaxBatchBytes
	if s.inFlightBytes > 0 {
		b = min(b, max(s.inFlightBytes/readAheadShare, 1<<10))
	}
	return int(b)
}

// New returns a source for cfg, which must be valid.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{name: name, cfg: *cfg, byPart: map[connector.Partition]*snapTable{}, snapSig: make(chan struct{}, 1)}, nil
}

func (s *Source) slotPartName() string { return "slot/" + s.cfg.Slot }

// StateFiles implements statestore.Keeper: the snapshot's progress, unless
// snapshot is never (which keeps none).
func (s *Source) StateFiles() []string {
	if s.cfg.Snapshot == "never" {
		return nil
	}
	return []string{stateFile(s.cfg.DataDir, s.cfg.Slot)}
}

// Open connects, sets up the publication and the slot, decides whether a
// snapshot is read (see the package documentation), and assigns the
// partitions: one per table still to be read, or the slot's.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host, s.log = h, h.Logger()
	if err := s.open(ctx); err != nil {
		s.release(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

func (s *Source) open(ctx context.Context) error {
	meta, err := s.reachSQL(ctx)
	if err != nil {
		return err
	}
	s.meta, s.cat = meta, newCatalog(meta)
	if err := s.checkServer(ctx); err != nil {
		return err
	}
	tables, err := s.setupPublication(ctx)
	if err != nil {
		return err
	}
	confirmed, exists, err := s.slotState(ctx)
	if err != nil {
		return err
	}
	if s.cfg.Snapshot == "never" {
		if !exists {
			if confirmed, err = s.createSlot(ctx, tables, false); err != nil {
				return err
			}
		}
		return s.startStream(ctx, confirmed)
	}
	if s.store, err = statestore.Open(stateFile(s.cfg.DataDir, s.cfg.Slot), statestore.Options{Log: s.log, Source: s.name}); err != nil {
		return fmt.Errorf("pgcdc: %w", err)
	}
	ph, states, known, err := loadState(s.store, s.cfg.Slot)
	if err != nil {
		return err
	}
	switch {
	case !exists:
		if known && ph.Phase == phaseComplete {
			s.log.Warn("pgcdc: the slot is gone although its snapshot completed: creating it and reading the tables again", "slot", s.cfg.Slot)
		}
		_, err = s.createSlot(ctx, tables, true)
		return err
	case s.cfg.Snapshot == "always":
		if err := resetState(s.store, s.cfg.Slot, false, tables); err != nil {
			return err
		}
		return s.startSnapshot(ctx, tables, nil, "", false)
	case known && ph.Phase == phasePending:
		s.log.Info("pgcdc: resuming the snapshot in a snapshot of its own; changes since the slot's position are streamed after it", "slot", s.cfg.Slot)
		return s.startSnapshot(ctx, tables, states, "", ph.Exact)
	case !known:
		s.log.Warn("pgcdc: the slot exists but data_dir holds no snapshot of it: streaming without one (snapshot: initial reads the tables only when it creates the slot; set snapshot: always once if an earlier snapshot did not finish)",
			"slot", s.cfg.Slot, "state", s.store.Path())
	}
	return s.startStream(ctx, confirmed)
}

// createSlot creates the slot and returns its consistent point. With
// snapshot, the slot exports its snapshot and the snapshot phase starts in
// it: its rows are exactly the state at the consistent point, and the
// stream starts there. The state store is reset before the slot exists, so
// that a crash anywhere after resumes the snapshot.
func (s *Source) createSlot(ctx context.Context, tables []string, snapshot bool) (uint64, error) {
	if snapshot {
		if err := resetState(s.store, s.cfg.Slot, true, tables); err != nil {
			return 0, err
		}
	}
	var repl *pgconn.PgConn
	err := s.reach(ctx, "the server does not answer", s.cfg.peer(), func(ctx context.Context) error {
		var err error
		repl, err = s.cfg.connectReplication(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	defer repl.Close(context.WithoutCancel(ctx))
	action := "NOEXPORT_SNAPSHOT"
	if snapshot {
		action = "EXPORT_SNAPSHOT"
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, repl, s.cfg.Slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{SnapshotAction: action, Mode: pglogrepl.LogicalReplication})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42710" {
		return 0, fmt.Errorf("pgcdc: creating slot %s: another process created it at the same moment: two pipelines must not share a slot (give each its own slot): %w", s.cfg.Slot, err)
	}
	if err != nil {
		return 0, fmt.Errorf("pgcdc: creating slot %s: %w", s.cfg.Slot, err)
	}
	cp, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return 0, fmt.Errorf("pgcdc: slot %s: consistent point %q: %w", s.cfg.Slot, res.ConsistentPoint, err)
	}
	s.log.Info("pgcdc: created slot", "slot", s.cfg.Slot, "consistent_lsn", res.ConsistentPoint)
	if !snapshot {
		return uint64(cp), nil
	}
	// The exported snapshot lives as long as repl runs no other command:
	// it is imported before repl is closed.
	return uint64(cp), s.startSnapshot(ctx, tables, nil, res.SnapshotName, true)
}

// startSnapshot opens the snapshot's transaction (importing name, if any),
// describes the tables and assigns a partition to each table not done.
func (s *Source) startSnapshot(ctx context.Context, tables []string, states map[string]tableState, name string, exact bool) error {
	conn, err := s.reachSQL(ctx)
	if err != nil {
		return err
	}
	sn := &snapshot{conn: conn, exact: exact, chunk: s.cfg.SnapshotChunkRows, maxBytes: s.batchBytes(), source: s.name}
	s.snap = sn
	if err := sn.begin(ctx, name); err != nil {
		return err
	}
	s.snapPh = snapshotState{Slot: s.cfg.Slot, Phase: phasePending, Exact: exact}
	for _, q := range tables {
		st := states[q]
		if st.Done {
			continue
		}
		schema, table, _ := splitTable(q)
		t := &snapTable{schema: schema, name: table, qualified: q, partName: "snapshot/" + q, keys: map[int64][]string{}}
		if err := sn.describe(ctx, s.cat, t, s.cfg.Publication, s.version); err != nil {
			return err
		}
		if !t.keyless && st.Rows > 0 {
			if len(st.Key) != len(t.rel.key) {
				return fmt.Errorf("pgcdc: %s: the state's key has %d columns, the table's %d: the key changed during the snapshot; delete %s to read it again",
					q, len(st.Key), len(t.rel.key), s.store.Path())
			}
			t.next, t.lastKey = st.Rows, st.Key
			s.log.Info("pgcdc: resuming a table's snapshot after its committed rows", "table", q, "rows", st.Rows)
		}
		t.committed = t.next
		t.keys[t.next] = t.lastKey
		t.part = s.host.Assign(t.partName, connector.Position(t.next))
		s.mu.Lock()
		s.byPart[t.part] = t
		s.mu.Unlock()
		sn.tables = append(sn.tables, t)
	}
	s.phase = phaseSnapshotRead
	s.log.Info("pgcdc: snapshot", "slot", s.cfg.Slot, "tables", len(sn.tables), "exact", exact)
	return nil
}

// startStream assigns the slot's partition at its confirmed position and
// starts the stream's goroutine there.
func (s *Source) startStream(ctx context.Context, confirmed uint64) error {
	if confirmed == 0 {
		var err error
		if confirmed, _, err = s.slotState(ctx); err != nil {
			return err
		}
	}
	st := newStream(s, 0, confirmed)
	// The first replication connection is made here, under the start rule:
	// a slot another consumer holds is waited for, naming the holder, and
	// fails the start after connect_timeout, rather than being retried for
	// ever as a "lost" connection the source never had.
	var first *pgconn.PgConn
	err := s.reach(ctx, "the replication slot cannot be streamed", fmt.Sprintf("slot %s on %s", s.cfg.Slot, s.cfg.peer()), func(ctx context.Context) error {
		var err error
		first, err = st.connect(ctx, confirmed)
		return err
	})
	if err != nil {
		return err
	}
	s.slotPart = s.host.Assign(s.slotPartName(), connector.Position(confirmed))
	st.part = s.slotPart
	rctx, cancel := context.WithCancel(context.Background())
	s.stream, s.cancel = st, cancel
	s.streamP.Store(st)
	s.phase = phaseStream
	go st.run(rctx, confirmed, first)
	return nil
}

// reachSQL opens an ordinary connection under the start rule.
func (s *Source) reachSQL(ctx context.Context) (*pgx.Conn, error) {
	var conn *pgx.Conn
	err := s.reach(ctx, "the server does not answer", s.cfg.peer(), func(ctx context.Context) error {
		var err error
		conn, err = s.cfg.connectSQL(ctx)
		return err
	})
	return conn, err
}

// reach runs attempt under the rule every connector follows at start
// (package reach): up to connect_timeout, a warning per failed attempt
// naming peer and the cause (a slot's holder by process id and
// application_name), then an error in the same words.
func (s *Source) reach(ctx context.Context, problem, peer string, attempt func(context.Context) error) error {
	return reach.Wait(ctx, reach.Target{
		Pkg: "pgcdc", Who: "source " + s.name, Problem: problem, Peer: peer,
		Fix:   "check that the server is up and reachable from here, and that no other consumer streams the slot (each pipeline needs a slot of its own)",
		Limit: s.cfg.ConnectTimeout, Log: s.log, Fatal: unfixable, Explain: s.explainBusy,
		Attempt: func(ctx context.Context) error {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout)
			defer cancel()
			return attempt(actx)
		},
	})
}

// attemptTimeout bounds one connection attempt.
const attemptTimeout = 30 * time.Second

// explainBusy names the holder of the slot when err says another process
// streams it (55006, object in use): its process id, application_name,
// client address and since when, read from pg_stat_activity on the
// ordinary connection (when there is one yet). Other errors get the fix
// reach.PgExplain knows, if any.
// Failing reports since when the replication connection has been lost, how
// many connections and reconnections failed since, and the last error
// (pipeline.FailureReporter): the source reconnects by itself and Poll
// returns nothing meanwhile, so /readyz, /debug/stalls and the status name
// it once that has lasted stall_warning.
func (s *Source) Failing() (time.Time, int, error) {
	st := s.streamP.Load()
	if st == nil {
		return time.Time{}, 0, nil
	}
	f := st.failing.Load()
	if f == nil {
		return time.Time{}, 0, nil
	}
	return f.since, f.n, fmt.Errorf("pgcdc: slot %s: replication connection lost, reconnecting: %w", s.cfg.Slot, f.err)
}

func (s *Source) explainBusy(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55006" || s.meta == nil || s.meta.IsClosed() {
		return reach.PgExplain(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var pid *int32
	var app, client *string
	var since *time.Time
	qerr := s.meta.QueryRow(ctx, `SELECT s.active_pid, a.application_name, coalesce(host(a.client_addr), 'local'), a.backend_start
		FROM pg_catalog.pg_replication_slots s LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = s.active_pid
		WHERE s.slot_name = $1`, s.cfg.Slot).Scan(&pid, &app, &client, &since)
	if qerr != nil || pid == nil {
		return fmt.Errorf("slot %s is in use by another consumer: %w", s.cfg.Slot, err)
	}
	who := fmt.Sprintf("PID %d", *pid)
	if app != nil {
		who += fmt.Sprintf(", application_name %q", *app)
	}
	if client != nil {
		who += ", client " + *client
	}
	if since != nil {
		who += ", connected since " + since.UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("slot %s is in use by another consumer (%s): %w", s.cfg.Slot, who, err)
}

// Poll returns the next snapshot chunk or stream batch.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	if s.closed.Load() {
		return ErrClosed
	}
	for {
		// A snapshot chunk is read whatever ctx says (see pollSnapshot):
		// ctx is checked between chunks, so that polling stops when the
		// runtime asks.
		if err := ctx.Err(); err != nil {
			return err
		}
		switch s.phase {
		case phaseSnapshotRead:
			ok, err := s.pollSnapshot(ctx, b)
			if err != nil || ok {
				return err
			}
			s.phase = phaseSnapshotWait
		case phaseSnapshotWait:
			if err := s.finishSnapshot(ctx); err != nil {
				return err
			}
		default:
			return s.stream.poll(ctx, b)
		}
	}
}

// pollSnapshot reads the next chunk of the first table not read to its end;
// ok is false when every table is.
func (s *Source) pollSnapshot(ctx context.Context, b *connector.Batch) (bool, error) {
	for _, t := range s.snap.tables {
		if t.read {
			continue
		}
		b.Reset()
		// The chunk's query is not interrupted when ctx is: the runtime
		// cancels a Poll to apply a rewind, and an interrupted query
		// closes the connection, and with it the snapshot's transaction.
		// A chunk is bounded (snapshot_chunk_rows), so the wait is too.
		n, more, err := s.snap.readChunk(context.WithoutCancel(ctx), t, b)
		if err != nil {
			return false, err
		}
		t.next += int64(n)
		if !more {
			s.log.Info("pgcdc: table read to its end", "table", t.qualified, "rows", t.next)
			t.read = true
			s.mu.Lock()
			t.final, t.finalSet = t.next, true
			s.mu.Unlock()
			if n == 0 {
				continue
			}
		}
		b.Partition = t.part
		b.End = connector.Position(t.next)
		s.mu.Lock()
		t.keys[t.next] = t.lastKey
		s.mu.Unlock()
		return true, nil
	}
	return false, nil
}

// finishSnapshot waits until every table's last position is committed, so
// that no stream change reaches a sink before a snapshot row it could be
// overtaken by (a rewind of a snapshot chunk would otherwise replay an old
// row after a newer change). Then it gives the tables' partitions up,
// records the snapshot complete, and starts the stream at the slot's
// position.
func (s *Source) finishSnapshot(ctx context.Context) error {
	for {
		// A table whose last position was committed before its end was
		// known (an empty table, or one whose last chunk was full and the
		// next came back empty) gets no further commit: it is done here.
		s.mu.Lock()
		all := true
		var upd map[string]tableState
		var done []*snapTable
		for _, t := range s.snap.tables {
			switch {
			case t.done:
			case t.finalSet && t.committed == t.final:
				if upd == nil {
					upd = map[string]tableState{}
				}
				upd[t.qualified] = tableState{Rows: t.final, Key: t.keys[t.final], Done: true}
				done = append(done, t)
			default:
				all = false
			}
		}
		s.mu.Unlock()
		if upd != nil {
			if err := putTables(s.store, upd); err != nil {
				return err
			}
			s.mu.Lock()
			for _, t := range done {
				t.done = true
			}
			s.mu.Unlock()
		}
		if all {
			break
		}
		select {
		case <-s.snapSig:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	parts := make([]connector.Partition, 0, len(s.snap.tables))
	for _, t := range s.snap.tables {
		parts = append(parts, t.part)
	}
	if err := s.host.Revoke(ctx, parts...); err != nil {
		return fmt.Errorf("pgcdc: giving up the snapshot's partitions: %w", err)
	}
	s.mu.Lock()
	clear(s.byPart)
	s.mu.Unlock()
	s.snapPh.Phase = phaseComplete
	if err := setPhase(s.store, s.snapPh); err != nil {
		return err
	}
	_ = s.snap.conn.Close(context.WithoutCancel(ctx))
	s.log.Info("pgcdc: snapshot complete", "slot", s.cfg.Slot, "tables", len(s.snap.tables), "seconds", time.Since(s.snap.started).Seconds())
	s.snap = nil
	return s.startStream(ctx, 0)
}

// Commit records committed positions: a table's in the state store (with
// the key to resume after), the slot's by having it sent as the flush
// position of the next status update, which goes out at once.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var upd map[string]tableState
	var done []*snapTable
	s.mu.Lock()
	for _, c := range commits {
		t := s.byPart[c.Partition]
		if t == nil {
			continue
		}
		pos := int64(c.Position)
		if pos <= t.committed {
			continue
		}
		key, ok := t.keys[pos]
		if !ok {
			s.mu.Unlock()
			return fmt.Errorf("pgcdc: commit of %s at %d, a position no batch ended at", t.partName, pos)
		}
		if upd == nil {
			upd = map[string]tableState{}
		}
		ts := tableState{Rows: pos, Key: key}
		if t.keyless {
			ts.Key = nil
		}
		if t.finalSet && pos == t.final {
			ts.Done = true
			done = append(done, t)
		}
		upd[t.qualified] = ts
	}
	s.mu.Unlock()
	if upd != nil {
		if err := putTables(s.store, upd); err != nil {
			return err
		}
		s.mu.Lock()
		for name, ts := range upd {
			for _, t := range s.byPart {
				if t.qualified == name && ts.Rows > t.committed {
					t.committed = ts.Rows
					for e := range t.keys {
						if e < t.committed {
							delete(t.keys, e)
						}
					}
				}
			}
		}
		for _, t := range done {
			t.done = true
		}
		s.mu.Unlock()
		select {
		case s.snapSig <- struct{}{}:
		default:
		}
	}
	if st := s.streamP.Load(); st != nil {
		for _, c := range commits {
			if c.Partition == st.part {
				st.commit(uint64(c.Position))
			}
		}
	}
	return nil
}

// Seek makes the next batches of p start at pos: a table is read again from
// the row after pos's key, in the same snapshot; the slot is streamed again
// from pos.
func (s *Source) Seek(_ context.Context, p connector.Partition, pos connector.Position) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if st := s.streamP.Load(); st != nil && p == st.part {
		st.seek(uint64(pos))
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.byPart[p]
	if t == nil {
		return fmt.Errorf("pgcdc: seek of partition %d, which the source does not hold", p)
	}
	key, ok := t.keys[int64(pos)]
	if !ok {
		return fmt.Errorf("pgcdc: seek of %s to %d, a position no batch ended at", t.partName, pos)
	}
	t.next, t.lastKey, t.read = int64(pos), key, false
	t.final, t.finalSet = 0, false
	if t.keyless && t.cursor {
		// Declared again at the position: the cursor cannot go back.
		_, _ = s.snap.conn.Exec(context.Background(), "CLOSE "+cursorName(t))
		t.cursor = false
	}
	s.phase = phaseSnapshotRead
	return nil
}

// Close stops the stream (which sends the committed position a last time),
// ends the snapshot's transaction and drops the slot when asked to.
func (s *Source) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.release(ctx)
}

func (s *Source) release(ctx context.Context) error {
	var errs []error
	if st := s.stream; st != nil {
		st.stop()
		select {
		case <-st.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("pgcdc: closing: %w", ctx.Err()))
		}
		s.cancel()
	}
	if s.snap != nil {
		_ = s.snap.conn.Close(ctx)
	}
	if s.cfg.DropSlotOnClose && s.meta != nil && s.stream != nil {
		if err := s.dropSlot(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.meta != nil {
		_ = s.meta.Close(ctx)
	}
	if s.store != nil {
		if err := s.store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var _ connector.ReadAheadLimiter = (*Source)(nil)
