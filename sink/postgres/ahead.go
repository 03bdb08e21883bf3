package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Copying ahead.
//
// The runtime persists sealed groups one at a time, in order, and a group's
// transaction locks its partitions' positions rows first, so on one
// connection the server idles while a COMMIT's WAL flush and the round trips
// around it go by, and a group's COPY never overlaps another's. So Seal
// starts the sealed group's transaction at once, on a connection of its own:
// BEGIN and the COPY of all its rows (into the staging table in upsert mode),
// while the groups sealed before it are copied and committed. Rows copied in
// a transaction that has not committed are seen by no one, and nothing the
// copy does decides what is written: the group's Persist, in its turn, locks
// the positions rows on that connection and reads them as the classic path
// does, and commits only if they cover none of the group's rows (the common
// case: every earlier group of the partition is committed, and its positions
// are what this group starts from). If they cover some (a process that lost
// the partition, a COMMIT whose answer was lost), or the copy failed (a
// refused row, a lost connection), Persist rolls the copy back and runs the
// group's transaction the classic way, which leaves the covered rows out or
// finds the refused ones. So the fence is the same row lock, read at the same
// moment relative to the COMMIT; only the COPY moved ahead of it.
//
// Groups copy in the order they were sealed: a group's COPY starts once the
// group sealed before it has copied its rows (ahead or in its Persist). So a
// column the server fills as rows arrive (an identity, a sequence's default,
// clock_timestamp()) numbers the rows in the order they commit, as it did
// with one group at a time; what overlaps is one group's COPY with the
// locking, storing and COMMIT of the one before. The one exception is a
// group copied ahead whose rows stored positions partly cover: it is copied
// again, the classic way, after later groups may have copied.
//
// At most max_conns - 1 groups copy ahead at once (a group sealed when none is
// free runs the classic way), so one connection is always left for a classic
// transaction and for reading stored positions: a Persist never waits for a
// connection that a later group's copy holds.

// turn orders the groups' COPYs: done is closed when the group's rows have
// been copied, or when the group will not copy them any more; a group's COPY
// waits for the done of the group sealed before it (prev).
type turn struct {
	prev <-chan struct{} // nil for the first group
	done chan struct{}
	once sync.Once
}

// copied closes done. Calling it again does nothing; calling it on nil
// does nothing.
func (t *turn) copied() {
	if t != nil {
		t.once.Do(func() { close(t.done) })
	}
}

// nextTurn returns the turn of the group being sealed.
func (s *Sink) nextTurn() *turn {
	t := &turn{prev: s.lastTurn, done: make(chan struct{})}
	s.lastTurn = t.done
	return t
}

// ahead is one sealed group's transaction begun by Seal.
type ahead struct {
	s      *Sink
	done   chan struct{} // closed when the copy has ended
	cancel context.CancelFunc
	conn   *pgxpool.Conn // the transaction's connection, when err is nil
	err    error
	once   sync.Once
}

// copyAhead starts g's transaction and COPY on a connection of their own, or
// returns nil when no slot is free (or the group is empty).
func (s *Sink) copyAhead(g *group) *ahead {
	if s.aheadSlots == nil || g.rows() == 0 {
		return nil
	}
	select {
	case s.aheadSlots <- struct{}{}:
	default:
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &ahead{s: s, done: make(chan struct{}), cancel: cancel}
	s.aheadMu.Lock()
	s.aheads[a] = struct{}{}
	s.aheadMu.Unlock()
	s.aheadWG.Add(1)
	go func() {
		defer s.aheadWG.Done()
		defer close(a.done)
		a.conn, a.err = s.copyRows(ctx, g)
	}()
	return a
}

// copyRows begins a transaction on a connection of the pool and copies all
// rows of g in it; the transaction stays open.
func (s *Sink) copyRows(ctx context.Context, g *group) (*pgxpool.Conn, error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	begin := "BEGIN"
	if s.upsert {
		begin = "BEGIN; " + s.sql.createStage
	}
	if err := s.exec(ctx, conn, begin); err != nil {
		s.rollback(conn)
		conn.Release()
		return nil, err
	}
	if g.turn.prev != nil {
		select {
		case <-g.turn.prev:
		case <-ctx.Done():
			s.rollback(conn)
			conn.Release()
			return nil, ctx.Err()
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	if _, err := conn.Conn().PgConn().CopyFrom(cctx, newRowReader(g, nil, s.upsert), s.sql.copy); err != nil {
		// The turn stays: the classic COPY in Persist takes it.
		s.rollback(conn)
		conn.Release()
		return nil, err
	}
	g.turn.copied()
	return conn, nil
}

// take waits for the copy and returns its connection, with the transaction
// open and the rows copied, or nil when the copy failed (it is then over).
func (a *ahead) take(ctx context.Context) *pgxpool.Conn {
	select {
	case <-a.done:
	case <-ctx.Done():
		a.abort()
		return nil
	}
	if a.err != nil {
		a.end()
		return nil
	}
	return a.conn
}

// end waits for the copy to end (it ends within the call timeout, or once
// the group sealed before it has copied or given up), rolls the transaction
// back if it is still open, gives its connection back, and frees the slot.
// Calling it again does nothing.
func (a *ahead) end() { a.once.Do(a.close) }

// abort is end without waiting for the copy: it is cancelled, which may
// cost its connection. For a Persist whose context ended, and Close.
func (a *ahead) abort() {
	a.cancel()
	a.end()
}

func (a *ahead) close() {
	<-a.done
	a.cancel()
	if a.err == nil && a.conn != nil {
		a.s.rollback(a.conn)
		a.conn.Release()
	}
	a.conn = nil
	a.s.aheadMu.Lock()
	delete(a.s.aheads, a)
	a.s.aheadMu.Unlock()
	<-a.s.aheadSlots
}

// released notes that the connection was given back by its user, after a
// COMMIT or a rollback of its own.
func (a *ahead) released() {
	a.conn = nil
	a.end()
}

// endAhead ends every copy still open, for Close.
func (s *Sink) endAhead() {
	s.aheadMu.Lock()
	open := make([]*ahead, 0, len(s.aheads))
	for a := range s.aheads {
		open = append(open, a)
	}
	s.aheadMu.Unlock()
	for _, a := range open {
		a.abort()
	}
	s.aheadWG.Wait()
}

// commitAhead is commit for a group whose rows a's transaction copied: it
// locks and reads the positions rows on that connection and, when they cover
// none of the group's rows, stores the group's positions and commits. ok is
// false when the group must go the classic way instead (the copy failed, or
// stored positions cover some of its rows); the copy is then rolled back.
func (s *Sink) commitAhead(ctx context.Context, g *group, a *ahead) (out commitOutcome, ok bool, err error) {
	conn := a.take(ctx)
	if conn == nil {
		return out, false, nil
	}
	defer a.released()
	defer conn.Release()
	stored, err := s.lockPositions(ctx, conn, g, false)
	if err != nil {
		// The transaction waited long enough for the server to end it
		// (idle_in_transaction_session_timeout, a terminated backend), or
		// the server is gone: the classic way tells the two apart.
		s.rollback(conn)
		return out, false, nil
	}
	s.at("begun")
	if s.selectRows(g, stored) != nil {
		s.rollback(conn)
		return out, false, nil
	}
	if s.upsert {
		if err := s.exec(ctx, conn, s.sql.upsert); err != nil {
			s.rollback(conn)
			return out, true, s.refusedOrPlain(ctx, conn, g, nil, err)
		}
	}
	s.at("rows-copied")
	out.rows = g.rows()
	return out, true, s.finish(ctx, conn, g, nil)
}
