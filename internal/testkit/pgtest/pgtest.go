// Package pgtest helps test weir's PostgreSQL connectors against a real
// server: it reads the server's address from the environment that
// `.ci/postgres.sh env` prints, and gives each test a database of its own.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The variables `bash .ci/postgres.sh env` prints.
const (
	URLEnv      = "WEIR_POSTGRES_URL"
	PasswordEnv = "WEIR_POSTGRES_PASSWORD"
)

// URL returns the server's URL (without a password) and skips the test when
// it is unset: start a server with `bash .ci/postgres.sh start` and
// `eval "$(bash .ci/postgres.sh env)"`.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(URLEnv)
	if u == "" {
		t.Skipf(`%s is not set; start a server with bash .ci/postgres.sh start and eval "$(bash .ci/postgres.sh env)"`, URLEnv)
	}
	return u
}

// Connect opens a connection to the database at rawURL, with the password
// from the environment, closed when the test ends.
func Connect(t testing.TB, rawURL string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = os.Getenv(PasswordEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connecting to %s: %v", rawURL, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Database creates a database of the test's own and returns its URL; it is
// dropped when the test ends (unless the test failed and WEIR_KEEP_DB is set,
// for a look afterwards).
func Database(t testing.TB) string {
	t.Helper()
	base := URL(t)
	var b [6]byte
	rand.Read(b[:])
	name := "weir_test_" + hex.EncodeToString(b[:])
	admin := Connect(t, base)
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("WEIR_KEEP_DB") != "" {
			t.Logf("database %s kept", name)
			return
		}
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("dropping database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
