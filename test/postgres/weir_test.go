//go:build integration

package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var ctx = context.Background()

// bins holds the binaries built for the tests, one per set of build tags:
// the tests share them.
var bins weirtest.Binaries

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// startWeir starts `weir run -c cfg` with env added to its environment, its
// log name.log beside cfg: a kill loop's runs append to one log.
func startWeir(t *testing.T, bin, cfg, name string, env []string) *weirtest.Proc {
	t.Helper()
	return weirtest.Start(t, bin, filepath.Join(filepath.Dir(cfg), name+".log"), env, "run", "-c", cfg)
}

// passwordIn fails the test if a log holds the server's password.
func passwordIn(t *testing.T, logs ...string) {
	t.Helper()
	pw := os.Getenv("WEIR_POSTGRES_PASSWORD")
	if pw == "" {
		return
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), pw) {
			t.Errorf("the password shows in %s", l)
		}
	}
}

// tally is what a table of ids holds against the ids expected.
type tally struct {
	rows, distinct, missing, unexpected int64
}

func (c tally) duplicates() int64 { return c.rows - c.distinct }

// count compares table's id column with the ids 0..n-1 that keep accepts
// (expressed in SQL as keepSQL over g).
func count(t *testing.T, conn *pgx.Conn, table string, n int, keepSQL string) tally {
	t.Helper()
	var c tally
	err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM `+table).Scan(&c.rows, &c.distinct)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(0, $1::bigint - 1) AS g
		WHERE (`+keepSQL+`) AND NOT EXISTS (SELECT 1 FROM `+table+` e WHERE e.id = g)`, n).Scan(&c.missing)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FROM `+table+` AS e, LATERAL (SELECT e.id AS g) AS x
		WHERE e.id < 0 OR e.id >= $1 OR NOT (`+keepSQL+`)`, n).Scan(&c.unexpected)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
