package pgcdc

import (
	"errors"
	"strconv"
	"time"
)

// field is one column of a tuple as pgoutput sends it (and as the snapshot
// reads it): a kind byte and, for text, the value's text.
type field struct {
	kind byte // 't' text, 'n' null, 'u' unchanged TOAST value (not sent), 'b' binary
	data []byte
}

// errTuple reports a tuple message that ends early or holds a kind it should not.
var errTuple = errors.New("pgcdc: malformed tuple data in a pgoutput message")

// parseTuple reads pgoutput TupleData from src into dst (reusing its array)
// and returns the fields and the bytes read. The fields' data alias src.
func parseTuple(src []byte, dst []field) ([]field, int, error) {
	if len(src) < 2 {
		return dst, 0, errTuple
	}
	n := int(src[0])<<8 | int(src[1])
	i := 2
	dst = dst[:0]
	for range n {
		if i >= len(src) {
			return dst, 0, errTuple
		}
		f := field{kind: src[i]}
		i++
		switch f.kind {
		case 'n', 'u':
		case 't', 'b':
			if i+4 > len(src) {
				return dst, 0, errTuple
			}
			l := int(uint32(src[i])<<24 | uint32(src[i+1])<<16 | uint32(src[i+2])<<8 | uint32(src[i+3]))
			i += 4
			if l < 0 || i+l > len(src) {
				return dst, 0, errTuple
			}
			f.data = src[i : i+l : i+l]
			i += l
		default:
			return dst, 0, errTuple
		}
		dst = append(dst, f)
	}
	return dst, i, nil
}

// arenaBlock is the size of the blocks record values and keys are cut from:
// one allocation per block instead of two per record.
const arenaBlock = 64 << 10

// arena hands out byte slices cut from shared blocks. A block is never
// reused: records keep their slices for as long as they live.
type arena struct{ block []byte }

