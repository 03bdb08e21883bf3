package pgcdc

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
)

// fakeLookup resolves builtin types and gives every relation the key named.
type fakeLookup struct{ key []string }

func (f fakeLookup) typeOf(_ context.Context, oid uint32) (*colType, error) {
	if t, ok := builtinType(oid); ok {
		return t, nil
	}
	return &colType{kind: kString}, nil
}

func (f fakeLookup) keyOf(context.Context, uint32) ([]string, error) { return f.key, nil }

// msg builds pgoutput messages.
type msg []byte

func (m msg) u8(v byte) msg     { return append(m, v) }
func (m msg) u16(v uint16) msg  { return binary.BigEndian.AppendUint16(m, v) }
func (m msg) u32(v uint32) msg  { return binary.BigEndian.AppendUint32(m, v) }
func (m msg) u64(v uint64) msg  { return binary.BigEndian.AppendUint64(m, v) }
func (m msg) str(s string) msg  { return append(append(m, s...), 0) }
func (m msg) text(s string) msg { return m.u8('t').u32(uint32(len(s))).append(s) }
func (m msg) append(s string) msg {
	return append(m, s...)
}

func begin(final uint64, xid uint32) msg {
	return msg{'B'}.u64(final).u64(uint64(789_000_000)).u32(xid) // commit time: 2000-01-01 00:13:09 UTC
}

func commit(lsn, end uint64) msg { return msg{'C'}.u8(0).u64(lsn).u64(end).u64(0) }

// relation t(id int8 key, doc text, n numeric).
func relationMsg() msg {
	m := msg{'R'}.u32(16384).str("public").str("t").u8('d').u16(3)
	m = m.u8(1).str("id").u32(20).u32(0xFFFFFFFF)
	m = m.u8(0).str("doc").u32(25).u32(0xFFFFFFFF)
	return m.u8(0).str("n").u32(1700).u32(0xFFFFFFFF)
}

func decodeAll(t *testing.T, d *decoder, msgs ...msg) ([]record.Record, []uint64) {
	t.Helper()
	var recs []record.Record
	var ends []uint64
	for _, m := range msgs {
		var end uint64
		var err error
		recs, end, err = d.handle(context.Background(), m, recs)
		if err != nil {
			t.Fatalf("message %q: %v", m[0], err)
		}
		if end > 0 {
			ends = append(ends, end)
		}
	}
	return recs, ends
}

// Guarantee: a transaction's changes become records in order, each with the
// transaction's commit LSN as its offset, its commit time, xid and the
// primary key as the record key; a key-only old tuple gives a before image
// of the key columns only; an unchanged TOAST value is left out of after and
// named in unchanged_toast; the Commit gives the transaction's end LSN.
func TestDecodeTransaction(t *testing.T) {
	d := newDecoder(fakeLookup{key: []string{"id"}}, "cdc", "slot/s")
	recs, ends := decodeAll(t, d,
		relationMsg(),
		begin(0x1000, 42),
		msg{'I'}.u32(16384).u8('N').u16(3).text("1").text("hello").text("1.50"),
		msg{'U'}.u32(16384).u8('N').u16(3).text("1").u8('u').text("2.00"),
		msg{'U'}.u32(16384).u8('K').u16(3).text("1").u8('n').u8('n').u8('N').u16(3).text("2").text("x").u8('n'),
		msg{'D'}.u32(16384).u8('K').u16(3).text("2").u8('n').u8('n'),
		msg{'T'}.u32(1).u8(1).u32(16384),
		commit(0x1000, 0x1040),
	)
	if len(ends) != 1 || ends[0] != 0x1040 {
		t.Fatalf("ends %x, want the commit's end 1040", ends)
	}
	tail := `,"lsn":"0/1000","xid":42,"commit_time":"2000-01-01T00:13:09Z"`
	want := []struct{ value, key string }{
		{`{"op":"insert","schema":"public","table":"t"` + tail + `,"before":null,"after":{"id":1,"doc":"hello","n":"1.50"}}`, `{"id":1}`},
		{`{"op":"update","schema":"public","table":"t"` + tail + `,"before":null,"after":{"id":1,"n":"2.00"},"unchanged_toast":["doc"]}`, `{"id":1}`},
		{`{"op":"update","schema":"public","table":"t"` + tail + `,"before":{"id":1},"after":{"id":2,"doc":"x","n":null}}`, `{"id":2}`},
		{`{"op":"delete","schema":"public","table":"t"` + tail + `,"before":{"id":2},"after":null}`, `{"id":2}`},
		{`{"op":"truncate","schema":"public","table":"t"` + tail + `,"before":null,"after":null,"cascade":true,"restart_identity":false}`, ``},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		r := &recs[i]
		v, _ := r.Value()
		if string(v) != w.value || string(r.Key) != w.key {
			t.Errorf("record %d:\n got %s key %s\nwant %s key %s", i, v, r.Key, w.value, w.key)
		}
		if r.Origin != (record.Origin{Source: "cdc", Partition: "slot/s", Offset: 0x1000}) {
			t.Errorf("record %d: origin %+v, want the commit LSN 0x1000 as offset", i, r.Origin)
		}
		if !r.Time.Equal(time.Date(2000, 1, 1, 0, 13, 9, 0, time.UTC)) {
			t.Errorf("record %d: time %v", i, r.Time)
		}
		if r.Meta[2].Value != strings.Trim(strings.SplitN(w.value, `"`, 5)[3], `"`) {
			t.Errorf("record %d: meta %v", i, r.Meta)
		}
	}
	// A record's value must not share bytes another record can overwrite.
	v0, _ := recs[0].Value()
	if cap(v0) != len(v0) {
		t.Errorf("value capacity %d beyond its length %d: an append would write into the next record", cap(v0), len(v0))
	}
}

