//go:build integration

package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/postgres"
	"github.com/weir-etl/weir/source/file"
)

var ctx = context.Background()

func exec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// newSink builds and opens a sink on database db, closed at the end.
func newSink(t *testing.T, db string, edit func(*postgres.Config)) *postgres.Sink {
	t.Helper()
	cfg := postgres.NewConfig()
	cfg.URL = db
	cfg.PasswordEnv = pgtest.PasswordEnv
	edit(cfg)
	s, err := postgres.New("db", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	return s
}

func recsAt(part string, first int64, vals ...string) []record.Record {
	out := make([]record.Record, len(vals))
	for i, v := range vals {
		out[i] = record.New([]byte(v))
		out[i].Origin = record.Origin{Source: "in", Partition: part, Offset: first + int64(i)}
	}
	return out
}

func queryStrings(t *testing.T, c *pgx.Conn, sql string) []string {
	t.Helper()
	rows, err := c.Query(ctx, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for rows.Next() {
		var s *string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s == nil {
			out = append(out, "NULL")
		} else {
			out = append(out, *s)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The type mapping against the server: each value is read back as the
// server's own text. The 64-bit integer beyond 2^53 and the numeric beyond
// 2^64 arrive exactly.
func TestTypeMappingRoundTrip(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	exec(t, conn, "SET TimeZone = 'UTC'")
	s := newSink(t, db, func(c *postgres.Config) {
		c.Table = "types"
		c.CreateTable = true
		c.Columns = []postgres.Column{
			{Name: "i", Type: "bigint"}, {Name: "n", Type: "numeric"}, {Name: "m", Type: "numeric(12,2)"},
			{Name: "sm", Type: "smallint"}, {Name: "in", Type: "integer"}, {Name: "d", Type: "double precision"},
			{Name: "b", Type: "boolean"}, {Name: "ts", Type: "timestamptz"}, {Name: "j", Type: "jsonb"},
			{Name: "js", Type: "json"}, {Name: "tx", Type: "text"}, {Name: "by", Type: "bytea"},
			{Name: "Mixed Case", Type: "text", Field: "nested.deep"}, {Name: "whole", Type: "jsonb", Value: true},
		}
	})
	full := `{"i":9007199254740993,"n":12345678901234567891,"m":10.5,"sm":-32768,"in":2147483647,"d":0.5,` +
		`"b":true,"ts":"2026-03-01T12:30:45.123456+02:00","j":{"big":12345678901234567891,"s":"a\"b"},` +
		`"js":{"z":1,  "a":2},"tx":"tab\there\\ new\nline é","by":"AAEC/w==","nested":{"deep":"x"}}`
	if err := s.Write(ctx, recsAt("p", 0, full, `{}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cols := []string{"i", "n", "m", "sm", `"in"`, "d", "b", "ts", "j", "js", "tx", "encode(by, 'hex')", `"Mixed Case"`, "whole->'j'->>'big'", "(whole->>'i')"}
	want := [][]string{
		{"9007199254740993", "12345678901234567891", "10.50", "-32768", "2147483647", "0.5", "true", "2026-03-01 10:30:45.123456+00",
			`{"s": "a\"b", "big": 12345678901234567891}`, `{"z":1,  "a":2}`, "tab\there\\ new\nline é", "000102ff", "x", "12345678901234567891", "9007199254740993"},
		{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
	}
	for k, col := range cols {
		got := queryStrings(t, conn, "SELECT ("+col+")::text FROM types ORDER BY i NULLS LAST")
		for r := range want {
			if got[r] != want[r][k] {
				t.Errorf("row %d, %s: got %q, want %q", r, col, got[r], want[r][k])
			}
		}
	}
}

// rewrite does what the runtime does after a failed Flush: Abort, write the
// group again (a rejected record is taken out and the rest written), Flush.
// It returns the indexes of the rejected records and their errors.
func rewrite(t *testing.T, s connector.Sink, recs []record.Record) (rejected []int, errs []error) {
	t.Helper()
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(recs); {
		err := s.Write(ctx, recs[off:])
		if err == nil {
			break
		}
		var rej *connector.RejectError
		if !errors.As(err, &rej) {
			t.Fatalf("rewrite: %v", err)
		}
		rejected = append(rejected, off+rej.Index)
		errs = append(errs, rej)
		off += rej.Index + 1
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after the refused rows were rejected: %v", err)
	}
	return rejected, errs
}

// Rows the server refuses fail the group's transaction as a whole; the sink
// finds which (by COPY line, or by halves when the error has no line: a
// foreign key, a constraint deferred to COMMIT) and the group's next write
// rejects exactly those, naming the column, while the rest commits.
func TestRefusedRowsAreFoundAndRejected(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	exec(t, conn, `CREATE TABLE parent (id int PRIMARY KEY); INSERT INTO parent VALUES (1)`)
	exec(t, conn, `CREATE TABLE t (
		id bigint UNIQUE,
		n integer CHECK (n > 0),
		p int REFERENCES parent (id),
		code text UNIQUE DEFERRABLE INITIALLY DEFERRED,
		doc jsonb)`)
	s := newSink(t, db, func(c *postgres.Config) {
		c.Table = "t"
		c.Columns = []postgres.Column{{Name: "id", Type: "bigint"}, {Name: "n", Type: "text"}, {Name: "p", Type: "integer"},
			{Name: "code", Type: "text"}, {Name: "doc", Type: "jsonb", Value: true}}
	})
	vals := []string{
		`{"id":0,"n":1,"p":1,"code":"a"}`,
		`{"id":1,"n":1,"p":1,"code":"b"}`,
		`{"id":2,"n":"abc","p":1,"code":"c"}`, // 2: not an integer: the server's type check, column n
		`{"id":3,"n":-1,"p":1,"code":"d"}`,    // 3: CHECK (n > 0)
		`{"id":4,"n":1,"p":1,"code":"e"}`,
		`{"id":5,"n":1,"p":1,"s":"\u0000"}`, // 5: jsonb cannot hold U+0000
		`{"id":1,"n":1,"p":1,"code":"f"}`,   // 6: duplicate id
		`{"id":7,"n":1,"p":2,"code":"g"}`,   // 7: foreign key: no line number
		`{"id":8,"n":1,"p":1,"code":"a"}`,   // 8: deferred unique: at COMMIT
		`{"id":9,"n":1,"p":1,"code":"h"}`,
	}
	recs := recsAt("p", 0, vals...)
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	err := s.Flush(ctx)
	if err == nil {
		t.Fatal("Flush of a group with refused rows succeeded")
	}
	if errors.As(err, new(*connector.RejectError)) {
		t.Fatalf("Flush returned a RejectError, which the runtime does not take from Flush: %v", err)
	}
	t.Logf("Flush: %v", err)
	rejected, errs := rewrite(t, s, slices.Clone(recs))
	if want := []int{2, 3, 5, 6, 7, 8}; !slices.Equal(rejected, want) {
		t.Fatalf("rejected records %v, want %v (errors %v)", rejected, want, errs)
	}
	for i, want := range []string{"column n", "t_n_check", "unsupported Unicode", "column id", "t_p_fkey", "column code"} {
		if !strings.Contains(errs[i].Error(), want) {
			t.Errorf("the rejection of record %d says %q; want it to name %q", rejected[i], errs[i], want)
		}
		if !strings.Contains(errs[i].Error(), fmt.Sprintf("in p@%d", rejected[i])) {
			t.Errorf("the rejection %q does not name the record in p@%d", errs[i], rejected[i])
		}
	}
	got := queryStrings(t, conn, "SELECT id::text FROM t ORDER BY id")
	if want := []string{"0", "1", "4", "9"}; !slices.Equal(got, want) {
		t.Fatalf("table holds ids %v, want %v", got, want)
	}
}

// The runtime sends a refused row to the dead letter sink, and the rest of
// the input commits.
func TestRefusedRowGoesToDeadLetter(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	exec(t, conn, `CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0))`)
	dir := t.TempDir()
	var lines bytes.Buffer
	for i := range 300 {
		amount := i
		if i == 42 || i == 250 {
			amount = -1
		}
		fmt.Fprintf(&lines, "{\"id\":%d,\"amount\":%d}\n", i, amount)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.ndjson"), lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fc := file.NewConfig()
	fc.Paths = []string{filepath.Join(dir, "*.ndjson")}
	fc.Mode = "once"
	fc.DataDir = filepath.Join(dir, "state")
	fc.BatchSize = 50
	src, err := file.New("in", fc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := postgres.NewConfig()
	cfg.URL, cfg.PasswordEnv, cfg.Table = db, pgtest.PasswordEnv, "orders"
	cfg.Columns = []postgres.Column{{Name: "id", Type: "bigint"}, {Name: "amount", Type: "numeric"}}
	pg, err := postgres.New("db", cfg)
	if err != nil {
		t.Fatal(err)
	}
	dl := &conformance.MemSink{}
	var logs bytes.Buffer
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "in", Source: src}},
		Sinks: []pipeline.SinkSpec{
			{Name: "db", Inputs: []string{"in"}, Sink: pg, OnFailure: pipeline.DeadLetter, DeadLetter: "dl",
				Batch: pipeline.BatchSettings{MaxRecords: 100, MaxAge: 50 * time.Millisecond},
				Retry: pipeline.RetrySettings{MaxAttempts: 3, InitialBackoff: time.Millisecond}},
			{Name: "dl", Sink: dl, Batch: pipeline.BatchSettings{MaxAge: 10 * time.Millisecond}},
		},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 20 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	if err := pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))); err != nil {
		t.Fatal(err)
	}
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM orders"); got[0] != "298" {
		t.Fatalf("orders holds %s rows, want 298; log:\n%s", got[0], logs.String())
	}
	dead := dl.Values()
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2: %q", len(dead), dead)
	}
	for i, want := range []string{`"id":42`, `"id":250`} {
		var env struct{ Error, Sink string }
		if err := json.Unmarshal(dead[i], &env); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(dead[i], []byte(want)) || env.Sink != "db" || !strings.Contains(env.Error, "orders_amount_check") {
			t.Errorf("dead letter %d: %s; want the record with %s and the violated check named", i, dead[i], want)
		}
	}
	if pw := os.Getenv(pgtest.PasswordEnv); pw != "" && strings.Contains(logs.String(), pw) {
		t.Fatal("the password shows in the run's log")
	}
}

// Upsert mode: the last record of a key in a group wins, a later group
// updates, and a row refused by a constraint (found without a COPY line, in
// the INSERT from the staging table) is rejected alone.
func TestUpsert(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	s := newSink(t, db, func(c *postgres.Config) {
		c.Table = "kv"
		c.CreateTable = true
		c.Mode = postgres.ModeUpsert
		c.Key = []string{"k"}
		c.Columns = []postgres.Column{{Name: "k", Type: "text"}, {Name: "v", Type: "bigint"}, {Name: "doc", Type: "jsonb", Value: true}}
	})
	exec(t, conn, `ALTER TABLE kv ADD CHECK (v <> 13)`)
	group := func(vals ...string) []record.Record { return recsAt("p", 0, vals...) }
	if err := s.Write(ctx, group(`{"k":"a","v":1}`, `{"k":"b","v":2}`, `{"k":"a","v":3}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	g2 := group(`{"k":"b","v":9007199254740993}`, `{"k":"c","v":13}`, `{"k":"d","v":4}`)
	if err := s.Write(ctx, g2); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err == nil {
		t.Fatal("a group with a refused row committed")
	}
	if rej, _ := rewrite(t, s, g2); !slices.Equal(rej, []int{1}) {
		t.Fatalf("rejected %v, want [1]", rej)
	}
	got := queryStrings(t, conn, "SELECT k || '=' || v FROM kv ORDER BY k")
	if want := []string{"a=3", "b=9007199254740993", "d=4"}; !slices.Equal(got, want) {
		t.Fatalf("table holds %v, want %v", got, want)
	}
}

// The positions are stored with the rows, read back by StoredPositions, and
// a group whose rows they already cover (another process that lost the
// partition but still commits, or a retry after a COMMIT whose answer was
// lost) writes only the rows past them.
func TestPositionsStoredAndRowsTheyCoverSkipped(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	edit := func(c *postgres.Config) {
		c.Table = "ev"
		c.CreateTable = true
		c.Columns = []postgres.Column{{Name: "off", Type: "bigint"}}
	}
	a, b := newSink(t, db, edit), newSink(t, db, edit)
	write := func(s *postgres.Sink, first, n int64) {
		t.Helper()
		writeRange(t, s, first, n)
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(a, 0, 10)
	pos, err := b.StoredPositions(ctx, "in", []string{"p", "q"})
	if err != nil || len(pos) != 1 || pos["p"] != 10 {
		t.Fatalf("stored positions %v, %v; want p at 10 and nothing for q", pos, err)
	}
	write(b, 5, 10) // offsets 5..14: 5..9 are in the table already
	write(a, 0, 3)  // all covered; must not move the position back either
	got := queryStrings(t, conn, "SELECT count(*)::text || ' ' || count(DISTINCT off)::text || ' ' || max(off)::text FROM ev")
	if got[0] != "15 15 14" {
		t.Fatalf("rows, distinct offsets, last offset: %s; want 15 15 14", got[0])
	}
	stored := queryStrings(t, conn, `SELECT pipeline || ' ' || sink || ' ' || source || ' ' || partition || ' ' || position FROM weir_positions`)
	if want := []string{"public.ev db in p 15"}; !slices.Equal(stored, want) {
		t.Fatalf("weir_positions holds %v, want %v", stored, want)
	}
	if d := b.Describe(); !strings.Contains(d, "5 already stored and skipped") {
		t.Fatalf("Describe: %q", d)
	}
}

// Open reports a table that does not fit, with the fix.
func TestOpenChecksTheTable(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	exec(t, conn, `CREATE TABLE nokey (k text, v text)`)
	for _, c := range []struct {
		edit func(*postgres.Config)
		want string
	}{
		{func(c *postgres.Config) { c.Table = "missing" }, "create_table: true"},
		{func(c *postgres.Config) {
			c.Table = "nokey"
			c.Columns = append(c.Columns, postgres.Column{Name: "w", Type: "text"})
		}, "must be a column of the table"},
		{func(c *postgres.Config) { c.Table = "nokey"; c.Mode = postgres.ModeUpsert; c.Key = []string{"k"} }, "unique index"},
	} {
		cfg := postgres.NewConfig()
		cfg.URL, cfg.PasswordEnv = db, pgtest.PasswordEnv
		cfg.Columns = []postgres.Column{{Name: "k", Type: "text"}, {Name: "v", Type: "text"}}
		c.edit(cfg)
		s, err := postgres.New("db", cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Open(ctx)
		s.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("table %s: Open: %v; want an error saying %q", cfg.Table, err, c.want)
		}
	}
}

// The password is never in an error: not when it is wrong, not when the
// variable is missing, not when TLS is refused.
func TestPasswordNeverInErrors(t *testing.T) {
	db := pgtest.Database(t)
	var b [8]byte
	rand.Read(b[:])
	secret := "pw-" + hex.EncodeToString(b[:])
	t.Setenv("WEIR_TEST_WRONG_PASSWORD", secret)
	for _, c := range []struct {
		name string
		edit func(*postgres.Config)
		want string
	}{
		{"wrong password", func(c *postgres.Config) { c.PasswordEnv = "WEIR_TEST_WRONG_PASSWORD" }, "password authentication failed"},
		{"unset variable", func(c *postgres.Config) { c.PasswordEnv = "WEIR_TEST_NO_SUCH_VARIABLE" }, "WEIR_TEST_NO_SUCH_VARIABLE is not set"},
		// The test server has ssl off: a refusal no wait can fix, which
		// must fail at once with its fix, not after connect_timeout's
		// retries (it waited the whole 5 minutes once).
		{"TLS required", func(c *postgres.Config) { c.PasswordEnv = "WEIR_TEST_WRONG_PASSWORD"; c.TLS.Mode = "require" }, "turn ssl on in the server, or set tls.mode"},
	} {
		cfg := postgres.NewConfig()
		cfg.URL, cfg.Table = db, "t"
		cfg.Columns = []postgres.Column{{Name: "k", Type: "text"}}
		c.edit(cfg)
		s, err := postgres.New("db", cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Open(ctx)
		s.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Open: %v; want an error saying %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), secret) {
			t.Errorf("%s: the password shows in the error: %v", c.name, err)
		}
		if strings.Contains(err.Error(), "gave up after connect_timeout") {
			t.Errorf("%s: Open retried a refusal no wait can fix until connect_timeout: %v", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// A statement that outlives statement_timeout fails the group with a plain
// error (retried by the runtime, never a rejection), and the same group
// commits once the server answers in time again.
func TestStatementTimeoutIsAPlainError(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	exec(t, conn, `CREATE TABLE slow (id bigint)`)
	s := newSink(t, db, func(c *postgres.Config) {
		c.Table = "slow"
		c.StatementTimeout = 200 * time.Millisecond
		c.Columns = []postgres.Column{{Name: "id", Type: "bigint"}}
	})
	recs := recsAt("p", 0, `{"id":1}`, `{"id":2}`)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE slow IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	err = s.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "statement timeout") || errors.As(err, new(*connector.RejectError)) {
		t.Fatalf("Flush against a locked table: %v; want a plain error saying statement timeout", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rej, _ := rewrite(t, s, recs); len(rej) != 0 {
		t.Fatalf("records rejected: %v", rej)
	}
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM slow"); got[0] != "2" {
		t.Fatalf("%s rows, want 2", got[0])
	}
}

// A group beyond max_group_records fails with an error saying which setting
// to lower.
func TestGroupBound(t *testing.T) {
	db := pgtest.Database(t)
	s := newSink(t, db, func(c *postgres.Config) {
		c.Table = "b"
		c.CreateTable = true
		c.MaxGroupRecords = 3
		c.Columns = []postgres.Column{{Name: "id", Type: "bigint"}}
	})
	err := s.Write(ctx, recsAt("p", 0, `{"id":1}`, `{"id":2}`, `{"id":3}`, `{"id":4}`))
	if err == nil || errors.As(err, new(*connector.RejectError)) || !strings.Contains(err.Error(), "batch.max_records") {
		t.Fatalf("Write of 4 records with max_group_records 3: %v", err)
	}
}
