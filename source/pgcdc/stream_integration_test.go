//go:build integration

package pgcdc_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/pgcdctest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/pgcdc"
)

// Guarantee: when the walsender is terminated (pg_terminate_backend) in mid
// stream, the source reconnects with backoff and resumes; no change is lost.
func TestConnectionLossReconnects(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	cfg := config(t, db, "t")
	cfg.Snapshot = "never"
	src, err := pgcdc.New("cdc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &collector{}
	r := startRun(t, src, sink)
	pgcdctest.Poll(t, 30*time.Second, "the slot streamed", func() bool { return db.Slot(cfg.Slot).Active })

	writer := pgcdctest.Connect(t, db.URL)
	const perRound, rounds = 200, 5
	next := 0
	for round := range rounds {
		for range perRound {
			// Some transactions of two rows, so that a transaction is
			// cut in the middle sometimes.
			if _, err := writer.Exec(context.Background(), `INSERT INTO t VALUES ($1), ($2)`, 2*next, 2*next+1); err != nil {
				t.Fatal(err)
			}
			next++
		}
		pid := db.Slot(cfg.Slot).PID
		db.Exec(`SELECT pg_terminate_backend($1)`, pid)
		pgcdctest.Poll(t, 30*time.Second, fmt.Sprintf("a new walsender after termination %d", round+1), func() bool {
			s := db.Slot(cfg.Slot)
			return s.Active && s.PID != pid
		})
	}
	missing := func() []int {
		seen := map[string]bool{}
		for _, o := range sink.all() {
			seen[o.key] = true
		}
		var m []int
		for i := range 2 * next {
			if !seen[fmt.Sprintf(`{"id":%d}`, i)] {
				m = append(m, i)
			}
		}
		return m
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the sink
	}
	if m := missing(); len(m) > 0 {
		t.Fatalf("%d rows never arrived, first %v", len(m), m[:min(len(m), 10)])
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(r.logs.String(), "replication connection lost"); n < rounds {
		t.Errorf("%d reconnections logged, want %d:\n%s", n, rounds, weirtest.Last(r.logs.String(), 20))
	}
}

// Guarantee: on an idle database, the heartbeat moves the slot's confirmed
// position, so the WAL written meanwhile (here by another database) can be
// freed. Without the heartbeat the position stays where it is.
func TestHeartbeatAdvancesIdleSlot(t *testing.T) {
	for _, beat := range []time.Duration{100 * time.Millisecond, 0} {
		t.Run(fmt.Sprint("heartbeat_", beat), func(t *testing.T) {
			db := pgcdctest.NewDB(t)
			other := pgcdctest.NewDB(t)
			db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
			other.Exec(`CREATE TABLE busy (id int8)`)
			cfg := config(t, db, "t")
			cfg.Snapshot = "never"
			cfg.HeartbeatInterval = beat
			src, err := pgcdc.New("cdc", cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := startRun(t, src, &collector{})
			waitStreaming(t, r, db, cfg.Slot)
			start := db.Slot(cfg.Slot).Confirmed
			for range 20 {
				other.Exec(`INSERT INTO busy SELECT generate_series(1, 1000)`)
			}
			if beat > 0 {
				pgcdctest.Poll(t, 30*time.Second, "the confirmed position to advance", func() bool {
					return db.Slot(cfg.Slot).Confirmed > start
				})
				return
			}
			// No heartbeat: a second of keepalives (carrying the server's
			// WAL end, far ahead) must leave the confirmed position alone.
			deadline := time.Now().Add(time.Second)
			for time.Now().Before(deadline) {
				if c := db.Slot(cfg.Slot).Confirmed; c != start {
					t.Fatalf("the confirmed position moved from %X to %X with nothing delivered", start, c)
				}
				time.Sleep(20 * time.Millisecond) // sampling the slot over the second
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Guarantee: keepalives that ask for a reply are answered (so the server does
// not drop the connection) without confirming the WAL position they carry.
// wal_sender_timeout is 1s for this connection, status_interval 30s: only the
// replies keep it alive.
func TestKeepalivesAnsweredWithoutAdvancing(t *testing.T) {
	db := pgcdctest.NewDB(t)
	other := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	other.Exec(`CREATE TABLE busy (id int8)`)
	cfg := config(t, db, "t")
	cfg.Snapshot = "never"
	cfg.StatusInterval = 30 * time.Second
	cfg.URL += "?options=-c%20wal_sender_timeout%3D1s"
	src, err := pgcdc.New("cdc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, src, &collector{})
	waitStreaming(t, r, db, cfg.Slot)
	s0 := db.Slot(cfg.Slot)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		other.Exec(`INSERT INTO busy SELECT generate_series(1, 100)`)
		s := db.Slot(cfg.Slot)
		if s.Confirmed != s0.Confirmed {
			t.Fatalf("the confirmed position moved from %X to %X with nothing delivered", s0.Confirmed, s.Confirmed)
		}
		time.Sleep(20 * time.Millisecond) // sampling the slot over three wal_sender_timeouts
	}
	if s := db.Slot(cfg.Slot); !s.Active || s.PID != s0.PID {
		t.Fatalf("the walsender changed (%d to %d, active %v): the server dropped the connection", s0.PID, s.PID, s.Active)
	}
	if strings.Contains(r.logs.String(), "connection lost") {
		t.Fatalf("the connection was lost:\n%s", weirtest.Last(r.logs.String(), 10))
	}
	// A change still flows, and is then confirmed.
	db.Exec(`INSERT INTO t VALUES (1)`)
	r.waitRecords(1, 30*time.Second)
	pgcdctest.Poll(t, 30*time.Second, "the change to be confirmed", func() bool { return db.Slot(cfg.Slot).Confirmed > s0.Confirmed })
}

// Guarantee: batches hold whole transactions, a record's offset is its
// transaction's commit LSN and lies below its batch's End, and Ends only
// grow. A transaction larger than max_batch_records is split: its first
// parts carry the End before it (so its position is never committed until
// all of it is delivered), its last part its own End.
func TestBatchPositions(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	cfg := config(t, db, "t")
	cfg.Snapshot = "never"
	cfg.MaxBatchRecords = 10
	db.Exec(fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, cfg.Slot))
	db.Exec(`CREATE PUBLICATION weir_test FOR TABLE t`)
	cfg.CreatePublication = false
	db.Exec(`INSERT INTO t VALUES (1)`)
	db.Exec(`INSERT INTO t SELECT generate_series(2, 36)`) // 35 changes: four batches
	db.Exec(`INSERT INTO t VALUES (37)`)
	src, err := pgcdc.New("cdc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h := &host{}
	if err := src.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	var batches []connector.Batch
	n := 0
	for n < 37 {
		var b connector.Batch
		if err := src.Poll(ctx, &b); err != nil {
			t.Fatal(err)
		}
		n += len(b.Records)
		batches = append(batches, b)
	}
	var prevEnd checkpoint.Position
	var split []connector.Batch
	for i, b := range batches {
		if b.End < prevEnd {
			t.Fatalf("batch %d ends at %d, before the previous batch's end %d", i, b.End, prevEnd)
		}
		for _, r := range b.Records {
			off := checkpoint.Position(r.Origin.Offset)
			if off < prevEnd {
				t.Fatalf("batch %d: a record at %d, below the previous batch's end %d", i, off, prevEnd)
			}
			if off >= b.End {
				split = append(split, b)
				break
			}
		}
		prevEnd = b.End
	}
	// The 35-change transaction: three batches at the End before it, then
	// its last part at its own End.
	if len(split) != 3 {
		t.Fatalf("%d batches hold a part of a transaction that is not their last, want 3", len(split))
	}
	for _, b := range split {
		if len(b.Records) != 10 {
			t.Errorf("a split part of %d records, want the batch limit 10", len(b.Records))
		}
	}
}

// Guarantee: the password comes from the environment variable password_env
// names and appears in no error and no log line.
func TestPasswordNeverShown(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	const wrong = "Wr0ng-pa55word-visible-if-leaked"
	t.Setenv("PGCDC_TEST_PASSWORD", wrong)
	cfg := config(t, db, "t")
	cfg.PasswordEnv = "PGCDC_TEST_PASSWORD"
	src, err := pgcdc.New("cdc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := &host{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	err = src.Open(context.Background(), h)
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	if !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("error %q does not say the password was refused", err)
	}
	for what, s := range map[string]string{"error": err.Error(), "log": logs.String(), "config": fmt.Sprintf("%+v %#v", cfg, cfg)} {
		if strings.Contains(s, wrong) {
			t.Errorf("the %s shows the password: %s", what, s)
		}
	}

	cfg.PasswordEnv = "PGCDC_TEST_PASSWORD_UNSET"
	os.Unsetenv("PGCDC_TEST_PASSWORD_UNSET")
	src, _ = pgcdc.New("cdc", cfg)
	err = src.Open(context.Background(), &host{})
	if err == nil || !strings.Contains(err.Error(), "PGCDC_TEST_PASSWORD_UNSET") {
		t.Errorf("Open with an unset password variable: %v, want an error naming it", err)
	}

	// The right one, from the environment.
	cfg.PasswordEnv = pgcdctest.PasswordEnv
	src, _ = pgcdc.New("cdc", cfg)
	if err := src.Open(context.Background(), &host{}); err != nil {
		t.Fatalf("Open with the password from %s: %v", pgcdctest.PasswordEnv, err)
	}
	_ = src.Close(context.Background())
}

// waitStreaming waits until the source streams the slot: the walsender is
// up and the slot has its confirmed position (it has none while it is being
// created).
func waitStreaming(t *testing.T, r *run, db *pgcdctest.DB, slot string) {
	t.Helper()
	pgcdctest.Poll(t, 30*time.Second, "the slot streamed", func() bool {
		select {
		case <-r.done:
			t.Fatalf("the pipeline ended: %v\n%s", r.err, weirtest.Last(r.logs.String(), 20))
		default:
		}
		s := db.Slot(slot)
		return s.Active && s.Confirmed != 0 && strings.Contains(r.logs.String(), "pgcdc: streaming")
	})
}

// Guarantee: a replication connection that cannot be made again is a
// failure the runtime shows (pipeline.FailureReporter: /readyz,
// /debug/stalls, the status): Failing reports it from the loss on, with the
// reason (here another consumer holding the slot), though Poll returns
// nothing meanwhile and the source reconnects by itself; once the slot is
// free the source streams again, Failing clears and no change is lost.
// Before, an idle source whose server went away looked healthy.
func TestLostConnectionIsFailing(t *testing.T) {
	db := pgcdctest.NewDB(t)
	db.Exec(`CREATE TABLE t (id int8 PRIMARY KEY)`)
	cfg := config(t, db, "t")
	cfg.Snapshot = "never"
	// Slow reconnections, so that the test's consumer takes the slot first.
	cfg.ReconnectBackoff, cfg.ReconnectBackoffMax = 400*time.Millisecond, 400*time.Millisecond
	src, err := pgcdc.New("cdc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var _ pipeline.FailureReporter = src
	sink := &collector{}
	r := startRun(t, src, sink)
	pgcdctest.Poll(t, 30*time.Second, "the slot streamed", func() bool { return db.Slot(cfg.Slot).Active })
	db.Exec(`INSERT INTO t SELECT generate_series(0, 99)`)
	r.waitRecords(100, 30*time.Second)
	if since, n, err := src.Failing(); !since.IsZero() || err != nil {
		t.Fatalf("failing since %v (%d attempts): %v; want healthy while streaming", since, n, err)
	}

	// Another consumer takes the slot from the source's walsender.
	lost := time.Now()
	holder := holdSlot(t, db, cfg.Slot)
	pgcdctest.Poll(t, 30*time.Second, "the source failing, naming the held slot", func() bool {
		since, n, err := src.Failing()
		return !since.IsZero() && n >= 2 && err != nil && strings.Contains(err.Error(), "replication connection lost") &&
			strings.Contains(err.Error(), "55006")
	})
	since, n, err := src.Failing()
	t.Logf("failing %v after the slot was taken (%d attempts): %v", time.Since(lost).Round(time.Millisecond), n, err)
	if since.Before(lost) {
		t.Errorf("failing since %v, before the slot was taken at %v", since, lost)
	}
	db.Exec(`INSERT INTO t SELECT generate_series(100, 199)`)
	_ = holder.Close(context.Background())

	got := r.waitRecords(200, 60*time.Second)
	seen := map[string]bool{}
	for _, o := range got {
		seen[o.key] = true
	}
	for i := range 200 {
		if !seen[fmt.Sprintf(`{"id":%d}`, i)] {
			t.Fatalf("row %d never arrived", i)
		}
	}
	pgcdctest.Poll(t, 30*time.Second, "Failing cleared", func() bool {
		since, _, err := src.Failing()
		return since.IsZero() && err == nil
	})
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// holdSlot terminates the walsender streaming slot and streams it itself,
// on a replication connection the caller closes; it retries until the old
// walsender has let the slot go and before the source takes it back.
func holdSlot(t *testing.T, db *pgcdctest.DB, slot string) *pgconn.PgConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := pgconn.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	pc.Password = os.Getenv(pgcdctest.PasswordEnv)
	pc.RuntimeParams["replication"] = "database"
	for {
		if s := db.Slot(slot); s.Active {
			db.Exec(`SELECT pg_terminate_backend($1)`, s.PID)
		}
		conn, err := pgconn.ConnectConfig(ctx, pc)
		if err != nil {
			t.Fatalf("a replication connection of the test's own: %v", err)
		}
		err = pglogrepl.StartReplication(ctx, conn, slot, 0, pglogrepl.StartReplicationOptions{
			PluginArgs: []string{"proto_version '1'", "publication_names 'weir_test'"}})
		if err == nil {
			t.Cleanup(func() { _ = conn.Close(context.Background()) })
			return conn
		}
		_ = conn.Close(context.Background())
		if ctx.Err() != nil {
			t.Fatalf("taking slot %s: %v", slot, err)
		}
		time.Sleep(20 * time.Millisecond) // the old walsender is still exiting
	}
}
