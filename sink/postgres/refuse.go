package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weir-etl/weir/record"
)

// Finding a refused row.
//
// COPY and INSERT ... SELECT succeed or fail as a whole: a row the server
// refuses for its data (a constraint, a value its type cannot hold) fails the
// group's transaction, and the runtime only learns which record to reject
// from Write. So when a group's transaction fails with a data error, the sink
// searches the group for the refused rows in a transaction of its own that it
// rolls back: it writes the rows under a savepoint; when the write fails, the
// error's COPY line number, when it has one, names the row (the rows before
// it are written again, the row is set aside, and the search goes on after
// it), otherwise the rows are split in halves and each half searched. Rows
// found good stay written under the search's transaction, so a row that
// conflicts with an earlier row of the group (a duplicate key) is the one
// found. Deferred constraints are made immediate for the search. The cost is
// a few statements per refused row, on the failure path only.
//
// The sink remembers each refused row by a fingerprint of its record (origin
// and encoded row) and fails the Flush or Persist. The runtime then writes
// the group again; Write recognises the refused records by their fingerprints
// and rejects them (a *connector.RejectError naming the column), so they go
// to the failure policy alone (a dead letter sink, say) and the rest of the
// group commits. Finding and rejecting therefore take one retry of the
// group: the runtime's retry.max_attempts must be at least 2.

// dataError returns the server error behind err when it is about the data of
// a row: class 22 (data exception), class 23 (integrity constraint
// violation), or 54000 (a value too large for an index). Anything else
// (a lost connection, a serialization failure, a timeout, a missing table)
// is no row's fault, and the group is simply retried.
func dataError(err error) (*pgconn.PgError, bool) {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return nil, false
	}
	switch {
	case len(pg.Code) == 5 && (pg.Code[:2] == "22" || pg.Code[:2] == "23"):
		return pg, true
	case pg.Code == "54000":
		return pg, true
	}
	return pg, false
}

var (
	copyLineRE = regexp.MustCompile(`COPY .*, line (\d+)`)
	columnRE   = regexp.MustCompile(`, column ([^:]+):`)
	keyRE      = regexp.MustCompile(`^Key \(([^)]*)\)`)
)

// copyLine returns the 1-based line of the COPY data the error is about, or 0.
func copyLine(pg *pgconn.PgError) int {
	m := copyLineRE.FindAllStringSubmatch(pg.Where, -1)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// RefusedError is a row the server refused for its data: the record's
// rejection, naming the column (or the key columns of a violated unique
// constraint) when the server says which.
type RefusedError struct {
	Sink   string
	Origin record.Origin
	Column string // "" when the server does not say
	Err    *pgconn.PgError
}

// Error names the record, the column and the server's message.
func (e *RefusedError) Error() string {
	col := ""
	if e.Column != "" {
		col = "column " + e.Column + ": "
	}
	msg := e.Err.Message
	if e.Err.Detail != "" {
		msg += " (" + e.Err.Detail + ")"
	}
	return fmt.Sprintf("sink/postgres: sink %s: PostgreSQL refused the row of record %s: %s%s [SQLSTATE %s]",
		e.Sink, originString(e.Origin), col, msg, e.Err.Code)
}

// Unwrap returns the server's error.
func (e *RefusedError) Unwrap() error { return e.Err }

func originString(o record.Origin) string {
	if o.Source == "" && o.Partition == "" {
		return fmt.Sprintf("at offset %d", o.Offset)
	}
	return fmt.Sprintf("%s %s@%d", o.Source, o.Partition, o.Offset)
}

// columnOf says which column a refusal is about, as best the error tells.
func columnOf(pg *pgconn.PgError) string {
	if pg.ColumnName != "" {
		return pg.ColumnName
	}
	if m := columnRE.FindStringSubmatch(pg.Where); m != nil {
		return m[1]
	}
	if m := keyRE.FindStringSubmatch(pg.Detail); m != nil {
		return m[1]
	}
	if pg.ConstraintName != "" {
		return "(constraint " + pg.ConstraintName + ")"
	}
	return ""
}

// refused is a row found refused in a search.
type refused struct {
	row int
	err *pgconn.PgError
}

// badSet holds the fingerprints of refused records until Write rejects them.
// The persister adds to it, the sink's goroutine takes from it; n lets Write
// skip it without a lock while it is empty, which is always but after a
// refusal.
type badSet struct {
	n    atomic.Int64
	mu   sync.Mutex
	m    map[uint64][]error
	seed maphash.Seed
}

func (b *badSet) fingerprint(o record.Origin, row []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(b.seed)
	h.WriteString(o.Source)
	h.WriteByte(0)
	h.WriteString(o.Partition)
	h.WriteByte(0)
	var off [8]byte
	for i := range off {
		off[i] = byte(o.Offset >> (8 * i))
	}
	h.Write(off[:])
	h.Write(row)
	return h.Sum64()
}

func (b *badSet) add(fp uint64, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[uint64][]error{}
	}
	b.m[fp] = append(b.m[fp], err)
	b.n.Add(1)
}

