//go:build integration

package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/sink/postgres"
)

// values returns the doc column of the sink's table in commit order.
func values(t *testing.T, conn *pgx.Conn, s connector.Sink) [][]byte {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT doc::text FROM "+tableOf(s)+" ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
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

// tableOf returns the qualified table name s writes to, from its
// description ("postgres public.conf_b: ...").
func tableOf(s connector.Sink) string {
	return strings.TrimSuffix(strings.Fields(s.(*postgres.Sink).Describe())[1], ":")
}