// Guarantee: what the decoder cannot trust is an error, never a skipped or
// guessed change.
func TestDecodeRejects(t *testing.T) {
	for name, msgs := range map[string][]msg{
		"change before its relation":   {begin(1, 1), msg{'I'}.u32(7).u8('N').u16(1).text("1")},
		"change outside a transaction": {relationMsg(), msg{'I'}.u32(16384).u8('N').u16(3).text("1").text("a").text("1")},
		"column count":                 {relationMsg(), begin(1, 1), msg{'I'}.u32(16384).u8('N').u16(2).text("1").text("a")},
		"truncated tuple":              {relationMsg(), begin(1, 1), msg{'I'}.u32(16384).u8('N').u16(3).text("1").u8('t').u32(10)},
		"unknown column kind":          {relationMsg(), begin(1, 1), msg{'I'}.u32(16384).u8('N').u16(3).text("1").u8('x').text("1")},
		"streamed transaction":         {msg{'S'}.u32(1).u8(1)},
		"commit outside a transaction": {commit(1, 2)},
	} {
		d := newDecoder(fakeLookup{key: []string{"id"}}, "cdc", "slot/s")
		var err error
		for _, m := range msgs {
			if _, _, err = d.handle(context.Background(), m, nil); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Guarantee: a failed catalog lookup is a lookupError, which the stream
// treats as a lost connection (reconnect, read again), not as bad data.
func TestDecodeLookupFailureIsRetryable(t *testing.T) {
	d := newDecoder(failingLookup{}, "cdc", "slot/s")
	_, _, err := d.handle(context.Background(), relationMsg(), nil)
	var le *lookupError
	if !errors.As(err, &le) {
		t.Fatalf("error %v is not a lookupError", err)
	}
}

type failingLookup struct{}

func (failingLookup) typeOf(context.Context, uint32) (*colType, error) {
	return nil, &lookupError{errors.New("connection reset")}
}
func (failingLookup) keyOf(context.Context, uint32) ([]string, error) { return nil, nil }

// Guarantee: the flush position a status update carries is the committed
// watermark, whatever was received (the unsafe_confirm build alone differs).
func TestFlushPositionIsTheCommittedWatermark(t *testing.T) {
	if unsafeConfirmReceived {
		t.Skip("the unsafe_confirm variant confirms what it received, on purpose")
	}
	st := &stream{}
	st.committed.Store(100)
	st.received.Store(5000)
	if got := st.flushPosition(); got != 100 {
		t.Fatalf("flush position %d, want the committed 100", got)
	}
	st.commit(90) // commits never go back
	if got := st.flushPosition(); got != 100 {
		t.Fatalf("flush position %d after an older commit, want 100", got)
	}
	st.commit(300)
	if got := st.flushPosition(); got != 300 {
		t.Fatalf("flush position %d, want 300", got)
	}
}

// BenchmarkDecodeInsert measures one insert of a five-column row into a
// record: the per-change cost of the stream.
func BenchmarkDecodeInsert(b *testing.B) {
	d := newDecoder(fakeLookup{key: []string{"id"}}, "cdc", "slot/s")
	m := msg{'R'}.u32(1).str("public").str("orders").u8('d').u16(5)
	for i, c := range []struct {
		name string
		oid  uint32
	}{{"id", 20}, {"customer", 25}, {"amount", 1700}, {"paid", 16}, {"at", 1184}} {
		flag := byte(0)
		if i == 0 {
			flag = 1
		}
		m = m.u8(flag).str(c.name).u32(c.oid).u32(0xFFFFFFFF)
	}
	ins := msg{'I'}.u32(1).u8('N').u16(5).text("123456").text("customer-42").text("1234.50").text("t").text("2026-01-02 03:04:05.123456+00")
	recs, _, _ := d.handle(context.Background(), m, nil)
	recs, _, _ = d.handle(context.Background(), begin(1, 1), recs)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var err error
		recs, _, err = d.handle(context.Background(), ins, recs[:0])
		if err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			clear(recs)
		}
	}
}
