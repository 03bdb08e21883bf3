// Package record defines the unit of data that flows through a weir pipeline.
//
// A Record is bytes plus metadata until a transform needs its fields: the value
// is decoded lazily, at most once, and re-encoded only if a transform changed it.
// Every record carries an acknowledgement reference (checkpoint.AckRef) to the
// source poll batch it came from; whoever consumes a record (a filter that drops
// it, a sink that wrote it) must release that reference exactly once.
package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// Header is one record header (a Kafka header, for example).
type Header struct {
	Key   string
	Value []byte
}

// Meta is one piece of source metadata, such as "topic" or "path".
type Meta struct {
	Key, Value string
}

// Origin says where a record was read.
type Origin struct {
	Source    string // the source component's name in the pipeline
	Partition string // the source's name for the partition ("orders/3", a file)
	Offset    int64  // the record's own position in the partition
}

// Record is one record in flight.
//
// Key, Headers and Meta may share their backing arrays with other records (a
// source may give every record of a partition the same Meta; CloneData copies
// the slices, not their elements): replace them, never modify them in place.
type Record struct {
	Key     []byte
	Headers []Header
	Meta    []Meta
	Time    time.Time
	Origin  Origin

	// Ack is the record's reference to its source batch. The runtime sets,
	// clones and releases it; transforms never touch it (see package transform).
	Ack checkpoint.AckRef

	value   []byte
	fields  map[string]any
	state   valueState
	decoErr error
}

type valueState uint8

const (
	bytesOnly   valueState = iota // value holds the record; not decoded yet
	decoded                       // fields and value agree
	fieldsDirty                   // fields changed; value is out of date
	undecodable                   // decoding failed; decoErr says why
)

// ErrNotObject is returned by Fields when the value is valid JSON but not an object.
var ErrNotObject = errors.New("record: value is not a JSON object")

// New returns a record holding value. The record keeps value; the caller must
// not change it afterwards.
func New(value []byte) Record { return Record{value: value} }

// Value returns the record's bytes, encoding its fields first if a transform
// changed them. The result must not be modified.
func (r *Record) Value() ([]byte, error) {
	if r.state == fieldsDirty {
		b, err := json.Marshal(r.fields)
		if err != nil {
			return nil, fmt.Errorf("record: encoding fields: %w", err)
		}
		r.value = b
		r.state = decoded
	}
	return r.value, nil
}

// SetValue replaces the record's bytes and forgets any decoded fields.
func (r *Record) SetValue(b []byte) {
	r.value, r.fields, r.state, r.decoErr = b, nil, bytesOnly, nil
}

// Fields returns the record's value decoded as a JSON object, decoding it on
// the first call only. The map belongs to the record: a transform that changes
// it must call MarkChanged (or use SetField / DeleteField).
func (r *Record) Fields() (map[string]any, error) {
	switch r.state {
	case decoded, fieldsDirty:
		return r.fields, nil
	case undecodable:
		return nil, r.decoErr
	}
	// The scanner decodes an object faster than encoding/json and to the same
	// values; anything it is unsure of is left to encoding/json, whose error
	// is the one returned.
	if scanObject(r.value, nil, nil) {
		if v, ok := decodeDocument(r.value); ok {
			r.fields, r.state = v, decoded
			return v, nil
		}
	}
	var v any
	if err := json.Unmarshal(r.value, &v); err != nil {
		r.state, r.decoErr = undecodable, fmt.Errorf("record: value is not JSON: %w", err)
		return nil, r.decoErr
	}
	m, ok := v.(map[string]any)
	if !ok {
		r.state, r.decoErr = undecodable, ErrNotObject
		return nil, r.decoErr
	}
	r.fields, r.state = m, decoded
	return m, nil
}

// LookupFields stores in dst each top-level field of the value whose name is
// in names, with the value Fields would give it; a name the value does not
// hold is not stored. It returns the error Fields would return.
//
// It exists for expressions, which read a few named fields: when the value
// has not been decoded, LookupFields checks the whole value (it accepts
// exactly the JSON that Fields accepts) but decodes only the named fields, and
// leaves the record undecoded, so that Decoded stays false and a later Fields
// still decodes in full. On a decoded record it stores the decoded fields'
// own values (the map and slices inside them are the record's, not copies), so
// it sees the changes of earlier transforms. dst's other entries are left alone.
func (r *Record) LookupFields(names []string, dst map[string]any) error {
	switch r.state {
	case decoded, fieldsDirty:
		copyNamed(r.fields, names, dst)
		return nil
	case undecodable:
		return r.decoErr
	}
	var buf [8][]byte
	var raw [][]byte
	if len(names) <= len(buf) {
		raw = buf[:len(names)]
	} else {
		raw = make([][]byte, len(names))
	}
	if scanObject(r.value, names, raw) && decodeNamed(names, raw, dst) {
		return nil
	}
	// Not an object, not valid JSON, or beyond what the scanner is sure of:
	// Fields decides, with its own error.
	f, err := r.Fields()
	if err != nil {
		return err
	}
	copyNamed(f, names, dst)
	return nil
}

func decodeNamed(names []string, raw [][]byte, dst map[string]any) bool {
	for k, b := range raw {
		if b == nil {
			continue
		}
		v, ok := decodeValue(b)
		if !ok {
			return false
		}
		dst[names[k]] = v
	}
	return true
}

func copyNamed(fields map[string]any, names []string, dst map[string]any) {
	for _, n := range names {
		if v, ok := fields[n]; ok {
			dst[n] = v
		}
	}
}

// SetFields replaces the record's fields; the value is re-encoded when asked for.
// Sources that parse structured formats themselves (CSV) use it.
func (r *Record) SetFields(m map[string]any) {
	r.fields, r.state, r.decoErr = m, fieldsDirty, nil
}

// MarkChanged says that the map returned by Fields was modified in place.
func (r *Record) MarkChanged() {
	if r.state == decoded {
		r.state = fieldsDirty
	}
}

// DropFields forgets the decoded fields when the value holds the same data,
// so that a record kept only to be acknowledged (or written again) does not
// keep its decoded map alive; a later Fields decodes the value again. It does
// nothing to fields a transform changed and Value has not encoded yet, which
// only the map holds. Sinks call it once they have encoded a record.
func (r *Record) DropFields() {
	if r.state == decoded {
		r.fields, r.state = nil, bytesOnly
	}
}

// Decoded reports whether the value has been decoded into fields.
func (r *Record) Decoded() bool { return r.state == decoded || r.state == fieldsDirty }

// Size returns an estimate of the record's memory, for in-flight byte limits.
func (r *Record) Size() int {
	n := len(r.value) + len(r.Key) + 64
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// CloneData returns a copy of r that shares its bytes but not its fields map,
// with a zero Ack. Fan-out (flat_map, routing) uses it before attaching a clone
// of the reference.
func (r *Record) CloneData() Record {
	c := *r
	c.Ack = checkpoint.AckRef{}
	if r.fields != nil {
		c.fields = CopyFields(r.fields)
	}
	return c
}

// CopyFields returns a deep copy of a decoded JSON object: maps and slices
// are copied, so the copy can be changed without touching m.
func CopyFields(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = CopyValue(v)
	}
	return c
}

// CopyValue returns a deep copy of a decoded JSON value (see CopyFields).
// A value placed in two records, or twice in one, must be copied so that it
// can be changed in one place only.
func CopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CopyFields(t)
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = CopyValue(e)
		}
		return c
	}
	return v
}
