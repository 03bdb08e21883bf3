package pgcdc

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pglogrepl"

	"github.com/weir-etl/weir/record"
)

// decoder turns pgoutput messages (protocol version 1: whole committed
// transactions, Begin … changes … Commit) into records. It is owned by the
// stream's goroutine.
type decoder struct {
	lk   lookup
	enc  encoder
	rels map[uint32]*relation

	// source and part are the records' Origin; every record shares them.
	source, part string

	inTxn  bool
	txn    txnInfo
	f1, f2 []field
}

func newDecoder(lk lookup, source, part string) *decoder {
	return &decoder{lk: lk, rels: map[uint32]*relation{}, source: source, part: part}
}

// reset forgets a transaction in progress (the connection was lost or the
// stream restarts elsewhere). Relations are forgotten too: pgoutput sends
// every relation again on a new connection before its first change.
func (d *decoder) reset() {
	d.inTxn = false
	clear(d.rels)
}

// handle decodes one pgoutput message. A change appends its records to recs.
// A Commit returns the transaction's end LSN, the position after it; other
// messages return 0.
func (d *decoder) handle(ctx context.Context, msg []byte, recs []record.Record) ([]record.Record, uint64, error) {
	if len(msg) == 0 {
		return recs, 0, fmt.Errorf("pgcdc: empty pgoutput message")
	}
	body := msg[1:]
	switch pglogrepl.MessageType(msg[0]) {
	case pglogrepl.MessageTypeBegin:
		var m pglogrepl.BeginMessage
		if err := m.Decode(body); err != nil {
			return recs, 0, fmt.Errorf("pgcdc: decoding Begin: %w", err)
		}
		d.inTxn = true
		d.txn.xid, d.txn.commitLSN, d.txn.commitTime = m.Xid, uint64(m.FinalLSN), m.CommitTime
		d.txn.setTail()
		return recs, 0, nil
	case pglogrepl.MessageTypeCommit:
		var m pglogrepl.CommitMessage
		if err := m.Decode(body); err != nil {
			return recs, 0, fmt.Errorf("pgcdc: decoding Commit: %w", err)
		}
		if !d.inTxn {
			return recs, 0, fmt.Errorf("pgcdc: Commit at %s outside a transaction", m.CommitLSN)
		}
		d.inTxn = false
		end := uint64(m.TransactionEndLSN)
		if end > math.MaxInt64 {
			return recs, 0, fmt.Errorf("pgcdc: LSN %s is beyond the positions weir can hold", m.TransactionEndLSN)
		}
		return recs, end, nil
	case pglogrepl.MessageTypeRelation:
		var m pglogrepl.RelationMessage
		if err := m.Decode(body); err != nil {
			return recs, 0, fmt.Errorf("pgcdc: decoding Relation: %w", err)
		}
		names := make([]string, len(m.Columns))
		oids := make([]uint32, len(m.Columns))
		ident := make([]bool, len(m.Columns))
		for i, c := range m.Columns {
			names[i], oids[i], ident[i] = c.Name, c.DataType, c.Flags&1 != 0
		}
		rel, err := newRelation(ctx, d.lk, m.RelationID, m.Namespace, m.RelationName, names, oids, ident)
		if err != nil {
			return recs, 0, err
		}
		d.rels[m.RelationID] = rel
		return recs, 0, nil
	case pglogrepl.MessageTypeInsert, pglogrepl.MessageTypeUpdate, pglogrepl.MessageTypeDelete:
		return d.change(ctx, msg, recs)
	case pglogrepl.MessageTypeTruncate:
		var m pglogrepl.TruncateMessage
		if err := m.Decode(body); err != nil {
			return recs, 0, fmt.Errorf("pgcdc: decoding Truncate: %w", err)
		}
		for _, id := range m.RelationIDs {
			rel, err := d.relation(id)
			if err != nil {
				return recs, 0, err
			}
			v := d.enc.truncate(rel, d.txn.tail, m.Option&pglogrepl.TruncateOptionCascade != 0, m.Option&pglogrepl.TruncateOptionRestartIdentity != 0)
			recs = append(recs, d.record(rel, opTruncate, v, nil))
		}
		return recs, 0, nil
	case pglogrepl.MessageTypeType, pglogrepl.MessageTypeOrigin, pglogrepl.MessageTypeMessage:
		// Type names (resolved from the catalog instead), replication
		// origins, and logical decoding messages (the heartbeat's among
		// them) carry no row change.
		return recs, 0, nil
	}
	return recs, 0, fmt.Errorf("pgcdc: unexpected pgoutput message %q", msg[0])
}

func (d *decoder) relation(id uint32) (*relation, error) {
	rel, ok := d.rels[id]
	if !ok {
		return nil, fmt.Errorf("pgcdc: a change of relation %d came before its Relation message", id)
	}
	return rel, nil
}

// change decodes Insert ('I', rel, 'N' tuple), Update ('U', rel, optional
// 'K' or 'O' tuple, 'N' tuple) and Delete ('D', rel, 'K' or 'O' tuple).
func (d *decoder) change(_ context.Context, msg []byte, recs []record.Record) ([]record.Record, uint64, error) {
	if !d.inTxn {
		return recs, 0, fmt.Errorf("pgcdc: a change outside a transaction")
	}
	if len(msg) < 6 {
		return recs, 0, errTuple
	}
	id := uint32(msg[1])<<24 | uint32(msg[2])<<16 | uint32(msg[3])<<8 | uint32(msg[4])
	rel, err := d.relation(id)
	if err != nil {
		return recs, 0, err
	}
	rest := msg[5:]
	var before, after []field
	keyOnly := false
	var o op
	switch msg[0] {
	case 'I':
		o = opInsert
	case 'U':
		o = opUpdate
	case 'D':
		o = opDelete
	}
	if o != opInsert && (rest[0] == 'K' || rest[0] == 'O') {
		keyOnly = rest[0] == 'K'
		var n int
		if d.f1, n, err = parseTuple(rest[1:], d.f1); err != nil {
			return recs, 0, err
		}
		before = d.f1
		rest = rest[1+n:]
	}
	if o != opDelete {
		if len(rest) == 0 || rest[0] != 'N' {
			return recs, 0, errTuple
		}
		if d.f2, _, err = parseTuple(rest[1:], d.f2); err != nil {
			return recs, 0, err
		}
		after = d.f2
	} else if before == nil {
		return recs, 0, errTuple
	}
	v, k, err := d.enc.row(rel, o, d.txn.tail, before, keyOnly, after)
	if err != nil {
		return recs, 0, err
	}
	return append(recs, d.record(rel, o, v, k)), 0, nil
}

// record makes a change's record. Every change of a transaction has the
// transaction's commit LSN as its offset: see the package documentation for
// why that keeps the rule that a batch's records lie below its End.
func (d *decoder) record(rel *relation, o op, value, key []byte) record.Record {
	r := record.New(value)
	r.Key = key
	r.Time = d.txn.commitTime
	r.Meta = rel.meta[o]
	r.SetOrigin(d.source, d.part, int64(d.txn.commitLSN))
	return r
}
