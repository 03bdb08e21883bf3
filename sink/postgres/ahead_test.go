//go:build integration

package postgres_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/sink/postgres"
)

// seqTable makes a table whose identity column numbers rows as the server
// receives them, and a sink over it with the given max_conns.
func seqTable(t *testing.T, db, table string, conns int) *postgres.Sink {
	t.Helper()
	conn := pgtest.Connect(t, db)
	exec(t, conn, `CREATE TABLE `+table+` (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, off bigint NOT NULL CHECK (off >= 0))`)
	return newSink(t, db, func(c *postgres.Config) {
		c.Table = table
		c.MaxConns = conns
		c.Columns = []postgres.Column{{Name: "off", Type: "bigint"}}
	})
}

// writeRange writes offsets [first, first+n) of partition p, each record
// {"off":offset}, and gives the group the position first+n.
func writeRange(t *testing.T, s *postgres.Sink, first, n int64) {
	t.Helper()
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf(`{"off":%d}`, first+int64(i))
	}
	if err := s.Write(ctx, recsAt("p", first, vals...)); err != nil {
		t.Fatal(err)
	}
	s.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p", Position: connector.Position(first + n)}})
}

// sealRange writes offsets [first, first+n) of partition p (writeRange) and
// seals them.
func sealRange(t *testing.T, s *postgres.Sink, first, n int64) connector.SealedGroup {
	t.Helper()
	writeRange(t, s, first, n)
	g, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Sealed groups are copied ahead of their Persist on connections of their
// own, and still reach the table in the order they were sealed: a column the
// server numbers as rows arrive numbers them in that order, although the
// second group (one row) would have copied long before the first (50,000
// rows) if the two copies ran at once.
func TestCopyAheadKeepsTheOrder(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	s := seqTable(t, db, "ahead", 4)
	g1 := sealRange(t, s, 0, 50_000)
	g2 := sealRange(t, s, 50_000, 1)
	g3 := sealRange(t, s, 50_001, 2)
	for i, g := range []connector.SealedGroup{g1, g2, g3} {
		if err := g.Persist(ctx); err != nil {
			t.Fatalf("Persist of group %d: %v", i+1, err)
		}
	}
	if c, again := postgres.AheadCounts(s); c != 3 || again != 0 {
		t.Fatalf("%d groups committed as copied ahead, %d copied again; want 3 and 0", c, again)
	}
	got := queryStrings(t, conn, `SELECT count(*)::text || ' ' || count(*) FILTER (WHERE seq <> off + 1)::text FROM ahead`)
	if got[0] != "50003 0" {
		t.Fatalf("rows, rows numbered out of their order: %s; want 50003 0", got[0])
	}
	if n := postgres.OpenConns(s); n != 0 {
		t.Fatalf("%d connections still in use after the groups committed", n)
	}
}

// A group copied ahead whose rows stored positions partly cover (another
// writer of the partition committed them first: a process that lost the
// partition) is copied again the classic way, without the covered rows.
func TestCopyAheadFencedByStoredPositions(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	a := seqTable(t, db, "fence", 4)
	b := newSink(t, db, func(c *postgres.Config) {
		c.Table = "fence"
		c.Columns = []postgres.Column{{Name: "off", Type: "bigint"}}
	})
	ga := sealRange(t, a, 0, 10) // copied ahead, not committed
	gb := sealRange(t, b, 5, 10) // the other writer: offsets 5..14
	if err := gb.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	// b's positions (15) cover all of a's rows, which a must not commit.
	if err := ga.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	if c, again := postgres.AheadCounts(a); c != 0 || again != 1 {
		t.Fatalf("a: %d groups committed as copied ahead, %d copied again; want 0 and 1", c, again)
	}
	got := queryStrings(t, conn, "SELECT count(*)::text || ' ' || count(DISTINCT off)::text || ' ' || min(off)::text FROM fence")
	if got[0] != "10 10 5" {
		t.Fatalf("rows, distinct offsets, first offset: %s; want 10 10 5 (b's rows only)", got[0])
	}
	if d := a.Describe(); !strings.Contains(d, "10 already stored and skipped") || !strings.Contains(d, "1 group copied ahead and written again") {
		t.Fatalf("Describe: %q", d)
	}
}

// A copy ahead that the server refuses (a CHECK) fails nothing by itself:
// Persist copies the group again the classic way, finds the refused row and
// fails so that the runtime rejects it, and the rest commits on the next try.
func TestCopyAheadRefusedRow(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	s := seqTable(t, db, "refuse", 4)
	recs := recsAt("p", 0, `{"off":0}`, `{"off":-1}`, `{"off":2}`)
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	g, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = g.Persist(ctx)
	if err == nil || !strings.Contains(err.Error(), "refused 1 row") {
		t.Fatalf("Persist: %v; want the refused row named", err)
	}
	if c, again := postgres.AheadCounts(s); c != 0 || again != 1 {
		t.Fatalf("%d committed as copied ahead, %d copied again; want 0 and 1", c, again)
	}
	if err := g.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	werr := s.Write(ctx, recs)
	var re *connector.RejectError
	if !errors.As(werr, &re) || re.Index != 1 {
		t.Fatalf("writing the group again: %v; want record 1 rejected", werr)
	}
	if err := s.Write(ctx, recs[2:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryStrings(t, conn, "SELECT off::text FROM refuse ORDER BY seq"); !slices.Equal(got, []string{"0", "2"}) {
		t.Fatalf("table holds %v, want [0 2]", got)
	}
}

// A discarded group's copy is rolled back and its connection given back;
// groups sealed after it copy, and Close ends copies never persisted (the
// package's goroutine check catches one left running).
func TestCopyAheadDiscardAndClose(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	s := seqTable(t, db, "discard", 4)
	g1 := sealRange(t, s, 0, 1000)
	g2 := sealRange(t, s, 1000, 10)
	if err := g1.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g2.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if n := postgres.OpenConns(s); n != 0 {
		t.Fatalf("%d connections in use after both groups were discarded", n)
	}
	g3 := sealRange(t, s, 0, 5)
	if err := g3.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	sealRange(t, s, 5, 5) // copied ahead, never persisted: Close ends it
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM discard"); got[0] != "5" {
		t.Fatalf("table holds %s rows, want 5 (the discarded and unpersisted groups' rows are not in it)", got[0])
	}
}

// With one connection nothing is copied ahead: the groups run the classic way.
func TestCopyAheadNeedsTwoConnections(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	s := seqTable(t, db, "single", 1)
	g1 := sealRange(t, s, 0, 100)
	g2 := sealRange(t, s, 100, 100)
	for _, g := range []connector.SealedGroup{g1, g2} {
		if err := g.Persist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if c, again := postgres.AheadCounts(s); c != 0 || again != 0 {
		t.Fatalf("%d committed as copied ahead, %d copied again with max_conns 1; want none", c, again)
	}
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM single"); got[0] != "200" {
		t.Fatalf("table holds %s rows, want 200", got[0])
	}
}

// A copy ahead whose connection the server ended while it waited (a
// terminated backend, idle_in_transaction_session_timeout) costs nothing but
// the copy: Persist writes the group the classic way.
func TestCopyAheadConnectionEnded(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	s := seqTable(t, db, "ended", 4)
	g := sealRange(t, s, 0, 100)
	var ended bool
	for i := 0; i < 500 && !ended; i++ {
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity
			WHERE application_name = 'weir sink db' AND state = 'idle in transaction' AND datname = current_database()`).Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if !ended {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !ended {
		t.Fatal("found no transaction copied ahead to end")
	}
	if err := g.Persist(ctx); err != nil {
		t.Fatalf("Persist after the server ended the copy's connection: %v", err)
	}
	if c, again := postgres.AheadCounts(s); c != 0 || again != 1 {
		t.Fatalf("%d committed as copied ahead, %d copied again; want 0 and 1", c, again)
	}
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM ended"); got[0] != "100" {
		t.Fatalf("table holds %s rows, want 100", got[0])
	}
}

// While a group's Persist searches it for refused rows, the group sealed
// after it does not copy: its rows could hold a key the search's COPY would
// then wait for, while that group waits for the Persist before it (a wait
// the server cannot see, ended only by statement_timeout). Here the first
// group's offset 5 is refused (the key is in the table already) and the
// second group holds offset 7, which the first group's search writes.
func TestCopyAheadWaitsForTheSearch(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	exec(t, conn, `CREATE TABLE uniq (off bigint PRIMARY KEY); INSERT INTO uniq VALUES (5)`)
	s := newSink(t, db, func(c *postgres.Config) {
		c.Table = "uniq"
		c.StatementTimeout = 3 * time.Second
		c.Columns = []postgres.Column{{Name: "off", Type: "bigint"}}
	})
	g1 := sealRange(t, s, 0, 10)
	vals := []string{`{"off":7}`, `{"off":100}`}
	if err := s.Write(ctx, recsAt("q", 0, vals...)); err != nil {
		t.Fatal(err)
	}
	s.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "q", Position: 2}})
	g2, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Had the search waited for the second group's row, statement_timeout
	// would have ended it with the search unfinished.
	err = g1.Persist(ctx)
	if err == nil || !strings.Contains(err.Error(), "refused 1 row") {
		t.Fatalf("Persist of the first group: %v; want its refused row found", err)
	}
	if err := g2.Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if n := postgres.OpenConns(s); n != 0 {
		t.Fatalf("%d connections in use after both groups ended", n)
	}
}
