package pgcdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// checkServer reads the server's version and refuses what the source cannot
// serve faithfully.
func (s *Source) checkServer(ctx context.Context) error {
	var version int
	var encoding, walLevel string
	err := s.meta.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_encoding'), current_setting('wal_level')`).
		Scan(&version, &encoding, &walLevel)
	if err != nil {
		return fmt.Errorf("pgcdc: reading the server's settings: %w", err)
	}
	s.version = version
	if version < 100000 {
		return fmt.Errorf("pgcdc: the server is version %d: pgoutput needs PostgreSQL 10 or later", version/10000)
	}
	if encoding != "UTF8" {
		// Values become JSON strings, which are UTF-8: a SQL_ASCII or
		// LATIN1 database's bytes could not be carried unchanged.
		return fmt.Errorf("pgcdc: the database's encoding is %s: only UTF8 databases are supported", encoding)
	}
	if walLevel != "logical" {
		return fmt.Errorf("pgcdc: wal_level is %s: set wal_level = logical in postgresql.conf and restart the server", walLevel)
	}
	if s.cfg.HeartbeatInterval > 0 && version < 140000 {
		return fmt.Errorf("pgcdc: heartbeat_interval needs PostgreSQL 14 or later (pgoutput's messages); the server is %d: set heartbeat_interval: 0", version/10000)
	}
	return nil
}

