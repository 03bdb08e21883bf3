// Package deadletter is the dead letter envelope: a record that failed for
// good, wrapped with what is needed to understand it and to replay it.
//
// An envelope is one line of JSON; the component that failed is named by a
// member "sink" or "transform":
//
//	{"weir_dead_letter":1,"time":"2026-02-01T19:27:17.5Z",
//	 "error":"...","sink":"warehouse",
//	 "source":"orders","partition":"orders/3","offset":1042,
//	 "record_time":"2026-02-01T19:27:16Z",
//	 "key":"k-17","key_encoding":"text",
//	 "headers":[{"key":"type","value":"order","encoding":"text"}],
//	 "value_encoding":"json","value":{"id":12345678901234567891}}
//
// The value is the record's bytes exactly: for a record error (a transform
// failed on it) the value as the source read it, so that a replay runs the
// fixed transforms on what was read; for a sink's failure the value as that
// sink received it. It is embedded as JSON when it is one JSON value, valid
// UTF-8, with no line break and no surrounding whitespace (so that the
// envelope is one line and the bytes come back exactly), and as base64
// otherwise; value_encoding says which. The key and header values are text
// (a JSON string) when they are valid UTF-8, base64 otherwise.
//
// Decode gives the envelope back, and Record the record to replay; the file
// source's format dead_letter reads a file of envelopes with it.
package deadletter

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/record"
)

// Version is the envelope's format version, its weir_dead_letter member.
const Version = 1

// Envelope is one dead letter.
type Envelope struct {
	Time       time.Time // when the record failed for good
	Component  string    // the kind of component that failed: "sink" or "transform"
	Name       string    // the component's name in the pipeline
	Error      string    // what went wrong
	Origin     record.Origin
	RecordTime time.Time // the record's own time; zero if it had none
	Key        []byte
	Headers    []record.Header
	Value      []byte // the record's bytes, exactly
}

// Wrap returns the envelope of r, which component (kind "sink" or
// "transform") named name failed on with err at now.
func Wrap(kind, name string, r *record.Record, err error, now time.Time) Envelope {
	v := r.Bytes()
	if kind == "transform" {
		v = r.Original()
	}
	return Envelope{
		Time: now, Component: kind, Name: name, Error: err.Error(), Origin: r.Origin,
		RecordTime: r.Time, Key: r.Key, Headers: r.Headers, Value: v,
	}
}

// Record returns the dead letter record of r: its value is the envelope,
// and it keeps r's key, time and origin, and r's headers plus weir.error and
// weir.<kind> (the component's name). It has no reference; the caller moves
// or clones r's onto it.
func Record(kind, name string, r *record.Record, err error, now time.Time) record.Record {
	env := Wrap(kind, name, r, err, now)
	out := record.New(Encode(nil, &env))
	out.Key, out.Time, out.Origin = r.Key, r.Time, r.Origin
	out.Headers = append(append([]record.Header(nil), r.Headers...),
		record.Header{Key: "weir.error", Value: []byte(env.Error)},
		record.Header{Key: "weir." + kind, Value: []byte(name)})
	return out
}

