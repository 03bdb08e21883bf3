//go:build integration

package exactlyonce_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weir-etl/weir/internal/testkit/pgtest"
)

// tableCount is what a SELECT finds of the ids 0..n-1 in table ev.
type tableCount struct {
	rows, distinct, missing, unexpected int64
}

func countTable(t *testing.T, conn *pgx.Conn, n int) tableCount {
	t.Helper()
	var c tableCount
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM ev`).Scan(&c.rows, &c.distinct); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(0, $1::bigint - 1) AS g WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.id = g)`, n).Scan(&c.missing); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ev WHERE id < 0 OR id >= $1 OR (doc->>'doubled')::bigint <> 2 * id`, n).Scan(&c.unexpected); err != nil {
		t.Fatal(err)
	}
	return c
}

// twoSinks runs the chaos into an exactly-once file sink that both members
// share and a PostgreSQL table, and returns what the reader script finds in
// the directory and SQL in the table.
func twoSinks(t *testing.T, tags string, env []string, n, kills, stops, batch int) (chunkCount, tableCount) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	// Made before the members start: two members creating it at once is
	// another test's business.
	if _, err := conn.Exec(ctx, `CREATE TABLE ev (id bigint, doc jsonb); CREATE INDEX ev_id ON ev (id)`); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	c := newChaos(t, buildWeir(t, tags), env, n, min(batch, 1000)/2, func([]string) string { return fmt.Sprintf(twoSinksYAML, out, db, batch) })
	// For the unsafe variants, small groups and the whole input there from
	// the start: the members are committing at every kill.
	c.upfront = batch < 1000
	c.onMarker, c.markers = c.upfront, []string{"file", "postgres"}
	c.run(kills, stops)
	return readChunks(t, out, c.n, 0), countTable(t, conn, c.n)
}

// Kafka → map → an exactly-once file sink shared by two members and
// PostgreSQL, SIGKILL and SIGSTOP cycles and rebalances over 400k records
// (short in CI), then a clean run: the reader script finds every record
// once in the directory, and SQL every record once in the table.
func TestTwoSinksKillExactlyOnce(t *testing.T) {
	n := size(80_000, 400_000)
	files, table := twoSinks(t, "", nil, n, size(6, 22), size(2, 4), 1000)
	t.Logf("the reader script: %+v; the table: %+v", files, table)
	if files.Missing != 0 || files.Duplicates != 0 || files.Unexpected != 0 || files.Records != int64(n) {
		t.Errorf("the file sink's directory: %d records for %d ids, %d missing %v, %d duplicates %v, %d unexpected; want every record once",
			files.Records, n, files.Missing, files.FirstMissing, files.Duplicates, files.FirstDuplicates, files.Unexpected)
	}
	if table.missing != 0 || table.rows != table.distinct || table.unexpected != 0 || table.rows != int64(n) {
		t.Errorf("the table: %d rows, %d distinct ids, %d missing, %d unexpected; want every record once", table.rows, table.distinct, table.missing, table.unexpected)
	}
}

// With both sinks built with unsafe_eos (positions outside the data's
// atomic step, with a wait between), the same checks must find records
// twice in each.
func TestTwoSinksUnsafeVariantIsCaught(t *testing.T) {
	files, table := twoSinks(t, "unsafe_eos", []string{"WEIR_UNSAFE_EOS=1", "WEIR_UNSAFE_EOS_PAUSE=100ms"}, 40_000, 4, 0, 200)
	t.Logf("the reader script: %+v; the table: %+v", files, table)
	if files.Missing != 0 || table.missing != 0 {
		t.Fatalf("records missing (%d in the directory, %d in the table): even the unsafe variants are at-least-once", files.Missing, table.missing)
	}
	if files.Duplicates == 0 || table.rows == table.distinct {
		t.Fatalf("the unsafe variants wrote %d duplicates in the directory and %d in the table: the checks cannot tell exactly-once from at-least-once", files.Duplicates, table.rows-table.distinct)
	}
}
