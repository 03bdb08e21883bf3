// Package pgcdctest has helpers for tests of the PostgreSQL change data
// capture source against a real server: the one .ci/postgres.sh starts.
//
//	bash .ci/postgres.sh start
//	eval "$(bash .ci/postgres.sh env)"
//	go test -tags integration ./source/pgcdc/ ./test/cdc/
//
// Each test gets a database of its own, dropped (with its slots) at the end,
// so tests run in parallel with each other and with other packages' tests.
package pgcdctest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// The variables .ci/postgres.sh env prints.
const (
	URLEnv      = "WEIR_POSTGRES_URL"
	PasswordEnv = "WEIR_POSTGRES_PASSWORD"
)

// DB is a fresh database.
type DB struct {
	Name string
	// URL reaches the database, without a password (which is in
	// PasswordEnv).
	URL  string
	Conn *pgx.Conn // a connection to it, for the test's own statements
	t    testing.TB
}

// NewDB creates a database for t and drops it, and every slot in it, when t
// ends. It skips t when WEIR_POSTGRES_URL is not set.
func NewDB(t testing.TB) *DB {
	t.Helper()
	base := os.Getenv(URLEnv)
	if base == "" {
		t.Skipf("%s is not set: start PostgreSQL with bash .ci/postgres.sh start and eval \"$(bash .ci/postgres.sh env)\"", URLEnv)
	}
	ctx := context.Background()
	admin := Connect(t, base)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "weir_cdc_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db := &DB{Name: name, URL: u.String(), t: t}
	db.Conn = Connect(t, db.URL)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = db.Conn.Close(ctx)
		// Slots one by one (one still active, its walsender on its way out,
		// must not keep the others), walsenders terminated first.
		for range 200 {
			_, _ = admin.Exec(ctx, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`, name)
			rows, err := admin.Query(ctx, `SELECT slot_name FROM pg_replication_slots WHERE database = $1`, name)
			if err != nil {
				break
			}
			left, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			if len(left) == 0 {
				break
			}
			for _, s := range left {
				_, _ = admin.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, s)
			}
			time.Sleep(50 * time.Millisecond) // the walsender is still exiting; nothing to poll for but the catalog
		}
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("dropping database %s: %v", name, err)
		}
		_ = admin.Close(ctx)
	})
	return db
}

// Connect opens a connection to url with the password from the environment.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = os.Getenv(PasswordEnv)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Exec runs statements, failing t on an error.
func (db *DB) Exec(sql string, args ...any) {
	db.t.Helper()
	if _, err := db.Conn.Exec(context.Background(), sql, args...); err != nil {
		db.t.Fatalf("%s: %v", strings.TrimSpace(sql), err)
	}
}

// Slot is a slot's row of pg_replication_slots.
type Slot struct {
	Exists    bool
	Active    bool
	Confirmed uint64
	PID       int32
}

// Slot reads the slot's state.
func (db *DB) Slot(name string) Slot {
	db.t.Helper()
	var s Slot
	var lsn *pglogrepl.LSN
	var pid *int32
	err := db.Conn.QueryRow(context.Background(), `SELECT active, confirmed_flush_lsn, active_pid FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&s.Active, &lsn, &pid)
	if err == pgx.ErrNoRows {
		return s
	}
	if err != nil {
		db.t.Fatalf("reading slot %s: %v", name, err)
	}
	s.Exists = true
	if lsn != nil {
		s.Confirmed = uint64(*lsn)
	}
	if pid != nil {
		s.PID = *pid
	}
	return s
}

// WaitInactive waits until no process streams the slot (a killed client's
// walsender takes a moment to notice), and returns its state then. Only
// then is its confirmed position final: the walsender applies the status
// updates it received before the connection closed.
func (db *DB) WaitInactive(name string, within time.Duration) Slot {
	db.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := db.Slot(name)
		if !s.Active {
			return s
		}
		if time.Now().After(deadline) {
			db.t.Fatalf("slot %s still active after %v", name, within)
		}
		time.Sleep(10 * time.Millisecond) // polling the server's catalog for an external process's exit
	}
}

// Poll calls cond until it returns true, failing t after within. It is the
// one way tests wait for the server or another process.
func Poll(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
