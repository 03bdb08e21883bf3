package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/reach"
	"github.com/weir-etl/weir/internal/words"
	"github.com/weir-etl/weir/record"
)

// Sink is the PostgreSQL sink. Create it with New.
type Sink struct {
	name      string
	cfg       Config
	table     qualified
	positions qualified
	pipeline  string
	upsert    bool
	sql       statements
	pool      *pgxpool.Pool

	// The sink's goroutine only.
	enc      *encoder
	cur      *group
	sealSeq  uint64        // the last sequence number given to a sealed group
	lastTurn chan struct{} // the turn's done of the last sealed group (see ahead.go)

	chain chain  // between Seal/Abort and the persister
	bad   badSet // refused records, found by the persister, rejected by Write

	freeMu sync.Mutex
	free   []*group // groups back from the persister, for reuse

	knownMu sync.Mutex
	known   map[partKey]bool // partitions with a positions row

	// Sealed groups copying ahead (see ahead.go): a slot each, max_conns-1
	// slots (none with one connection).
	aheadSlots chan struct{}
	aheadMu    sync.Mutex
	aheads     map[*ahead]struct{}
	aheadWG    sync.WaitGroup
	// Groups committed on the connection that copied them ahead, and
	// groups copied ahead that then went the classic way.
	aheadCommitted, aheadAgain atomic.Int64

	// For Describe, counted per group.
	rows, txs, skipped, refused atomic.Int64

	log *slog.Logger
	// step is called at each step of a group's transaction, for the crash
	// points of connector/conformance's exactly-once suite; nil otherwise.
	step func(string)
}

// at calls the crash point name, if armed.
func (s *Sink) at(name string) {
	if s.step != nil {
		s.step(name)
	}
}

// attemptTimeout bounds one connection attempt, at start and later: a
// server that accepts connections and never answers costs this much per
// try, within connect_timeout at start.
const attemptTimeout = 10 * time.Second

func (s *Sink) attemptTimeout() time.Duration { return min(attemptTimeout, s.cfg.ConnectTimeout) }

// New returns a sink for cfg, which must be valid.
func New(name string, cfg *Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sink/postgres: sink %s: %w", name, err)
	}
	table := qualified{cfg.Schema, cfg.Table}
	positions, _ := parseQualified(cfg.PositionsTable, cfg.Schema)
	s := &Sink{
		name:      name,
		cfg:       *cfg,
		table:     table,
		positions: positions,
		pipeline:  cfg.Pipeline,
		upsert:    cfg.Mode == ModeUpsert,
		sql:       buildStatements(cfg, table, positions),
		enc:       newEncoder(cfg.Columns),
		cur:       &group{},
		known:     map[partKey]bool{},
		aheads:    map[*ahead]struct{}{},
		// A sink is given no logger by the runtime: it logs to the
		// default logger, which the command line sets.
		log: slog.Default().With("sink", name),
	}
	if s.pipeline == "" {
		s.pipeline = table.String()
	}
	s.bad.seed = maphash.MakeSeed()
	if cfg.MaxConns > 1 {
		s.aheadSlots = make(chan struct{}, cfg.MaxConns-1)
	}
	return s, nil
}

// wrap prefixes err with the sink's name and what it was doing.
func (s *Sink) wrap(doing string, err error) error {
	return fmt.Errorf("sink/postgres: sink %s: %s: %w", s.name, doing, err)
}

