//go:build integration

package postgres_test

import (
	"context"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/sink/postgres"
)

// The shared sink suite against a real server: flushed groups are in the
// table and aborted ones never; sealed groups commit in order; and the
// runtime's retries of failed writes and persists leave every record in it. The table keeps each record
// value as written (json, not jsonb, which would reformat it), in commit
// order (an identity column), and the field n in a numeric column, so that
// a record whose n is not a number cannot be written.
func TestConformance(t *testing.T) {
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	n := 0
	build := func(t *testing.T, table string) connector.Sink {
		cfg := postgres.NewConfig()
		cfg.URL = db
		cfg.PasswordEnv = pgtest.PasswordEnv
		cfg.Table = table
		cfg.Columns = []postgres.Column{{Name: "doc", Type: "json", Value: true}, {Name: "n", Type: "numeric"}}
		s, err := postgres.New("out", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			n++
			table := "conf_" + string(rune('a'+n))
			if _, err := conn.Exec(context.Background(),
				`CREATE TABLE `+table+` (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, doc json NOT NULL, n numeric)`); err != nil {
				t.Fatal(err)
			}
			return build(t, table)
		},
		Count: func(t *testing.T, s connector.Sink) int {
			return len(values(t, conn, s))
		},
		Written: func(t *testing.T, s connector.Sink) [][]byte {
			return values(t, conn, s)
		},
	})
}
