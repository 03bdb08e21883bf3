//go:build integration

package postgres_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/sink/postgres"
)

// eosHarness is the exactly-once suite's harness against the server: each
// destination is a table of its own (doc json, in commit order) with its
// positions, and every instance over it is sink "out" of the same pipeline.
func eosHarness(t *testing.T) conformance.ExactlyOnceHarness {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	var mu sync.Mutex
	tables := map[connector.Sink]string{}
	n := 0
	build := func(t *testing.T, table string) connector.Sink {
		cfg := postgres.NewConfig()
		cfg.URL = db
		cfg.PasswordEnv = pgtest.PasswordEnv
		cfg.Table = table
		cfg.Columns = []postgres.Column{{Name: "doc", Type: "json", Value: true}}
		s, err := postgres.New("out", cfg)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		tables[s] = table
		mu.Unlock()
		return s
	}
	tableOf := func(s connector.Sink) string {
		mu.Lock()
		defer mu.Unlock()
		return tables[s]
	}
	return conformance.ExactlyOnceHarness{
		New: func(t *testing.T) connector.Sink {
			mu.Lock()
			n++
			table := "eos_" + string(rune('a'+n%26)) + string(rune('a'+n/26))
			mu.Unlock()
			if _, err := conn.Exec(context.Background(),
				`CREATE TABLE `+table+` (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, doc json NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			return build(t, table)
		},
		Reopen:  func(t *testing.T, s connector.Sink) connector.Sink { return build(t, tableOf(s)) },
		Another: func(t *testing.T, s connector.Sink) connector.Sink { return build(t, tableOf(s)) },
		// A dead process's connections close, and the server rolls back
		// what they had begun.
		Crash: func(t *testing.T, s connector.Sink) { s.Close(context.Background()) },
		Held: func(t *testing.T, s connector.Sink) [][]byte {
			return selectDocs(t, conn, tableOf(s))
		},
		CrashPoints: func(s connector.Sink, step func(string)) { postgres.ArmCommitSteps(s.(*postgres.Sink), step) },
	}
}

// selectDocs reads a table's doc column as a reader outside weir does.
func selectDocs(t *testing.T, conn *pgx.Conn, table string) [][]byte {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT doc::text FROM "+table+" ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, []byte(v))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The PostgreSQL sink, unchanged, passes the exactly-once suite against the
// server: killed at every step of its transaction it keeps rows and
// positions together, and its row lock and filter fence a second writer.
func TestExactlyOnceConforms(t *testing.T) {
	conformance.TestExactlyOnce(t, eosHarness(t))
}

// TestExactlyOnceBroken runs the suite against the sink broken by
// unsafe_eos_on.go (positions stored in a transaction of their own); it
// fails by design, so it runs only in the child process of
// TestExactlyOnceCatchesSplitPositions.
func TestExactlyOnceBroken(t *testing.T) {
	if os.Getenv("WEIR_UNSAFE_EOS") != "1" {
		t.Skip("run by TestExactlyOnceCatchesSplitPositions (with -tags unsafe_eos)")
	}
	conformance.TestExactlyOnce(t, eosHarness(t))
}