// poolConfig builds the pool's configuration: the URL with the tls options
// as libpq parameters, the password from the environment, and the session
// settings. The password goes into the parsed configuration only, never into
// a string that could be printed.
func (s *Sink) poolConfig() (*pgxpool.Config, error) {
	u, err := url.Parse(s.cfg.URL)
	if err != nil {
		return nil, s.wrap("url", errors.New("not a valid URL"))
	}
	q := u.Query()
	t := s.cfg.TLS
	for k, v := range map[string]string{"sslmode": t.Mode, "sslrootcert": t.CAFile, "sslcert": t.CertFile, "sslkey": t.KeyFile} {
		if v != "" {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	pc, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, s.wrap("url", err)
	}
	// The password comes from password_env alone: not from PGPASSWORD or a
	// password file that the URL parser would otherwise consult.
	pc.ConnConfig.Password = ""
	if s.cfg.PasswordEnv != "" {
		pw, ok := os.LookupEnv(s.cfg.PasswordEnv)
		if !ok {
			return nil, s.wrap("password_env", fmt.Errorf("the environment variable %s is not set: set it to the password, or set password_env to \"\" for none", s.cfg.PasswordEnv))
		}
		pc.ConnConfig.Password = pw
	}
	pc.MaxConns = int32(s.cfg.MaxConns)
	pc.ConnConfig.ConnectTimeout = s.attemptTimeout()
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(s.cfg.StatementTimeout.Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["application_name"] = "weir sink " + s.name
	// COPY's text format and the sink's checks assume these.
	pc.ConnConfig.RuntimeParams["client_encoding"] = "UTF8"
	pc.ConnConfig.RuntimeParams["standard_conforming_strings"] = "on"
	return pc, nil
}

// Open connects, creates the positions table (and the table, with
// create_table) when missing, and checks that the sink's statements fit the
// table: a missing column or a key without a unique index is reported now,
// not at the first group.
func (s *Sink) Open(ctx context.Context) (err error) {
	pc, err := s.poolConfig()
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return s.wrap("connecting", err)
	}
	s.pool = pool
	defer func() {
		if err != nil {
			pool.Close()
			s.pool = nil
		}
	}()
	conn, err := s.reach(ctx, pc)
	if err != nil {
		return err
	}
	defer conn.Release()
	if s.keepPositions() {
		if err := s.ensureTable(ctx, conn, s.positions, s.sql.createPositions); err != nil {
			return err
		}
	}
	if s.cfg.CreateTable {
		if err := s.ensureTable(ctx, conn, s.table, s.createTableSQL()); err != nil {
			return err
		}
	}
	// A dry run of the group transaction, rolled back.
	if err := s.exec(ctx, conn, "BEGIN"); err != nil {
		return s.wrap("checking the table", err)
	}
	defer s.rollback(conn)
	if s.upsert {
		if err := s.exec(ctx, conn, s.sql.createStage); err != nil {
			return s.wrap("checking the table "+s.table.String(), hint(err))
		}
	}
	if err := s.writeRows(ctx, conn, &group{}, nil, false); err != nil {
		return s.wrap("checking the table "+s.table.String(), hint(err))
	}
	return nil
}

// reach returns a connection from the pool under the rule every connector
// follows at start (package reach): a server that does not answer is waited
// for up to connect_timeout, with a warning per attempt; a refusal no wait
// can fix (reach.PgUnfixable) fails at once.
func (s *Sink) reach(ctx context.Context, pc *pgxpool.Config) (*pgxpool.Conn, error) {
	var conn *pgxpool.Conn
	cc := pc.ConnConfig
	err := reach.Wait(ctx, reach.Target{
		Pkg: "sink/postgres", Who: "sink " + s.name, Problem: "the server does not answer",
		Peer:  fmt.Sprintf("PostgreSQL at %s (database %s)", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))), cc.Database),
		Fix:   "check that the server is up and reachable from here",
		Limit: s.cfg.ConnectTimeout, Log: s.log, Fatal: reach.PgUnfixable, Explain: reach.PgExplain,
		Attempt: func(ctx context.Context) error {
			actx, cancel := context.WithTimeout(ctx, s.attemptTimeout())
			defer cancel()
			c, err := s.pool.Acquire(actx)
			if err == nil {
				conn = c
			}
			return err
		},
	})
	return conn, err
}

// hint adds the likely fix to the errors a misconfigured table gives.
func hint(err error) error {
	if _, isData := dataError(err); isData {
		return err
	}
	var e interface{ SQLState() string }
	if !errors.As(err, &e) {
		return err
	}
	switch e.SQLState() {
	case "42P01":
		return fmt.Errorf("%w: create the table, or set create_table: true", err)
	case "42703":
		return fmt.Errorf("%w: every entry of columns must be a column of the table", err)
	case "42P10":
		return fmt.Errorf("%w: upsert mode needs a unique index or primary key on exactly the key columns", err)
	}
	return err
}