// setupPublication checks (or creates) the publication and returns the
// tables to capture, as schema.table, sorted.
func (s *Source) setupPublication(ctx context.Context) ([]string, error) {
	want := make([]string, 0, len(s.cfg.Tables))
	for _, t := range s.cfg.Tables {
		schema, table, _ := splitTable(t)
		want = append(want, schema+"."+table)
	}
	slices.Sort(want)
	want = slices.Compact(want)

	var exists bool
	if err := s.meta.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $1)`, s.cfg.Publication).Scan(&exists); err != nil {
		return nil, fmt.Errorf("pgcdc: looking up publication %s: %w", s.cfg.Publication, err)
	}
	if !exists {
		if !s.cfg.CreatePublication {
			return nil, fmt.Errorf("pgcdc: publication %s does not exist: create it (CREATE PUBLICATION %s FOR TABLE ...) or set create_publication: true", s.cfg.Publication, s.cfg.Publication)
		}
		ids := make([]string, len(want))
		for i, q := range want {
			schema, table, _ := splitTable(q)
			ids[i] = pgx.Identifier{schema, table}.Sanitize()
		}
		sql := "CREATE PUBLICATION " + pgx.Identifier{s.cfg.Publication}.Sanitize() + " FOR TABLE " + strings.Join(ids, ", ")
		var pe *pgconn.PgError
		switch _, err := s.meta.Exec(ctx, sql); {
		case errors.As(err, &pe) && (pe.Code == "42710" || pe.Code == "23505"):
			// Another pipeline created it at the same moment (the check
			// and the creation are not atomic; the loser fails with
			// duplicate_object, or on pg_publication's unique index):
			// what it publishes is checked below like any existing
			// publication's.
			s.log.Info("pgcdc: another session created the publication at the same moment", "publication", s.cfg.Publication)
		case err != nil:
			return nil, fmt.Errorf("pgcdc: creating publication %s: %w", s.cfg.Publication, err)
		default:
			s.log.Info("pgcdc: created publication", "publication", s.cfg.Publication, "tables", want)
		}
	}
	rows, err := s.meta.Query(ctx, `SELECT schemaname || '.' || tablename FROM pg_catalog.pg_publication_tables WHERE pubname = $1 ORDER BY 1`, s.cfg.Publication)
	if err != nil {
		return nil, fmt.Errorf("pgcdc: listing publication %s: %w", s.cfg.Publication, err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgcdc: listing publication %s: %w", s.cfg.Publication, err)
	}
	if len(want) == 0 {
		if len(have) == 0 {
			return nil, fmt.Errorf("pgcdc: publication %s publishes no table: add tables to it", s.cfg.Publication)
		}
		return have, nil
	}
	var missing, extra []string
	for _, q := range want {
		if _, ok := slices.BinarySearch(have, q); !ok {
			missing = append(missing, q)
		}
	}
	for _, q := range have {
		if _, ok := slices.BinarySearch(want, q); !ok {
			extra = append(extra, q)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("pgcdc: publication %s does not publish %s: add them (ALTER PUBLICATION %s ADD TABLE ...) or remove them from tables",
			s.cfg.Publication, strings.Join(missing, ", "), s.cfg.Publication)
	}
	if len(extra) > 0 {
		// The stream would carry their changes while the snapshot skipped
		// them: a consumer would see updates of rows it never saw.
		return nil, fmt.Errorf("pgcdc: publication %s also publishes %s: list them in tables too, or use a publication of exactly the tables",
			s.cfg.Publication, strings.Join(extra, ", "))
	}
	return want, nil
}

// slotState returns the slot's confirmed position, and whether it exists.
func (s *Source) slotState(ctx context.Context) (uint64, bool, error) {
	var plugin, db, current string
	var confirmed *pglogrepl.LSN
	err := s.meta.QueryRow(ctx, `SELECT plugin, database, current_database(), confirmed_flush_lsn FROM pg_catalog.pg_replication_slots WHERE slot_name = $1`, s.cfg.Slot).
		Scan(&plugin, &db, &current, &confirmed)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("pgcdc: looking up slot %s: %w", s.cfg.Slot, err)
	}
	if plugin != "pgoutput" {
		return 0, false, fmt.Errorf("pgcdc: slot %s uses the %s plugin: the source needs a pgoutput slot; name another slot", s.cfg.Slot, plugin)
	}
	if db != current {
		return 0, false, fmt.Errorf("pgcdc: slot %s belongs to database %s, not %s: name another slot", s.cfg.Slot, db, current)
	}
	if confirmed == nil {
		return 0, false, fmt.Errorf("pgcdc: slot %s has no confirmed position", s.cfg.Slot)
	}
	return uint64(*confirmed), true, nil
}

// dropSlot drops the slot, once its walsender has gone (it leaves shortly
// after the connection closes).
func (s *Source) dropSlot(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		_, err := s.meta.Exec(dctx, `SELECT pg_drop_replication_slot($1) FROM pg_catalog.pg_replication_slots WHERE slot_name = $1 AND NOT active`, s.cfg.Slot)
		if err != nil {
			return fmt.Errorf("pgcdc: dropping slot %s: %w", s.cfg.Slot, err)
		}
		_, exists, err := s.slotState(dctx)
		if err != nil || !exists {
			if err == nil {
				s.log.Info("pgcdc: dropped slot", "slot", s.cfg.Slot)
			}
			return err
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
			return fmt.Errorf("pgcdc: dropping slot %s: still active: %w", s.cfg.Slot, dctx.Err())
		}
	}
}

// heartbeatPrefix marks the source's heartbeat messages in the WAL.
const heartbeatPrefix = "weir_heartbeat"

// heartbeat writes a transactional logical decoding message. The slot's
// stream receives it as a transaction without changes, which moves the
// position past the WAL written meanwhile (by other databases, by tables
// outside the publication): once delivered and committed it lets the server
// free that WAL. A failure is logged; the next beat tries again.
func (s *Source) heartbeat(ctx context.Context) {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.meta.Exec(hctx, `SELECT pg_logical_emit_message(true, $1, $2)`, heartbeatPrefix, s.cfg.Slot); err != nil {
		s.log.Warn("pgcdc: heartbeat failed", "slot", s.cfg.Slot, "err", err)
		s.reconnectMeta(ctx)
	}
}

// checkWAL logs how much WAL the slot holds back: from its restart position
// (what the server must keep) and from its confirmed position (what is read
// but not yet durable downstream) to the server's current position.
func (s *Source) checkWAL(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var retained, unconfirmed *int64
	err := s.meta.QueryRow(qctx, retainedWALQuery, s.cfg.Slot).Scan(&retained, &unconfirmed)
	if err != nil {
		s.log.Warn("pgcdc: measuring the slot's retained WAL failed", "slot", s.cfg.Slot, "err", err)
		s.reconnectMeta(ctx)
		return
	}
	if retained == nil || unconfirmed == nil {
		return
	}
	attrs := []any{"slot", s.cfg.Slot, "retained_wal_bytes", *retained, "unconfirmed_wal_bytes", *unconfirmed}
	if s.cfg.RetainedWALWarning > 0 && *retained > s.cfg.RetainedWALWarning {
		s.log.Warn("pgcdc: the slot retains much WAL: the pipeline is behind, or the captured tables are idle and heartbeat_interval is 0", attrs...)
		return
	}
	s.log.Info("pgcdc: retained WAL", attrs...)
}

// retainedWALQuery is the measure docs/postgres-cdc.md gives for monitoring.
const retainedWALQuery = `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::int8,
	pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::int8
	FROM pg_catalog.pg_replication_slots WHERE slot_name = $1`

// reconnectMeta replaces a broken ordinary connection.
func (s *Source) reconnectMeta(ctx context.Context) {
	if !s.meta.IsClosed() {
		return
	}
	conn, err := s.cfg.connectSQL(ctx)
	if err != nil {
		return
	}
	s.meta = conn
	s.cat.mu.Lock()
	s.cat.conn = conn
	s.cat.mu.Unlock()
}
