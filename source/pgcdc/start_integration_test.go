//go:build integration

package pgcdc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/pgcdctest"
	"github.com/weir-etl/weir/source/pgcdc"
)

// openLogged opens src with a host whose log the test reads.
func openLogged(t *testing.T, src *pgcdc.Source) (*syncBuffer, error) {
	t.Helper()
	logs := &syncBuffer{}
	h := kafkatest.NewHost()
	h.Log = slog.New(slog.NewTextHandler(logs, nil))
	err := src.Open(context.Background(), h)
	return logs, err
}

// The start rule for a slot another consumer streams (issue 25): the
// source retried it for ever, logging "replication connection lost"
// although it never had the connection. It now waits up to connect_timeout
// with a warning per attempt naming the slot and its holder (process id and
// application_name), and then fails with the same words; once the holder
// is gone during the wait, it starts.
func TestBusySlotAtStart(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	cfg := config(t, db, "t")
	cfg.Snapshot = "never"
	holder, err := pgcdc.New("first", cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, holder, &collector{})
	pgcdctest.Poll(t, 30*time.Second, "the slot streamed", func() bool { return db.Slot(cfg.Slot).Active })

	second := *cfg
	second.DataDir = t.TempDir()
	// Long enough for two attempts on a loaded machine, where one attempt
	// (a connection, the slot query) can take seconds.
	second.ConnectTimeout = 10 * time.Second
	src, err := pgcdc.New("second", &second)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	logs, err := openLogged(t, src)
	src.Close(context.Background())
	if err == nil {
		t.Fatal("Open of a slot another consumer streams succeeded")
	}
	if waited := time.Since(began); waited < second.ConnectTimeout {
		t.Fatalf("Open failed after %v, before connect_timeout: %v", waited, err)
	}
	pid := db.Slot(cfg.Slot).PID
	words := []string{"slot " + cfg.Slot, fmt.Sprintf("PID %d", pid), "application_name", "weir", "in use by another consumer"}
	for _, w := range append(words, "pgcdc: source second:", "connect_timeout (10s)") {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	warned := 0
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "level=WARN") {
			warned++
			for _, w := range words {
				if !strings.Contains(l, w) {
					t.Errorf("warning %q does not say %q", l, w)
				}
			}
		}
	}
	if warned < 2 || strings.Contains(logs.String(), "replication connection lost") {
		t.Fatalf("%d warnings, want one per attempt and no word of a lost connection:\n%s", warned, logs)
	}

	// The holder stops while a second one waits: it starts.
	second.ConnectTimeout = time.Minute
	src, err = pgcdc.New("second", &second)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan error, 1)
	go func() { _, err := openLogged(t, src); opened <- err }()
	time.Sleep(500 * time.Millisecond) // the scenario: the holder leaves while the other waits
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("Open once the holder stopped: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open did not return once the holder stopped")
	}
	src.Close(context.Background())
}

// A server that does not answer at start is waited for (it used to fail at
// once), then the start fails naming it.
func TestUnreachableServerAtStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := pgcdc.NewConfig()
	cfg.URL, cfg.Slot, cfg.Publication, cfg.Snapshot = "postgres://weir@"+addr+"/db", "s", "p", "never"
	cfg.ConnectTimeout = 2 * time.Second
	src, err := pgcdc.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := openLogged(t, src)
	src.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "connect_timeout (2s)") {
		t.Fatalf("Open: %v; want the wait's error naming %s", err, addr)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n < 2 || !strings.Contains(logs.String(), addr) {
		t.Fatalf("%d warnings, want one per attempt naming %s:\n%s", n, addr, logs)
	}
}

// Sources opened at the same instant with create_publication on a database
// without the publication all open: a creation that loses the race (42710)
// (42710, or 23505 on pg_publication_pubname_index) takes the publication the other made (a sibling of the sink's table race,
// issue 25). Each uses its own slot.
func TestConcurrentPublicationCreation(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	for trial := range 5 {
		const n = 3
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			cfg := config(t, db, "t")
			cfg.Snapshot, cfg.Publication = "never", fmt.Sprintf("pub_%d", trial)
			cfg.Slot = fmt.Sprintf("%s_%d_%d", db.Name, trial, i)
			src, err := pgcdc.New("in", cfg)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				<-start
				_, err := openLogged(t, src)
				src.Close(context.Background())
				errs <- err
			}()
		}
		close(start)
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
		}
	}
}