// createLockClass is the first key of the advisory lock ensureTable takes
// ("weir" in ASCII); the second is a hash of the table's name.
const createLockClass = 0x77656972

// ensureTable creates table q with ddl when it does not exist. It looks
// first, so that a role without the right to create tables can use tables
// made for it.
//
// CREATE TABLE IF NOT EXISTS is not safe against a concurrent creation: two
// sessions both find the table missing, and one fails on pg_type's unique
// index (23505) or with "relation already exists" (42P07). Three members of
// one Kafka group started at once on a new table did, and exited (issue 25).
// So the creation runs in a transaction that first takes an advisory lock
// keyed by the table's name and looks again under it: the sessions create
// one after the other, and the later ones find the table. A creation that
// fails with one of those two codes anyway (a creator outside weir that
// takes no lock) counts as done.
func (s *Sink) ensureTable(ctx context.Context, conn *pgxpool.Conn, q qualified, ddl string) error {
	exists, err := s.tableExists(ctx, conn, q)
	if err != nil || exists {
		return err
	}
	if err := s.exec(ctx, conn, "BEGIN"); err != nil {
		return s.wrap("creating table "+q.String(), err)
	}
	done := false
	defer func() {
		if !done {
			s.rollback(conn)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	_, err = conn.Exec(cctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", int32(createLockClass), q.sql())
	cancel()
	if err != nil {
		return s.wrap("creating table "+q.String()+": taking its creation lock", err)
	}
	if exists, err = s.tableExists(ctx, conn, q); err != nil {
		return err
	}
	if !exists {
		if err := s.exec(ctx, conn, ddl); err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42P07") {
				return s.wrap("creating table "+q.String(), err)
			}
			s.log.Info("sink/postgres: another session created the table at the same moment", "table", q.String())
		}
	}
	if err := s.exec(ctx, conn, "COMMIT"); err != nil {
		return s.wrap("creating table "+q.String(), err)
	}
	done = true
	return nil
}

// tableExists looks table q up.
func (s *Sink) tableExists(ctx context.Context, conn *pgxpool.Conn, q qualified) (bool, error) {
	var exists bool
	cctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	if err := conn.QueryRow(cctx, "SELECT to_regclass($1) IS NOT NULL", q.sql()).Scan(&exists); err != nil {
		return false, s.wrap("looking for table "+q.String(), err)
	}
	return exists, nil
}

func (s *Sink) createTableSQL() string {
	ddl := "CREATE TABLE IF NOT EXISTS " + s.table.sql() + " ("
	for i, col := range s.cfg.Columns {
		if i > 0 {
			ddl += ", "
		}
		t, _ := parseType(col.Type)
		ddl += quoteIdent(col.Name) + " " + t.sql()
	}
	if len(s.cfg.Key) > 0 {
		ddl += ", PRIMARY KEY ("
		for i, k := range s.cfg.Key {
			if i > 0 {
				ddl += ", "
			}
			ddl += quoteIdent(k)
		}
		ddl += ")"
	}
	return ddl + ")"
}

func (s *Sink) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, s.attemptTimeout()+s.callTimeout())
	defer cancel()
	conn, err := s.pool.Acquire(cctx)
	if err != nil {
		return nil, s.wrap("connecting", err)
	}
	return conn, nil
}

// Write encodes recs into the current group. A record that cannot become a
// row (a field its column's type cannot hold), or that the server refused in
// an earlier write of the group, is rejected, naming the column.
func (s *Sink) Write(ctx context.Context, recs []record.Record) error {
	g := s.cur
	for i := range recs {
		r := &recs[i]
		v, err := r.Value()
		if err != nil {
			return &connector.RejectError{Index: i, Err: s.wrap("record "+originString(r.Origin), err)}
		}
		start := len(g.buf)
		buf, cerr := s.enc.appendRow(g.buf, v)
		if cerr != nil {
			g.buf = buf[:start]
			return &connector.RejectError{Index: i, Err: s.encodeError(r.Origin, cerr)}
		}
		if s.bad.n.Load() > 0 {
			if err := s.bad.take(s.bad.fingerprint(r.Origin, buf[start:])); err != nil {
				g.buf = buf[:start]
				return &connector.RejectError{Index: i, Err: err}
			}
		}
		g.buf = buf
		g.added(len(buf), r.Origin)
		if g.rows() > s.cfg.MaxGroupRecords || int64(len(g.buf)) > s.cfg.MaxGroupBytes {
			return s.wrap("write", fmt.Errorf("the group holds %d rows in %d bytes, beyond max_group_records (%d) or max_group_bytes (%d): lower the sink's batch.max_records or batch.max_bytes, or raise these",
				g.rows(), len(g.buf), s.cfg.MaxGroupRecords, s.cfg.MaxGroupBytes))
		}
	}
	return nil
}

