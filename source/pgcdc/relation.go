package pgcdc

import (
	"context"
	"fmt"

	"github.com/weir-etl/weir/record"
)

// op is a record's operation.
type op uint8

const (
	opRead op = iota // a row of the initial snapshot
	opInsert
	opUpdate
	opDelete
	opTruncate
	numOps
)

var opNames = [numOps]string{"read", "insert", "update", "delete", "truncate"}

func (o op) String() string { return opNames[o] }

// column is one published column of a relation.
type column struct {
	name  string
	field []byte // `"name":`, ready to append
	typ   *colType
	ident bool // part of the replica identity: sent in a delete's key tuple
}

// relation is a table as the stream (a Relation message) or the snapshot
// (its catalog) describes it, with what every record of it shares.
type relation struct {
	id           uint32
	schema, name string
	cols         []column
	// key holds the indexes in cols of the record key's columns, in key
	// order; empty for a table without a primary key or replica identity
	// index (its records have no key).
	key []int
	// head is `{"op":"<op>","schema":"..","table":".."` for each op, and meta
	// the records' Meta (schema, table, op), shared by all records of the
	// relation and op (capacity = length, so an append copies).
	head [numOps][]byte
	meta [numOps][]record.Meta
}

// newRelation builds a relation from its columns' names, type OIDs and
// replica identity flags, resolving types and the key through lk.
func newRelation(ctx context.Context, lk lookup, id uint32, schema, name string, names []string, oids []uint32, ident []bool) (*relation, error) {
	r := &relation{id: id, schema: schema, name: name, cols: make([]column, len(names))}
	for i, n := range names {
		t, err := lk.typeOf(ctx, oids[i])
		if err != nil {
			return nil, err
		}
		r.cols[i] = column{name: n, field: append(appendString(nil, []byte(n)), ':'), typ: t, ident: ident[i]}
	}
	keys, err := lk.keyOf(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		i := r.index(k)
		if i < 0 {
			// A key column the publication's column list leaves out: the
			// key cannot be built from what is sent, so records get none.
			r.key = nil
			break
		}
		r.key = append(r.key, i)
	}
	for o := range numOps {
		h := append([]byte(`{"op":"`), opNames[o]...)
		h = append(h, `","schema":`...)
		h = appendString(h, []byte(schema))
		h = append(h, `,"table":`...)
		h = appendString(h, []byte(name))
		r.head[o] = h
		m := []record.Meta{{Key: "schema", Value: schema}, {Key: "table", Value: name}, {Key: "op", Value: opNames[o]}}
		r.meta[o] = m[:len(m):len(m)]
	}
	return r, nil
}

func (r *relation) index(name string) int {
	for i := range r.cols {
		if r.cols[i].name == name {
			return i
		}
	}
	return -1
}

// qualified returns "schema.table" for messages.
func (r *relation) qualified() string { return fmt.Sprintf("%s.%s", r.schema, r.name) }
