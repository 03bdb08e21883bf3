package pgcdc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// snapTable is one table of the snapshot: its own partition, whose position
// is the number of rows read in key order.
type snapTable struct {
	schema, name string
	qualified    string // schema.table, the state's and the partition's name
	rel          *relation
	part         connector.Partition
	partName     string
	sel          string // SELECT list and FROM, with the publication's row filter as a WHERE
	filtered     bool   // sel has a WHERE
	keyCasts     []string
	keyless      bool // no key: read through a cursor, restarted on resume

	// Read by the polling goroutine only.
	next    int64    // position of the next row to read
	lastKey []string // key text of the row before next; nil at the start
	read    bool     // read to its end
	cursor  bool     // keyless: the cursor is declared
	// limit is how many rows the next chunk asks for: a first small
	// chunk measures the rows, then as many as fit max_batch_bytes, at
	// most snapshot_chunk_rows.
	limit int

	// Shared with Commit, under Source.mu.
	keys      map[int64][]string // batch End → key text of the row before it, for ends not yet committed
	committed int64
	final     int64 // when read: the position after the last row
	finalSet  bool
	done      bool // final committed and recorded in the state store
}

// snapshot reads the tables in one REPEATABLE READ transaction: the slot's
// exported snapshot when the slot was just created (exact), or a snapshot of
// its own when a stopped snapshot resumes (see the package documentation).
type snapshot struct {
	conn    *pgx.Conn
	exact   bool
	started time.Time
	chunk   int
	// maxBytes bounds a chunk's records (the source's batchBytes).
	maxBytes int
	tables   []*snapTable
	enc      encoder
	fields   []field
	keyBuf   [][]byte
	source   string
}

// begin opens the snapshot's transaction, importing name when it is not
// empty (a snapshot exported by CREATE_REPLICATION_SLOT).
func (sn *snapshot) begin(ctx context.Context, name string) error {
	if _, err := sn.conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("pgcdc: starting the snapshot's transaction: %w", err)
	}
	if name != "" {
		if _, err := sn.conn.Exec(ctx, "SET TRANSACTION SNAPSHOT "+quoteLiteral(name)); err != nil {
			return fmt.Errorf("pgcdc: importing the slot's snapshot %s: %w", name, err)
		}
	}
	// A keyless table is read in physical order; a synchronized scan could
	// start mid-table and make a re-read differ.
	if _, err := sn.conn.Exec(ctx, "SET LOCAL synchronize_seqscans = off"); err != nil {
		return fmt.Errorf("pgcdc: snapshot settings: %w", err)
	}
	sn.started = time.Now()
	return nil
}

