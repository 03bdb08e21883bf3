package pgcdc

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
)

// lookup answers the two questions a relation's columns raise that pgoutput
// does not: how a type's text becomes JSON, and which columns are the key.
// The catalog asks PostgreSQL; unit tests give answers of their own.
type lookup interface {
	// typeOf resolves a type OID.
	typeOf(ctx context.Context, oid uint32) (*colType, error)
	// keyOf returns the record key's columns of a table: its primary key, or
	// else its replica identity index; none for a table with neither.
	keyOf(ctx context.Context, relid uint32) ([]string, error)
}

// lookupError is a catalog query that failed: the connection, not the data,
// is at fault, so the stream reconnects and reads the transaction again.
type lookupError struct{ err error }

func (e *lookupError) Error() string { return e.err.Error() }
func (e *lookupError) Unwrap() error { return e.err }

// catalog is the lookup on a live connection, with a cache of types (a type's
// text form never changes, so they are kept for the source's life). It is
// used by one goroutine at a time (the snapshot, then the stream) but locks
// anyway: a cache is cheap to make safe.
type catalog struct {
	mu    sync.Mutex
	conn  *pgx.Conn
	types map[uint32]*colType
}

func newCatalog(conn *pgx.Conn) *catalog {
	return &catalog{conn: conn, types: map[uint32]*colType{}}
}

// builtinType resolves the types that need no catalog query; ok is false for
// the others.
func builtinType(oid uint32) (*colType, bool) {
	if k, ok := builtin[oid]; ok {
		return &colType{kind: k}, true
	}
	if elem, ok := builtinArrays[oid]; ok {
		et, _ := builtinType(elem)
		if et == nil {
			et = &colType{kind: kString}
		}
		return &colType{kind: kArray, elem: et, delim: ','}, true
	}
	switch oid {
	case 25, 1042, 1043, 1082, 1083, 1186, 1266, 2950, 18, 19:
		// text, bpchar, varchar, date, time, interval, timetz, uuid, char, name
		return &colType{kind: kString}, true
	}
	return nil, false
}

func (c *catalog) typeOf(ctx context.Context, oid uint32) (*colType, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resolve(ctx, oid, 0)
}

func (c *catalog) resolve(ctx context.Context, oid uint32, depth int) (*colType, error) {
	if t, ok := c.types[oid]; ok {
		return t, nil
	}
	if t, ok := builtinType(oid); ok {
		c.types[oid] = t
		return t, nil
	}
	if depth > 8 {
		return nil, fmt.Errorf("pgcdc: type %d: domains or arrays nested too deep", oid)
	}
	var typtype, category string
	var elem, base uint32
	err := c.conn.QueryRow(ctx,
		`SELECT typtype::text, typcategory::text, typelem, typbasetype FROM pg_catalog.pg_type WHERE oid = $1`, oid).
		Scan(&typtype, &category, &elem, &base)
	if err == pgx.ErrNoRows {
		// A type dropped since: its values still arrive as text.
		t := &colType{kind: kString}
		c.types[oid] = t
		return t, nil
	}
	if err != nil {
		return nil, &lookupError{fmt.Errorf("pgcdc: looking up type %d: %w", oid, err)}
	}
	var t *colType
	switch {
	case typtype == "d" && base != 0:
		// A domain is written as its base type.
		t, err = c.resolve(ctx, base, depth+1)
	case category == "A" && elem != 0:
		var et *colType
		if et, err = c.resolve(ctx, elem, depth+1); err == nil {
			var delim string
			if err = c.conn.QueryRow(ctx, `SELECT typdelim::text FROM pg_catalog.pg_type WHERE oid = $1`, elem).Scan(&delim); err != nil {
				return nil, &lookupError{fmt.Errorf("pgcdc: looking up type %d: %w", elem, err)}
			}
			t = &colType{kind: kArray, elem: et, delim: ','}
			if len(delim) == 1 {
				t.delim = delim[0]
			}
		}
	default:
		t = &colType{kind: kString}
	}
	if err != nil {
		return nil, err
	}
	c.types[oid] = t
	return t, nil
}

func (c *catalog) keyOf(ctx context.Context, relid uint32) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The primary key first; without one, the replica identity index, which
	// is unique and not null as well.
	rows, err := c.conn.Query(ctx, `
		SELECT a.attname
		FROM pg_catalog.pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = $1 AND i.indpred IS NULL AND (i.indisprimary OR i.indisreplident)
		  AND i.indisprimary = (SELECT bool_or(indisprimary) FROM pg_catalog.pg_index WHERE indrelid = $1)
		ORDER BY k.ord`, relid)
	if err != nil {
		return nil, &lookupError{fmt.Errorf("pgcdc: looking up the key of relation %d: %w", relid, err)}
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, &lookupError{fmt.Errorf("pgcdc: looking up the key of relation %d: %w", relid, err)}
	}
	return names, nil
}