// Encode appends e as one line of JSON (without the line break) to dst.
func Encode(dst []byte, e *Envelope) []byte {
	dst = fmt.Appendf(dst, `{"weir_dead_letter":%d,"time":`, Version)
	dst = appendTime(dst, e.Time)
	dst = append(dst, `,"error":`...)
	dst = record.AppendString(dst, textOf(e.Error))
	dst = append(dst, ',')
	dst = record.AppendString(dst, e.Component)
	dst = append(dst, ':')
	dst = record.AppendString(dst, e.Name)
	dst = append(dst, `,"source":`...)
	dst = record.AppendString(dst, e.Origin.Source)
	dst = append(dst, `,"partition":`...)
	dst = record.AppendString(dst, e.Origin.Partition)
	dst = fmt.Appendf(dst, `,"offset":%d`, e.Origin.Offset)
	if !e.RecordTime.IsZero() {
		dst = append(dst, `,"record_time":`...)
		dst = appendTime(dst, e.RecordTime)
	}
	if e.Key != nil {
		dst = append(dst, `,"key":`...)
		var enc string
		dst, enc = appendBytes(dst, e.Key)
		dst = append(dst, `,"key_encoding":"`...)
		dst = append(dst, enc...)
		dst = append(dst, '"')
	}
	if len(e.Headers) > 0 {
		dst = append(dst, `,"headers":[`...)
		for i, h := range e.Headers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = record.AppendString(dst, textOf(h.Key))
			dst = append(dst, `,"value":`...)
			var enc string
			dst, enc = appendBytes(dst, h.Value)
			dst = append(dst, `,"encoding":"`...)
			dst = append(dst, enc...)
			dst = append(dst, `"}`...)
		}
		dst = append(dst, ']')
	}
	if embeddable(e.Value) {
		dst = append(dst, `,"value_encoding":"json","value":`...)
		dst = append(dst, e.Value...)
	} else {
		dst = append(dst, `,"value_encoding":"base64","value":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, e.Value)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// embeddable reports whether v can be embedded in the envelope as JSON and
// read back byte for byte.
func embeddable(v []byte) bool {
	if len(v) == 0 || bytes.IndexByte(v, '\n') >= 0 || !utf8.Valid(v) {
		return false
	}
	switch v[0] {
	case ' ', '\t', '\r':
		return false
	}
	switch v[len(v)-1] {
	case ' ', '\t', '\r':
		return false
	}
	return record.Valid(v) == nil
}

// textOf keeps a message on one line of valid text: it is for people.
func textOf(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// appendBytes appends b as a JSON string, as text if it is UTF-8 (AppendString
// then writes it so that it decodes to the same bytes) and base64 otherwise.
func appendBytes(dst, b []byte) ([]byte, string) {
	if utf8.Valid(b) {
		return record.AppendString(dst, string(b)), "text"
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"'), "base64"
}

// Error is a line that is not a dead letter envelope.
type Error struct {
	Field string // the envelope member at fault, or "" for the line
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "deadletter: " + e.Msg
	}
	return "deadletter: " + e.Field + ": " + e.Msg
}

// Decode reads one envelope from line.
func Decode(line []byte) (Envelope, error) {
	var e Envelope
	o, err := record.ParseObj(line)
	if err != nil {
		return e, &Error{Msg: fmt.Sprintf("not a dead letter envelope: %v", err)}
	}
	ver, ok := o.Get("weir_dead_letter")
	if !ok {
		return e, &Error{Msg: "not a dead letter envelope: it has no weir_dead_letter member"}
	}
	if n, err := ver.Int(); err != nil || n != Version {
		return e, &Error{Field: "weir_dead_letter", Msg: fmt.Sprintf("version %s is not %d: this weir reads version %d", ver.Literal(), Version, Version)}
	}
	str := func(name string, required bool) (string, error) {
		v, ok := o.Get(name)
		if !ok || v.IsNull() {
			if required {
				return "", &Error{Field: name, Msg: "missing"}
			}
			return "", nil
		}
		if v.Kind() != record.String {
			return "", &Error{Field: name, Msg: "not a string"}
		}
		return v.Text(), nil
	}
	tm := func(name string) (time.Time, error) {
		s, err := str(name, false)
		if err != nil || s == "" {
			return time.Time{}, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return t, &Error{Field: name, Msg: "not an RFC 3339 time"}
		}
		return t, nil
	}
	bin := func(name, encName string, v record.Value) ([]byte, error) {
		if v.Kind() != record.String {
			return nil, &Error{Field: name, Msg: "not a string"}
		}
		enc := "text"
		if ev, ok := o.Get(encName); ok && encName != "" {
			enc = ev.Text()
		}
		return decodeBytes(name, v.Text(), enc)
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err1 error
	e.Time, err1 = tm("time")
	add(err1)
	for _, kind := range []string{"sink", "transform"} {
		if _, ok := o.Get(kind); ok {
			e.Component = kind
			e.Name, err1 = str(kind, true)
			add(err1)
		}
	}
	if e.Component == "" {
		add(&Error{Msg: "names no component: it has neither a sink nor a transform member"})
	}
	e.Error, err1 = str("error", false)
	add(err1)
	e.RecordTime, err1 = tm("record_time")
	add(err1)
	e.Origin.Source, err1 = str("source", false)
	add(err1)
	e.Origin.Partition, err1 = str("partition", false)
	add(err1)
	if v, ok := o.Get("offset"); ok {
		n, err := v.Int()
		if err != nil {
			add(&Error{Field: "offset", Msg: "not an integer"})
		}
		e.Origin.Offset = n
	}
	if kv, ok := o.Get("key"); ok && !kv.IsNull() {
		e.Key, err1 = bin("key", "key_encoding", kv)
		add(err1)
	}
	if hv, ok := o.Get("headers"); ok && !hv.IsNull() {
		if hv.Kind() != record.Array {
			add(&Error{Field: "headers", Msg: "not an array"})
		}
		hv.Elems(func(i int, h record.Value) bool {
			k, _ := h.Get("key")
			v, _ := h.Get("value")
			enc, _ := h.Get("encoding")
			name := fmt.Sprintf("headers[%d]", i)
			if h.Kind() != record.Object || k.Kind() != record.String || v.Kind() != record.String {
				add(&Error{Field: name, Msg: "not {key, value, encoding}"})
				return true
			}
			encoding := "text"
			if enc.Kind() == record.String {
				encoding = enc.Text()
			}
			b, err := decodeBytes(name, v.Text(), encoding)
			add(err)
			e.Headers = append(e.Headers, record.Header{Key: k.Text(), Value: b})
			return true
		})
	}
	val, ok := o.Get("value")
	if !ok {
		add(&Error{Field: "value", Msg: "missing"})
	} else {
		enc, _ := str("value_encoding", true)
		switch enc {
		case "json":
			// A member read as it was is written out as it was read: these
			// are the value's bytes.
			e.Value = val.AppendJSON(nil)
		case "base64":
			if val.Kind() != record.String {
				add(&Error{Field: "value", Msg: "not a base64 string"})
				break
			}
			e.Value, err1 = decodeBytes("value", val.Text(), "base64")
			add(err1)
		default:
			add(&Error{Field: "value_encoding", Msg: fmt.Sprintf("%q is unknown: json or base64", enc)})
		}
	}
	return e, errors.Join(errs...)
}

func decodeBytes(field, s, enc string) ([]byte, error) {
	switch enc {
	case "text":
		return []byte(s), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, &Error{Field: field, Msg: "not valid base64"}
		}
		return b, nil
	}
	return nil, &Error{Field: field, Msg: fmt.Sprintf("encoding %q is unknown: text or base64", enc)}
}

// Replay returns the record an envelope holds, as it was when it failed:
// its value, key, headers and time. Where it failed is in meta, under
// dead_letter.* (component, name, error, source, partition, offset, time),
// after base, for conditions of a replay pipeline to read.
func Replay(e *Envelope, base []record.Meta) record.Record {
	r := record.New(e.Value)
	r.Key, r.Headers, r.Time = e.Key, e.Headers, e.RecordTime
	meta := make([]record.Meta, 0, len(base)+7)
	meta = append(meta, base...)
	meta = append(meta,
		record.Meta{Key: "dead_letter.component", Value: e.Component},
		record.Meta{Key: "dead_letter.name", Value: e.Name},
		record.Meta{Key: "dead_letter.error", Value: e.Error},
		record.Meta{Key: "dead_letter.source", Value: e.Origin.Source},
		record.Meta{Key: "dead_letter.partition", Value: e.Origin.Partition},
		record.Meta{Key: "dead_letter.offset", Value: fmt.Sprint(e.Origin.Offset)},
		record.Meta{Key: "dead_letter.time", Value: e.Time.UTC().Format(time.RFC3339Nano)},
	)
	r.Meta = meta
	return r
}