// copy returns a copy of b whose capacity is its length, so that an append
// to it copies instead of writing into the next record's bytes.
func (a *arena) copy(b []byte) []byte {
	if len(b) > cap(a.block)-len(a.block) {
		a.block = make([]byte, 0, max(arenaBlock, len(b)))
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return a.block[n:len(a.block):len(a.block)]
}

// encoder turns rows into record values and keys, reusing its scratch buffers.
type encoder struct {
	val, key []byte
	arena    arena
}

// txnInfo is what every change of one transaction shares.
type txnInfo struct {
	xid        uint32
	commitLSN  uint64 // the LSN of the commit record (pgoutput's final_lsn)
	commitTime time.Time
	// tail is `,"lsn":"..","xid":..,"commit_time":".."`, made once per
	// transaction.
	tail []byte
}

func (t *txnInfo) setTail() {
	b := append(t.tail[:0], `,"lsn":"`...)
	b = appendLSN(b, t.commitLSN)
	b = append(b, `","xid":`...)
	b = strconv.AppendUint(b, uint64(t.xid), 10)
	b = append(b, `,"commit_time":"`...)
	b = t.commitTime.UTC().AppendFormat(b, "2006-01-02T15:04:05.999999Z07:00")
	t.tail = append(b, '"')
}

// appendLSN appends an LSN in PostgreSQL's notation, 16/B374D848.
func appendLSN(b []byte, lsn uint64) []byte {
	const digits = "0123456789ABCDEF"
	hexu := func(b []byte, v uint32) []byte {
		var buf [8]byte
		i := len(buf)
		for {
			i--
			buf[i] = digits[v&0xf]
			v >>= 4
			if v == 0 {
				break
			}
		}
		return append(b, buf[i:]...)
	}
	b = hexu(b, uint32(lsn>>32))
	b = append(b, '/')
	return hexu(b, uint32(lsn))
}

// formatLSN returns an LSN in PostgreSQL's notation.
func formatLSN(lsn uint64) string { return string(appendLSN(nil, lsn)) }

// row encodes one change. before and after may be nil (no image);
// beforeKeyOnly says before is a key tuple, whose non-identity columns are
// nulls that stand for nothing and are left out. tail is the transaction's
// fields (nil for a snapshot row). It returns the value and key, both cut
// from the arena; key is nil when the relation has no key or the key's
// values were not sent.
func (e *encoder) row(rel *relation, o op, tail []byte, before []field, beforeKeyOnly bool, after []field) (value, key []byte, err error) {
	v := append(e.val[:0], rel.head[o]...)
	v = append(v, tail...)
	v = append(v, `,"before":`...)
	if v, err = e.image(v, rel, before, beforeKeyOnly, nil); err != nil {
		return nil, nil, err
	}
	v = append(v, `,"after":`...)
	toast := false
	if v, err = e.image(v, rel, after, false, &toast); err != nil {
		return nil, nil, err
	}
	if toast {
		// The columns whose values were not sent because they did not
		// change: after leaves them out (null would be a lie).
		v = append(v, `,"unchanged_toast":[`...)
		first := true
		for i := range after {
			if after[i].kind == 'u' {
				if !first {
					v = append(v, ',')
				}
				first = false
				v = appendString(v, []byte(rel.cols[i].name))
			}
		}
		v = append(v, ']')
	}
	v = append(v, '}')
	e.val = v

	src := after
	if o == opDelete {
		src = before
	}
	if k, ok := e.keyOf(rel, src); ok {
		key = e.arena.copy(k)
	} else if o == opUpdate && before != nil {
		// The new tuple left a key column out (unchanged TOAST); the old
		// one has it.
		if k, ok := e.keyOf(rel, before); ok {
			key = e.arena.copy(k)
		}
	}
	return e.arena.copy(v), key, nil
}

// image appends one row image as a JSON object in column order, or null.
func (e *encoder) image(v []byte, rel *relation, fs []field, keyOnly bool, toast *bool) ([]byte, error) {
	if fs == nil {
		return append(v, "null"...), nil
	}
	if len(fs) != len(rel.cols) {
		return nil, errColumns(rel, len(fs))
	}
	v = append(v, '{')
	first := true
	for i := range fs {
		c := &rel.cols[i]
		f := &fs[i]
		if keyOnly && !c.ident {
			continue
		}
		if f.kind == 'u' {
			if toast != nil {
				*toast = true
			}
			continue
		}
		if !first {
			v = append(v, ',')
		}
		first = false
		v = append(v, c.field...)
		switch f.kind {
		case 'n':
			v = append(v, "null"...)
		case 't':
			v = appendValue(v, c.typ, f.data)
		default:
			return nil, errTuple
		}
	}
	return append(v, '}'), nil
}

// keyOf builds the key object from a tuple into the encoder's scratch.
func (e *encoder) keyOf(rel *relation, fs []field) ([]byte, bool) {
	if len(rel.key) == 0 || fs == nil || len(fs) != len(rel.cols) {
		return nil, false
	}
	k := append(e.key[:0], '{')
	for j, i := range rel.key {
		f := &fs[i]
		if f.kind != 't' {
			return nil, false
		}
		if j > 0 {
			k = append(k, ',')
		}
		k = append(k, rel.cols[i].field...)
		k = appendValue(k, rel.cols[i].typ, f.data)
	}
	e.key = append(k, '}')
	return e.key, true
}

// truncate encodes one truncated table's record.
func (e *encoder) truncate(rel *relation, tail []byte, cascade, restartIdentity bool) []byte {
	v := append(e.val[:0], rel.head[opTruncate]...)
	v = append(v, tail...)
	v = append(v, `,"before":null,"after":null,"cascade":`...)
	v = strconv.AppendBool(v, cascade)
	v = append(v, `,"restart_identity":`...)
	v = strconv.AppendBool(v, restartIdentity)
	v = append(v, '}')
	e.val = v
	return e.arena.copy(v)
}

func errColumns(rel *relation, n int) error {
	return &columnsError{rel: rel.qualified(), want: len(rel.cols), got: n}
}

// columnsError is a tuple whose column count differs from its relation's:
// a Relation message was missed, which pgoutput never allows.
type columnsError struct {
	rel       string
	want, got int
}

func (e *columnsError) Error() string {
	return "pgcdc: a change of " + e.rel + " has " + strconv.Itoa(e.got) + " columns, its relation " + strconv.Itoa(e.want)
}
