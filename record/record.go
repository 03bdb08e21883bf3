// Package record defines the unit of data that flows through a weir pipeline.
//
// A Record is bytes plus metadata. Its value is never decoded as a whole:
// a condition scans it for the few top-level members it reads, and a
// transform that changes it indexes its members (an Obj), records its
// changes by name, and writes a new value in which every member it did not
// change is copied byte for byte (see Obj). Members are read as Values that
// point into the record's bytes; a number is its literal, converted only
// when an expression computes with it, and only exactly. A record therefore
// leaves weir as it came in, except for what a transform was told to change.
//
// Every record carries an acknowledgement reference (checkpoint.AckRef) to the
// source poll batch it came from; whoever consumes a record (a filter that drops
// it, a sink that wrote it) must release that reference exactly once.
package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/internal/recordack"
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
// The same holds for the value's bytes, which Values and other records share.
type Record struct {
	Key     []byte
	Headers []Header
	Meta    []Meta
	Time    time.Time
	Origin  Origin

	// ack is the record's reference to its source batch. The runtime sets,
	// clones and releases it, through internal/recordack; transforms and
	// connectors cannot touch it.
	ack checkpoint.AckRef

	value []byte
	orig  []byte // the value the source read, once a transform replaced it
	state valueState
}

type valueState uint8

const (
	unchecked  valueState = iota // nothing known about value
	jsonValid                    // value is one JSON value
	jsonObject                   // value is one JSON object
)

// ErrNotObject is the error of a value that is JSON but not an object, where
// an object is needed.
var ErrNotObject = errors.New("record: value is not a JSON object")

// New returns a record holding value. The record keeps value; the caller must
// not change it afterwards.
func New(value []byte) Record { return Record{value: value} }

// Value returns the record's bytes. The result must not be modified. The
// error is always nil; it is kept for callers written when values were
// encoded lazily.
func (r *Record) Value() ([]byte, error) { return r.value, nil }

// Bytes returns the record's bytes. The result must not be modified.
func (r *Record) Bytes() []byte { return r.value }

// SetOrigin sets r.Origin, as a source does once a record. It sets the
// fields one by one: assigning an Origin literal to a record in a slice
// builds the literal on the stack and copies it in 16-byte loads of 8-byte
// stores just made, which the processor cannot forward: about 8% of the
// file source's cost (BenchmarkSourceNDJSON).
func (r *Record) SetOrigin(source, partition string, offset int64) {
	r.Origin.Source, r.Origin.Partition, r.Origin.Offset = source, partition, offset
}

// Original returns the value as the source read it: the value before the
// first Replace, or the value itself if nothing replaced it. A dead letter
// for a record error carries these bytes, so that replaying it runs the
// (fixed) transforms on what was read.
func (r *Record) Original() []byte {
	if r.orig != nil {
		return r.orig
	}
	return r.value
}

// SetValue replaces the record's bytes, as a source sets them: it becomes
// the value as read too. The record keeps b.
func (r *Record) SetValue(b []byte) {
	r.value, r.orig, r.state = b, nil, unchecked
}

// Replace replaces the record's bytes with b, a value a transform wrote,
// keeping the value read for Original. object says b is known to be a
// JSON object (a transform that wrote it with Obj.AppendJSON knows).
func (r *Record) Replace(b []byte, object bool) {
	if r.orig == nil {
		r.orig = r.value
		if r.orig == nil {
			r.orig = []byte{}
		}
	}
	r.value = b
	r.state = unchecked
	if object {
		r.state = jsonObject
	}
}

// CheckJSON reports whether the value is one JSON value (see Valid),
// remembering a positive answer.
func (r *Record) CheckJSON() error {
	if r.state != unchecked {
		return nil
	}
	if err := Valid(r.value); err != nil {
		return err
	}
	r.state = jsonValid
	return nil
}

// JSONChecked reports whether the value is known to be JSON without
// checking it again.
func (r *Record) JSONChecked() bool { return r.state != unchecked }

// Lookup checks that the value is a JSON object and sets dst[k] to its
// member names[k] (the last, if the name is repeated), or to null when it has
// none; found[k] reports which. It decodes nothing: the values point into
// the record's bytes. It is what conditions use to read a few fields.
func (r *Record) Lookup(names []string, dst []Value, found []bool) error {
	var buf [8][]byte
	var raw [][]byte
	if len(names) <= len(buf) {
		raw = buf[:len(names)]
	} else {
		raw = make([][]byte, len(names))
	}
	if err := lookupObject(r.value, names, raw); err != nil {
		if err == ErrNotObject {
			r.state = jsonValid
		}
		return err
	}
	r.state = jsonObject
	for k, b := range raw {
		if b == nil {
			dst[k], found[k] = Value{}, false
			continue
		}
		dst[k].setRaw(b)
		found[k] = true
	}
	return nil
}

// Index resets o to the record's value, which must be a JSON object.
func (r *Record) Index(o *Obj) error {
	if err := o.Reset(r.value); err != nil {
		if err == ErrNotObject {
			r.state = jsonValid
		}
		return err
	}
	r.state = jsonObject
	return nil
}

// Object returns the record's value as a new Obj.
func (r *Record) Object() (*Obj, error) {
	o := &Obj{}
	if err := r.Index(o); err != nil {
		return nil, err
	}
	return o, nil
}

// Fields returns the record's value decoded as encoding/json decodes a JSON
// object into a map: numbers are float64, so integers beyond 2^53 are
// rounded, and invalid UTF-8 becomes U+FFFD. It is for connectors that want
// a generic view; anything that writes data should read Values (Lookup,
// Object), which are exact.
func (r *Record) Fields() (map[string]any, error) {
	var v any
	if err := json.Unmarshal(r.value, &v); err != nil {
		return nil, fmt.Errorf("record: value is not JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotObject
	}
	return m, nil
}

// SetFields replaces the record's value with the JSON object of m, members
// sorted by name, strings written as they are (no byte replaced), for a
// source that parses a structured format itself. A member with no JSON form
// (NaN, an infinity, a type FromGo does not take) is an error that names it,
// and the record is left as it was: nothing is written in its place.
func (r *Record) SetFields(m map[string]any) error {
	o, err := FromGo(m)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	r.SetValue(o.AppendJSON(nil))
	r.state = jsonObject
	return nil
}

// Size returns an estimate of the record's memory, for in-flight byte limits
// and a group's max_bytes: its bytes and its struct (Overhead), each
// header's included. The struct counts: of a small record it is most of
// the memory (200 bytes beside a 60-byte value).
func (r *Record) Size() int {
	n := len(r.value) + len(r.Key) + Overhead
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + headerOverhead
	}
	return n
}

// Overhead is the memory of a Record's struct, which Size counts beside its
// bytes.
const Overhead = int(unsafe.Sizeof(Record{}))

// headerOverhead is the memory of a Header's struct.
const headerOverhead = int(unsafe.Sizeof(Header{}))

// CloneData returns a copy of r that shares its bytes, without its
// acknowledgement reference.
// Fan-out (flat_map, routing) uses it before attaching a clone of the
// reference.
func (r *Record) CloneData() Record {
	c := *r
	c.ack = checkpoint.AckRef{}
	return c
}

func init() { recordack.Install(unsafe.Offsetof(Record{}.ack)) }
