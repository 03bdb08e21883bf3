//go:build integration

package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/sink/postgres"
)

// Sinks opened at the same instant on a database without their table or
// positions table all open: the creation is serialised by an advisory lock
// (CREATE TABLE IF NOT EXISTS alone failed with 23505 on pg_type or 42P07
// in 3 of 5 starts of three members, issue 25). 20 trials of 4 sinks, each
// trial on tables of its own.
func TestConcurrentCreation(t *testing.T) {
	db := pgtest.Database(t)
	for trial := range 20 {
		const n = 4
		var start, done sync.WaitGroup
		start.Add(1)
		errs := make([]error, n)
		for i := range n {
			done.Add(1)
			go func() {
				defer done.Done()
				cfg := postgres.NewConfig()
				cfg.URL, cfg.PasswordEnv = db, pgtest.PasswordEnv
				cfg.Table, cfg.CreateTable = fmt.Sprintf("race_%d", trial), true
				cfg.PositionsTable = fmt.Sprintf("positions_%d", trial)
				cfg.Columns = []postgres.Column{{Name: "id", Type: "bigint"}}
				s, err := postgres.New(fmt.Sprintf("db%d", i), cfg)
				if err != nil {
					errs[i] = err
					return
				}
				start.Wait()
				if errs[i] = s.Open(ctx); errs[i] == nil {
					s.Close(ctx)
				}
			}()
		}
		start.Done()
		done.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("trial %d: sink %d of %d started together: %v", trial, i, n, err)
			}
		}
	}
}

// logTo sends slog.Default to buf for the test.
func logTo(t *testing.T) *syncBuf {
	t.Helper()
	b := &syncBuf{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(b, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return b
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The start rule (docs/connectors.md): a server that does not answer is
// waited for up to connect_timeout with a warning per attempt naming it and
// why, and then Open fails with the same words. It used to fail at once on
// "connection refused".
func TestOpenWaitsForTheServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	log := logTo(t)
	cfg := postgres.NewConfig()
	cfg.URL, cfg.PasswordEnv = "postgres://weir@"+addr+"/nowhere", ""
	cfg.Table, cfg.ConnectTimeout = "t", 2*time.Second
	cfg.Columns = []postgres.Column{{Name: "id", Type: "bigint"}}
	s, err := postgres.New("db", cfg)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err = s.Open(context.Background())
	if err == nil {
		s.Close(ctx)
		t.Fatal("Open succeeded with no server")
	}
	if waited := time.Since(began); waited < 2*time.Second {
		t.Fatalf("Open failed after %v, before connect_timeout (2s): %v", waited, err)
	}
	words := []string{"the server does not answer", addr, "connection refused"}
	for _, w := range append(words, "sink/postgres: sink db:", "connect_timeout (2s)", "attempts") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not wrap the cause", err)
	}
	warnings := 0
	for l := range strings.Lines(log.String()) {
		if strings.Contains(l, "level=WARN") {
			warnings++
			for _, w := range words {
				if !strings.Contains(l, w) {
					t.Errorf("warning %q does not say %q", l, w)
				}
			}
		}
	}
	if warnings < 2 {
		t.Fatalf("%d warnings while waiting, want one per attempt:\n%s", warnings, log)
	}
}

// Bad credentials are not waited for: Open fails at the first attempt.
func TestOpenFailsAtOnceOnBadCredentials(t *testing.T) {
	db := pgtest.Database(t)
	t.Setenv("WEIR_WRONG_PASSWORD", "not-the-password")
	cfg := postgres.NewConfig()
	cfg.URL, cfg.PasswordEnv = db, "WEIR_WRONG_PASSWORD"
	cfg.Table = "t"
	cfg.Columns = []postgres.Column{{Name: "id", Type: "bigint"}}
	s, err := postgres.New("db", cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := logTo(t)
	if err := s.Open(ctx); err == nil || !strings.Contains(err.Error(), "28P01") {
		t.Fatalf("Open with a wrong password: %v, want the authentication failure", err)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("a refused password was retried:\n%s", log)
	}
}