// take removes and returns the error of a refused record with fingerprint fp,
// or nil. Two equal records in a group of which the server refused one (the
// second of a duplicate key) share a fingerprint; the first of them met is
// rejected, and the other is then the one written, which is the same row.
func (b *badSet) take(fp uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := b.m[fp]
	if len(errs) == 0 {
		return nil
	}
	err := errs[0]
	if len(errs) == 1 {
		delete(b.m, fp)
	} else {
		b.m[fp] = errs[1:]
	}
	b.n.Add(-1)
	return err
}

// clear forgets every refused record not met again: once a group commits,
// a record still listed was not in it (the runtime gave its group up), and a
// later write of it is tried afresh.
func (b *badSet) clear() {
	if b.n.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.m)
	b.n.Store(0)
}

// findRefused searches rows sel of g (every row when sel is nil) for the rows
// the server refuses, in a transaction of its own that it rolls back.
func (s *Sink) findRefused(ctx context.Context, conn *pgxpool.Conn, g *group, sel []int) ([]refused, error) {
	if sel == nil {
		sel = make([]int, g.rows())
		for i := range sel {
			sel[i] = i
		}
	}
	if err := s.exec(ctx, conn, "BEGIN"); err != nil {
		return nil, err
	}
	defer s.rollback(conn)
	if err := s.exec(ctx, conn, "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
		return nil, err
	}
	if s.upsert {
		if err := s.exec(ctx, conn, s.sql.createStage); err != nil {
			return nil, err
		}
	}
	var bad []refused
	var probe func(rows []int) error
	probe = func(rows []int) error {
		if len(rows) == 0 {
			return nil
		}
		if err := s.exec(ctx, conn, "SAVEPOINT weir_probe"); err != nil {
			return err
		}
		werr := s.writeRows(ctx, conn, g, rows, true)
		if werr == nil {
			return s.exec(ctx, conn, "RELEASE SAVEPOINT weir_probe")
		}
		pg, isData := dataError(werr)
		if !isData {
			return werr
		}
		if err := s.exec(ctx, conn, "ROLLBACK TO SAVEPOINT weir_probe; RELEASE SAVEPOINT weir_probe"); err != nil {
			return err
		}
		if len(rows) == 1 {
			bad = append(bad, refused{rows[0], pg})
			return nil
		}
		if line := copyLine(pg); line >= 1 && line <= len(rows) {
			if err := probe(rows[:line-1]); err != nil {
				return err
			}
			bad = append(bad, refused{rows[line-1], pg})
			return probe(rows[line:])
		}
		h := len(rows) / 2
		if err := probe(rows[:h]); err != nil {
			return err
		}
		return probe(rows[h:])
	}
	if err := probe(sel); err != nil {
		return nil, err
	}
	return bad, nil
}