// describe reads a table's published columns, key and row filter inside the
// snapshot's transaction, so that they are the table's as of the snapshot.
func (sn *snapshot) describe(ctx context.Context, lk lookup, t *snapTable, pub string, version int) error {
	var relid uint32
	err := sn.conn.QueryRow(ctx, `SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, t.schema, t.name).Scan(&relid)
	if err != nil {
		return fmt.Errorf("pgcdc: table %s: %w", t.qualified, err)
	}
	var pubCols []string
	var filter *string
	if version >= 150000 {
		// Publications may publish some columns only and some rows only
		// (PostgreSQL 15): the snapshot reads what the stream would send.
		err := sn.conn.QueryRow(ctx, `SELECT attnames, rowfilter FROM pg_catalog.pg_publication_tables
			WHERE pubname = $1 AND schemaname = $2 AND tablename = $3`, pub, t.schema, t.name).Scan(&pubCols, &filter)
		if err != nil {
			return fmt.Errorf("pgcdc: table %s in publication %s: %w", t.qualified, pub, err)
		}
	}
	rows, err := sn.conn.Query(ctx, `SELECT attname, atttypid, format_type(atttypid, NULL) FROM pg_catalog.pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`, relid)
	if err != nil {
		return fmt.Errorf("pgcdc: columns of %s: %w", t.qualified, err)
	}
	var names, typeNames []string
	var oids []uint32
	for rows.Next() {
		var n, tn string
		var oid uint32
		if err := rows.Scan(&n, &oid, &tn); err != nil {
			rows.Close()
			return fmt.Errorf("pgcdc: columns of %s: %w", t.qualified, err)
		}
		if pubCols != nil && !contains(pubCols, n) {
			continue
		}
		names, oids, typeNames = append(names, n), append(oids, oid), append(typeNames, tn)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgcdc: columns of %s: %w", t.qualified, err)
	}
	rel, err := newRelation(ctx, lk, relid, t.schema, t.name, names, oids, make([]bool, len(names)))
	if err != nil {
		return err
	}
	t.rel = rel
	table := pgx.Identifier{t.schema, t.name}.Sanitize()
	var sel strings.Builder
	sel.WriteString("SELECT ")
	for i, n := range names {
		if i > 0 {
			sel.WriteString(", ")
		}
		sel.WriteString(pgx.Identifier{n}.Sanitize())
	}
	sel.WriteString(" FROM ")
	sel.WriteString(table)
	if filter != nil && *filter != "" {
		sel.WriteString(" WHERE (")
		sel.WriteString(*filter)
		sel.WriteString(")")
		t.filtered = true
	}
	t.sel = sel.String()
	t.keyless = len(rel.key) == 0
	t.keyCasts = t.keyCasts[:0]
	for _, i := range rel.key {
		t.keyCasts = append(t.keyCasts, typeNames[i])
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// probeRows is the size of a table's first chunk, which measures its rows
// before a chunk of many is asked for.
const probeRows = 16

// nextLimit is how many rows t's next chunk asks for.
func (sn *snapshot) nextLimit(t *snapTable) int {
	if t.limit == 0 {
		return min(sn.chunk, probeRows)
	}
	return t.limit
}

// measured sets t's next limit from a chunk of n rows and size bytes: as
// many rows of that average size as fit maxBytes, at least one and at most
// snapshot_chunk_rows.
func (sn *snapshot) measured(t *snapTable, n, size int) {
	if n == 0 || size == 0 {
		return
	}
	t.limit = min(max(sn.maxBytes/max(size/n, 1), 1), sn.chunk)
}

// query returns the next chunk's query and parameters, for limit rows.
func (sn *snapshot) query(t *snapTable, limit int) (string, [][]byte) {
	var q strings.Builder
	q.WriteString(t.sel)
	var params [][]byte
	if t.lastKey != nil {
		if t.filtered {
			q.WriteString(" AND ")
		} else {
			q.WriteString(" WHERE ")
		}
		q.WriteString("(")
		for j, i := range t.rel.key {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString(pgx.Identifier{t.rel.cols[i].name}.Sanitize())
		}
		q.WriteString(") > (")
		for j := range t.rel.key {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString("$" + strconv.Itoa(j+1) + "::" + t.keyCasts[j])
			params = append(params, []byte(t.lastKey[j]))
		}
		q.WriteString(")")
	}
	q.WriteString(" ORDER BY ")
	for j, i := range t.rel.key {
		if j > 0 {
			q.WriteString(", ")
		}
		q.WriteString(pgx.Identifier{t.rel.cols[i].name}.Sanitize())
	}
	q.WriteString(" LIMIT " + strconv.Itoa(limit))
	return q.String(), params
}

func cursorName(t *snapTable) string { return "weir_snapshot_" + strconv.Itoa(int(t.part)) }

// readChunk reads t's next chunk into b. It returns the number of rows read,
// and more when the table may hold more rows (the chunk was full, or cut).
//
// A chunk is bounded by bytes as well as rows, so that wide rows cannot
// make a batch of snapshot_chunk_rows of them (1,500 rows of 1 MiB took
// 1.58 GB before, issue 25): the number of rows asked for follows the size
// of the rows read so far (measured), and a chunk of a table with a key is
// cut after the row that reaches maxBytes, the next chunk starting after
// that row's key (the rest of the result is read and dropped by the
// client). A keyless table's chunk is never cut, since its cursor has moved
// past the rows fetched; only the rows asked for follow the measure.
func (sn *snapshot) readChunk(ctx context.Context, t *snapTable, b *connector.Batch) (int, bool, error) {
	limit := sn.nextLimit(t)
	pc := sn.conn.PgConn()
	var rr interface {
		NextRow() bool
		Values() [][]byte
	}
	var closeFn func() error
	if t.keyless {
		if !t.cursor {
			// A keyless table restarts from its first row (t.next is 0
			// then, or a rewind's position, which MOVE skips to).
			if _, err := pc.Exec(ctx, "DECLARE "+cursorName(t)+" NO SCROLL CURSOR FOR "+t.sel+"; MOVE FORWARD "+strconv.FormatInt(t.next, 10)+" FROM "+cursorName(t)).ReadAll(); err != nil {
				return 0, false, fmt.Errorf("pgcdc: snapshot of %s: %w", t.qualified, err)
			}
			t.cursor = true
		}
		res := pc.ExecParams(ctx, "FETCH FORWARD "+strconv.Itoa(limit)+" FROM "+cursorName(t), nil, nil, nil, nil)
		rr, closeFn = res, func() error { _, err := res.Close(); return err }
	} else {
		q, params := sn.query(t, limit)
		res := pc.ExecParams(ctx, q, params, nil, nil, nil)
		rr, closeFn = res, func() error { _, err := res.Close(); return err }
	}
	n, size, cut := 0, 0, false
	for len(sn.keyBuf) < len(t.rel.key) {
		sn.keyBuf = append(sn.keyBuf, nil)
	}
	for rr.NextRow() {
		if cut {
			continue // read and dropped: the next chunk starts after the last row kept
		}
		vals := rr.Values()
		if len(vals) != len(t.rel.cols) {
			_ = closeFn()
			return 0, false, fmt.Errorf("pgcdc: snapshot of %s: %d columns, want %d", t.qualified, len(vals), len(t.rel.cols))
		}
		sn.fields = sn.fields[:0]
		for _, v := range vals {
			if v == nil {
				sn.fields = append(sn.fields, field{kind: 'n'})
			} else {
				sn.fields = append(sn.fields, field{kind: 't', data: v})
			}
		}
		value, key, err := sn.enc.row(t.rel, opRead, nil, nil, false, sn.fields)
		if err != nil {
			_ = closeFn()
			return 0, false, err
		}
		r := record.New(value)
		r.Key = key
		r.Time = sn.started
		r.Meta = t.rel.meta[opRead]
		r.SetOrigin(sn.source, t.partName, t.next+int64(n))
		b.Records = append(b.Records, r)
		n++
		size += r.Size()
		if !t.keyless {
			// The key of the last row is where the next chunk starts; it
			// is copied into reused buffers, since vals die with the row.
			for j, i := range t.rel.key {
				sn.keyBuf[j] = append(sn.keyBuf[j][:0], vals[i]...)
			}
			cut = size >= sn.maxBytes && n < limit
		}
	}
	if err := closeFn(); err != nil {
		return 0, false, fmt.Errorf("pgcdc: snapshot of %s: %w", t.qualified, err)
	}
	sn.measured(t, n, size)
	if n > 0 && !t.keyless {
		last := make([]string, len(t.rel.key))
		for j := range last {
			last[j] = string(sn.keyBuf[j])
		}
		t.lastKey = last
	}
	return n, cut || n == limit, nil
}
