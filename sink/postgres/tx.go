package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weir-etl/weir/connector"
)

// statements are the sink's SQL, built once from the configuration with
// every name quoted.
type statements struct {
	copy        string // COPY of the rows: into the table, or into the staging table in upsert mode
	createStage string // upsert mode: the session's staging table, when missing
	upsert      string // upsert mode: from the staging table into the table
	clearStage  string // upsert mode: empty the staging table (within a search)

	createPositions string
	placeholders    string // positions rows for partitions about to be written the first time
	lock            string // read and lock the positions of a group's partitions
	store           string // store a group's positions
	stored          string // StoredPositions
}

// stageName is the upsert staging table, one per session (TEMP).
const stageName = "weir_stage"

// seqColumn orders a group's rows in the staging table; its odd name keeps it
// clear of the table's own columns.
const (
	seqColumnName = "weir$seq"
	seqColumn     = `"` + seqColumnName + `"`
)

func buildStatements(c *Config, table, positions qualified) statements {
	var cols, keys, set []string
	for _, col := range c.Columns {
		cols = append(cols, quoteIdent(col.Name))
	}
	for _, k := range c.Key {
		keys = append(keys, quoteIdent(k))
	}
	for _, col := range c.Columns {
		if !containsStr(c.Key, col.Name) {
			set = append(set, quoteIdent(col.Name)+" = EXCLUDED."+quoteIdent(col.Name))
		}
	}
	colList := strings.Join(cols, ", ")
	var st statements
	if c.Mode == ModeUpsert {
		stage := "pg_temp." + quoteIdent(stageName)
		st.copy = fmt.Sprintf("COPY %s (%s, %s) FROM STDIN", stage, seqColumn, colList)
		st.createStage = fmt.Sprintf("CREATE TEMP TABLE IF NOT EXISTS %s ON COMMIT DELETE ROWS AS SELECT 0::bigint AS %s, %s FROM %s WITH NO DATA",
			quoteIdent(stageName), seqColumn, colList, table.sql())
		action := "DO NOTHING"
		if len(set) > 0 {
			action = "DO UPDATE SET " + strings.Join(set, ", ")
		}
		// DISTINCT ON keeps the last row of each key (the highest order
		// number): one INSERT may not touch a row twice, and the last record
		// of a key is the one an upsert per record would have left.
		st.upsert = fmt.Sprintf("INSERT INTO %s AS t (%s) SELECT DISTINCT ON (%s) %s FROM %s ORDER BY %s, %s DESC ON CONFLICT (%s) %s",
			table.sql(), colList, strings.Join(keys, ", "), colList, stage, strings.Join(keys, ", "), seqColumn, strings.Join(keys, ", "), action)
		st.clearStage = "DELETE FROM " + stage
	} else {
		st.copy = fmt.Sprintf("COPY %s (%s) FROM STDIN", table.sql(), colList)
	}
	p := positions.sql()
	st.createPositions = fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
	"pipeline" text NOT NULL,
	"sink" text NOT NULL,
	"source" text NOT NULL,
	"partition" text NOT NULL,
	"position" bigint NOT NULL,
	"updated_at" timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY ("pipeline", "sink", "source", "partition"))`, p)
	st.placeholders = fmt.Sprintf(`INSERT INTO %s ("pipeline", "sink", "source", "partition", "position", "updated_at")
	SELECT $1, $2, u.s, u.p, 0, now() FROM unnest($3::text[], $4::text[]) AS u(s, p)
	ON CONFLICT DO NOTHING`, p)
	st.lock = fmt.Sprintf(`SELECT "source", "partition", "position" FROM %s
	WHERE "pipeline" = $1 AND "sink" = $2 AND ("source", "partition") IN (SELECT * FROM unnest($3::text[], $4::text[]))
	FOR UPDATE`, p)
	st.store = fmt.Sprintf(`INSERT INTO %s AS w ("pipeline", "sink", "source", "partition", "position", "updated_at")
	SELECT $1, $2, u.s, u.p, u.n, now() FROM unnest($3::text[], $4::text[], $5::bigint[]) AS u(s, p, n)
	ON CONFLICT ("pipeline", "sink", "source", "partition")
	DO UPDATE SET "position" = GREATEST(w."position", EXCLUDED."position"), "updated_at" = EXCLUDED."updated_at"`, p)
	st.stored = fmt.Sprintf(`SELECT "partition", "position" FROM %s
	WHERE "pipeline" = $1 AND "sink" = $2 AND "source" = $3 AND "partition" = ANY($4::text[])`, p)
	return st
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// callTimeout bounds one round trip on the client side: the server gives up
// on a statement after statement_timeout, and a server that stopped
// answering altogether is given up on a little later.
func (s *Sink) callTimeout() time.Duration { return s.cfg.StatementTimeout + 10*time.Second }

// exec runs sql (one or more statements, no parameters) on conn.
func (s *Sink) exec(ctx context.Context, conn *pgxpool.Conn, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	_, err := conn.Conn().PgConn().Exec(ctx, sql).ReadAll()
	return err
}

// rollback ends a failed transaction. A connection that cannot even do that
// is closed, so that the pool does not hand it out again.
func (s *Sink) rollback(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), s.callTimeout())
	defer cancel()
	if _, err := conn.Conn().PgConn().Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
		conn.Conn().PgConn().Close(ctx)
	}
}

// writeRows writes rows sel of g within the open transaction: COPY, and in
// upsert mode the INSERT from the staging table. Within a search (probe) the
// staging table is emptied afterwards, for the next probe.
func (s *Sink) writeRows(ctx context.Context, conn *pgxpool.Conn, g *group, sel []int, probe bool) error {
	cctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	if _, err := conn.Conn().PgConn().CopyFrom(cctx, newRowReader(g, sel, s.upsert), s.sql.copy); err != nil {
		return err
	}
	if !s.upsert {
		return nil
	}
	if err := s.exec(ctx, conn, s.sql.upsert); err != nil {
		return err
	}
	if probe {
		return s.exec(ctx, conn, s.sql.clearStage)
	}
	return nil
}

// commitOutcome is what one group's transaction did.
type commitOutcome struct {
	rows, skipped int
}

// commit writes group g in one transaction: it locks and reads the stored
// positions of the group's partitions, leaves out the rows they already
// cover, writes the rest, stores the group's positions, and commits. It
// returns nil only once COMMIT has returned.
//
// Reading the stored positions under a row lock is what keeps the sink
// exactly-once where the runtime alone cannot: a process that lost a
// partition but still commits a group, or a COMMIT whose answer was lost
// with the connection (the group is retried although it is in the table).
// Either way the rows the positions already cover are not written twice.
func (s *Sink) commit(ctx context.Context, g *group) (commitOutcome, error) {
	var out commitOutcome
	conn, err := s.acquire(ctx)
	if err != nil {
		return out, err
	}
	defer conn.Release()

	stored, err := s.lockPositions(ctx, conn, g, true)
	if err != nil {
		s.rollback(conn)
		return out, s.wrap("beginning the transaction", err)
	}
	s.at("begun")

	sel := s.selectRows(g, stored)
	out.rows = g.rows()
	if sel != nil {
		out.rows = len(sel)
	}
	out.skipped = g.rows() - out.rows
	if out.rows > 0 {
		if err := s.writeRows(ctx, conn, g, sel, false); err != nil {
			// The turn stays until the search for refused rows is over
			// (Persist ends it): a later group's COPY could otherwise hold
			// a key the search's COPY must wait for.
			s.rollback(conn)
			return out, s.refusedOrPlain(ctx, conn, g, sel, err)
		}
	}
	g.turn.copied()
	s.at("rows-copied")
	return out, s.finish(ctx, conn, g, sel)
}

// lockPositions sends, in one round trip, BEGIN (when begin is set; and in
// upsert mode the staging table's creation), the placeholder positions rows
// of partitions written the first time, and the SELECT … FOR UPDATE of the
// group's positions rows, and returns the positions read.
func (s *Sink) lockPositions(ctx context.Context, conn *pgxpool.Conn, g *group, begin bool) (map[partKey]int64, error) {
	b := &pgx.Batch{}
	if begin {
		b.Queue("BEGIN")
		if s.upsert {
			b.Queue(s.sql.createStage)
		}
	}
	var stored map[partKey]int64
	// Records without an origin (built by hand, not read by a source) have
	// no position to fence them with.
	var srcs, parts []string
	for _, p := range g.parts {
		if p.key.source != "" {
			srcs, parts = append(srcs, p.key.source), append(parts, p.key.partition)
		}
	}
	if s.keepPositions() && len(parts) > 0 {
		if us, up := s.unknown(g); len(up) > 0 {
			// A positions row to lock even for a partition written for the
			// first time, so two writers of it cannot both miss each other.
			b.Queue(s.sql.placeholders, s.pipeline, s.name, us, up)
		}
		b.Queue(s.sql.lock, s.pipeline, s.name, srcs, parts).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var k partKey
				var pos int64
				if err := rows.Scan(&k.source, &k.partition, &pos); err != nil {
					return err
				}
				if stored == nil {
					stored = map[partKey]int64{}
				}
				stored[k] = pos
			}
			return rows.Err()
		})
	}
	if b.Len() == 0 {
		return nil, nil
	}
	bctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	return stored, conn.SendBatch(bctx, b).Close()
}

// finish stores the group's positions and commits, in one round trip, the
// group's rows (sel of them, or all for nil) being written in the open
// transaction.
func (s *Sink) finish(ctx context.Context, conn *pgxpool.Conn, g *group, sel []int) error {
	if err := s.unsafeSplitPositions(ctx, conn); err != nil {
		return err
	}
	b := &pgx.Batch{}
	keeping := s.keepPositions()
	if keeping && len(g.positions) > 0 {
		ps, pp, pn := s.positionArgs(g.positions)
		b.Queue(s.sql.store, s.pipeline, s.name, ps, pp, pn)
	}
	var tag string
	b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error {
		tag = ct.String()
		return nil
	})
	bctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	err := conn.SendBatch(bctx, b).Close()
	cancel()
	if err != nil {
		s.rollback(conn)
		// A deferred constraint fails at COMMIT: that is a row's fault too.
		return s.refusedOrPlain(ctx, conn, g, sel, err)
	}
	if tag != "COMMIT" {
		return s.wrap("committing", fmt.Errorf("the server answered %q to COMMIT: the transaction was rolled back", tag))
	}
	if keeping {
		s.noteKnown(g)
	}
	s.at("committed")
	return nil
}

// selectRows returns the rows of g that stored positions do not cover, or nil
// for all of them (the common case, found from each partition's smallest
// offset without looking at the rows).
func (s *Sink) selectRows(g *group, stored map[partKey]int64) []int {
	covered := false
	for _, p := range g.parts {
		if pos, ok := stored[p.key]; ok && p.minOff < pos {
			covered = true
		}
	}
	if !covered {
		return nil
	}
	sel := make([]int, 0, g.rows())
	for i, o := range g.origins {
		if pos, ok := stored[partKey{o.Source, o.Partition}]; ok && o.Offset < pos {
			continue
		}
		sel = append(sel, i)
	}
	return sel
}

func (s *Sink) positionArgs(ps []connector.GroupPosition) (srcs, parts []string, pos []int64) {
	srcs, parts, pos = make([]string, len(ps)), make([]string, len(ps)), make([]int64, len(ps))
	for i, p := range ps {
		srcs[i], parts[i], pos[i] = p.Source, p.Partition, int64(p.Position)
	}
	return srcs, parts, pos
}

// refusedOrPlain turns a failed write into the error Flush or Persist
// returns. For a data error it first finds the refused rows (see
// refuse.go), so that the group's next write rejects them.
func (s *Sink) refusedOrPlain(ctx context.Context, conn *pgxpool.Conn, g *group, sel []int, err error) error {
	if _, isData := dataError(err); !isData {
		return s.wrap("writing the group", err)
	}
	bad, serr := s.findRefused(ctx, conn, g, sel)
	if serr != nil {
		return s.wrap("writing the group", fmt.Errorf("%w; then, searching the group for the refused rows: %v", err, serr))
	}
	if len(bad) == 0 {
		return s.wrap("writing the group", fmt.Errorf("%w (no single row of the group is refused alone; the group is retried)", err))
	}
	for _, b := range bad {
		o := g.origins[b.row]
		s.bad.add(s.bad.fingerprint(o, g.row(b.row)), &RefusedError{Sink: s.name, Origin: o, Column: columnOf(b.err), Err: b.err})
	}
	s.refused.Add(int64(len(bad)))
	first := bad[0]
	return s.wrap("writing the group", fmt.Errorf("PostgreSQL refused %d row(s), the first of record %s: %s [SQLSTATE %s]; they are rejected when the group is written again",
		len(bad), originString(g.origins[first.row]), first.err.Message, first.err.Code))
}