// ColumnError is a record the sink cannot turn into a row.
type ColumnError struct {
	Sink   string
	Origin record.Origin
	Column string // "" when the value as a whole is at fault
	Type   string
	Err    error
}

// Error says which record and column, and why.
func (e *ColumnError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("sink/postgres: sink %s: record %s: %v", e.Sink, originString(e.Origin), e.Err)
	}
	return fmt.Sprintf("sink/postgres: sink %s: record %s: column %s (%s): %v", e.Sink, originString(e.Origin), e.Column, e.Type, e.Err)
}

// Unwrap returns the cause.
func (e *ColumnError) Unwrap() error { return e.Err }

func (s *Sink) encodeError(o record.Origin, ce *colError) error {
	e := &ColumnError{Sink: s.name, Origin: o, Err: ce.err}
	if ce.col >= 0 {
		c := s.enc.cols[ce.col]
		e.Column, e.Type = c.name, c.typ.String()
	}
	return e
}

// GroupPositions keeps the positions the current group reaches, to store
// with it.
func (s *Sink) GroupPositions(ps []connector.GroupPosition) {
	s.cur.positions = append(s.cur.positions[:0], ps...)
}

// StoredPositions returns the positions stored for the named partitions of
// source.
func (s *Sink) StoredPositions(ctx context.Context, source string, partitions []string) (map[string]connector.Position, error) {
	out := map[string]connector.Position{}
	if !s.keepPositions() || len(partitions) == 0 {
		return out, nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	rows, err := s.pool.Query(cctx, s.sql.stored, s.pipeline, s.name, source, partitions)
	if err != nil {
		return nil, s.wrap("reading stored positions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var pos int64
		if err := rows.Scan(&p, &pos); err != nil {
			return nil, s.wrap("reading stored positions", err)
		}
		out[p] = connector.Position(pos)
		s.knownMu.Lock()
		s.known[partKey{source, p}] = true
		s.knownMu.Unlock()
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("reading stored positions", err)
	}
	return out, nil
}

// unknown returns the partitions of g without a positions row as far as the
// sink knows.
func (s *Sink) unknown(g *group) (srcs, parts []string) {
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	for _, p := range g.parts {
		if p.key.source != "" && !s.known[p.key] {
			srcs, parts = append(srcs, p.key.source), append(parts, p.key.partition)
		}
	}
	return srcs, parts
}

func (s *Sink) noteKnown(g *group) {
	s.knownMu.Lock()
	defer s.knownMu.Unlock()
	for _, p := range g.parts {
		s.known[p.key] = true
	}
}

// Flush commits the current group in one transaction and starts a new one.
// It returns nil only after COMMIT returned.
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.persist(ctx, s.cur, nil); err != nil {
		return err
	}
	s.cur.reset()
	return nil
}

// persist commits g and counts it: on the connection a copied ahead, when
// that transaction can commit, otherwise the classic way.
func (s *Sink) persist(ctx context.Context, g *group, a *ahead) error {
	var out commitOutcome
	var err error
	ok := false
	if a != nil {
		out, ok, err = s.commitAhead(ctx, g, a)
		if ok && err == nil {
			s.aheadCommitted.Add(1)
		} else if !ok {
			s.aheadAgain.Add(1)
		}
	}
	if !ok {
		out, err = s.commit(ctx, g)
	}
	if err != nil {
		return err
	}
	s.bad.clear()
	s.rows.Add(int64(out.rows))
	s.skipped.Add(int64(out.skipped))
	s.txs.Add(1)
	return nil
}

// Seal hands the current group over for its transaction and starts a new one
// at once: the next group is encoded while the server commits this one. The
// sealed group's rows are copied ahead of its Persist when a connection is
// free for it (see ahead.go).
func (s *Sink) Seal(context.Context) (connector.SealedGroup, error) {
	g := s.cur
	s.sealSeq++
	g.seq = s.sealSeq
	g.turn = s.nextTurn()
	s.cur = s.newGroup()
	return &sealed{s: s, g: g, ahead: s.copyAhead(g)}, nil
}

func (s *Sink) newGroup() *group {
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	if n := len(s.free); n > 0 {
		g := s.free[n-1]
		s.free = s.free[:n-1]
		return g
	}
	return &group{}
}

func (s *Sink) release(g *group) {
	g.reset()
	s.freeMu.Lock()
	s.free = append(s.free, g)
	s.freeMu.Unlock()
}

// sealed is a group Seal handed over; it shares nothing with the sink's
// goroutine but the chain, the refused set and the free list, which are
// safe for concurrent use.
type sealed struct {
	s     *Sink
	g     *group
	ahead *ahead // the group's transaction begun by Seal, or nil
	done  bool
}

// Persist commits the group in one transaction and returns nil only after
// COMMIT returned. It fails without writing when a group sealed before it
// failed (see chain).
func (sg *sealed) Persist(ctx context.Context) error {
	seq := sg.g.seq
	// Whatever happens, the groups sealed after this one may copy once
	// this Persist is over.
	defer sg.g.turn.copied()
	if err := sg.s.chain.begin(seq); err != nil {
		sg.endAhead()
		sg.s.chain.end(seq, err)
		return sg.s.wrap("persist", err)
	}
	a := sg.ahead
	sg.ahead = nil // persist ends it
	err := sg.s.persist(ctx, sg.g, a)
	sg.s.chain.end(seq, err)
	if err == nil {
		sg.done = true
		sg.s.release(sg.g)
	}
	return err
}

// Discard forgets the group: its transaction was rolled back, so nothing of
// it is in the table.
func (sg *sealed) Discard(context.Context) error {
	sg.endAhead()
	if !sg.done {
		sg.g.turn.copied()
		sg.done = true
		sg.s.release(sg.g)
	}
	return nil
}

// endAhead rolls back the group's transaction begun by Seal, if still open.
func (sg *sealed) endAhead() {
	if sg.ahead != nil {
		sg.ahead.end()
		sg.ahead = nil
	}
}

// Abort discards the current group. A failed transaction left nothing in
// the table.
func (s *Sink) Abort(context.Context) error {
	s.cur.reset()
	s.chain.abort()
	return nil
}

// Close closes the connections.
func (s *Sink) Close(context.Context) error {
	s.endAhead()
	if s.pool != nil {
		s.pool.Close()
	}
	return nil
}

// Describe says where the rows went, for the run summary.
func (s *Sink) Describe() string {
	d := fmt.Sprintf("postgres %s: %s in %s", s.table, words.Plural(s.rows.Load(), "row"), words.Plural(s.txs.Load(), "transaction"))
	if n := s.skipped.Load(); n > 0 {
		d += fmt.Sprintf(", %d already stored and skipped", n)
	}
	if n := s.refused.Load(); n > 0 {
		d += fmt.Sprintf(", %d refused by the server", n)
	}
	if n := s.aheadAgain.Load(); n > 0 {
		d += fmt.Sprintf(", %s copied ahead and written again the classic way", words.Plural(n, "group"))
	}
	return d
}

var (
	_ connector.Sealer         = (*Sink)(nil)
	_ connector.PositionKeeper = (*Sink)(nil)
	_ connector.Describer      = (*Sink)(nil)
)

func init() {
	connector.RegisterSink(connector.SinkDef[Config]{
		Name:   "postgres",
		Doc:    "writes rows to a PostgreSQL table, exactly once: source positions are stored in the same transaction",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Sink, error) { return New(name, c) },
	})
}
