package deadletter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weir-etl/weir/internal/deadletter"
	"github.com/weir-etl/weir/record"
)

// checkRoundTrip encodes e, checks that the envelope is one line of valid
// UTF-8 JSON, decodes it and compares.
func checkRoundTrip(t *testing.T, e deadletter.Envelope) {
	t.Helper()
	line := deadletter.Encode(nil, &e)
	if bytes.IndexByte(line, '\n') >= 0 || !utf8.Valid(line) || !json.Valid(line) {
		t.Fatalf("envelope is not one line of UTF-8 JSON: %q", line)
	}
	got, err := deadletter.Decode(line)
	if err != nil {
		t.Fatalf("Decode(%q): %v", line, err)
	}
	if !got.Time.Equal(e.Time) || !got.RecordTime.Equal(e.RecordTime) {
		t.Fatalf("times %v %v, want %v %v", got.Time, got.RecordTime, e.Time, e.RecordTime)
	}
	got.Time, got.RecordTime, e.Time, e.RecordTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(e.Headers) == 0 {
		e.Headers = nil
	}
	if len(e.Key) == 0 {
		e.Key = nil
	}
	if len(got.Key) == 0 {
		got.Key = nil
	}
	if !bytes.Equal(got.Value, e.Value) {
		t.Fatalf("value %q, want %q (envelope %s)", got.Value, e.Value, line)
	}
	got.Value, e.Value = nil, nil
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("got  %+v\nwant %+v", got, e)
	}
}

// Guarantee: an envelope gives back the record's bytes exactly, whatever
// they are: as JSON when they are one line of UTF-8 JSON, as base64
// otherwise; the key and headers too, and where and why it failed.
func TestEnvelopeRoundTrip(t *testing.T) {
	values := []string{
		`{"id":12345678901234567891,"s":"caf\u00e9","n":1e400,"z":-0}`,
		`{"a" : [1, 2]}`,
		"{\"s\":\"\xff\"}",
		"{\"a\":\n1}",
		` {"a":1}`,
		`{"a":1} `,
		`not json`,
		"\x00\x01\xfe",
		``,
		`"text"`,
		`12`,
		`{"a":1`,
	}
	for _, v := range values {
		checkRoundTrip(t, deadletter.Envelope{
			Time:       time.Date(2026, 2, 1, 19, 27, 17, 500, time.UTC),
			Component:  "sink",
			Name:       "out",
			Error:      "sink/file: parquet: column id: \"x\"\nsecond line",
			Origin:     record.Origin{Source: "in", Partition: "p/3", Offset: 42},
			RecordTime: time.Date(2026, 2, 1, 19, 27, 16, 0, time.UTC),
			Key:        []byte("k\xff"),
			Headers:    []record.Header{{Key: "type", Value: []byte("order")}, {Key: "bin", Value: []byte{0xff, 0}}},
			Value:      []byte(v),
		})
	}
	checkRoundTrip(t, deadletter.Envelope{Component: "transform", Name: "m", Value: []byte(`{}`)})
}

// FuzzEnvelopeRoundTrip checks any value and key.
func FuzzEnvelopeRoundTrip(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte("k"), "error")
	f.Add([]byte("\xff"), []byte{}, "")
	f.Fuzz(func(t *testing.T, value, key []byte, msg string) {
		if !utf8.ValidString(msg) {
			return // messages are text; Encode makes them valid
		}
		checkRoundTrip(t, deadletter.Envelope{Component: "sink", Name: "s", Error: msg, Key: key, Value: value})
	})
}

// Guarantee: a record error's dead letter carries the value the source read,
// not what a transform made of it; a sink's carries what the sink received.
func TestWrapTakesTheRightBytes(t *testing.T) {
	r := record.New([]byte(`{"a":1}`))
	r.Replace([]byte(`{"b":1}`), true)
	if e := deadletter.Wrap("transform", "m", &r, errors.New("x"), time.Now()); string(e.Value) != `{"a":1}` {
		t.Errorf("transform dead letter holds %s", e.Value)
	}
	if e := deadletter.Wrap("sink", "s", &r, errors.New("x"), time.Now()); string(e.Value) != `{"b":1}` {
		t.Errorf("sink dead letter holds %s", e.Value)
	}
	dl := deadletter.Record("sink", "s", &r, errors.New("boom"), time.Now())
	e, err := deadletter.Decode(dl.Bytes())
	if err != nil || string(e.Value) != `{"b":1}` || e.Error != "boom" {
		t.Fatalf("%+v %v", e, err)
	}
	back := deadletter.Replay(&e, []record.Meta{{Key: "path", Value: "x"}})
	if string(back.Bytes()) != `{"b":1}` || back.Meta[0].Key != "path" || back.Meta[2].Value != "s" {
		t.Fatalf("replayed %+v", back)
	}
}

// Guarantee: a line that is not an envelope is an error naming what is
// wrong, never a record.
func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"a":1}`, "no weir_dead_letter member"},
		{`not json`, "not a dead letter envelope"},
		{`{"weir_dead_letter":2}`, "version 2"},
		{`{"weir_dead_letter":1,"sink":"s","value_encoding":"base64","value":"!!"}`, "value: not valid base64"},
		{`{"weir_dead_letter":1,"sink":"s","value_encoding":"zip","value":"x"}`, "value_encoding"},
		{`{"weir_dead_letter":1,"value_encoding":"json","value":1}`, "names no component"},
	} {
		_, err := deadletter.Decode([]byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
}
