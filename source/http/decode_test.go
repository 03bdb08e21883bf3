package http

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/weir-etl/weir/record"
)

// An NDJSON record is checked once, by the source: it leaves the source
// known to be JSON, so that a sink that needs JSON (the file sink's ndjson)
// does not scan it again. Records of the lines format were not checked and
// must not claim to be.
func TestDecodedNDJSONIsKnownJSON(t *testing.T) {
	body := []byte("{\"a\":1}\n\n  [1, 2.50]\r\n\"s\"\n")
	recs, blank, bad := decode(formatNDJSON, body, nil)
	if bad != nil || blank != 1 || len(recs) != 3 {
		t.Fatalf("decode: %d records, %d blank, %v; want 3, 1, nil", len(recs), blank, bad)
	}
	want := []string{`{"a":1}`, `  [1, 2.50]`, `"s"`}
	for i := range recs {
		if got := string(recs[i].Bytes()); got != want[i] {
			t.Errorf("record %d is %q, want %q", i, got, want[i])
		}
		if !recs[i].JSONChecked() {
			t.Errorf("record %d (%s) is not marked checked JSON", i, recs[i].Bytes())
		}
	}
	lines, _, _ := decode(formatLines, []byte("not json\n"), nil)
	if len(lines) != 1 || lines[0].JSONChecked() {
		t.Errorf("a lines record claims to be checked JSON")
	}
	if _, _, bad := decode(formatNDJSON, []byte("{\"a\":1}\n{\"a\":}\n"), nil); bad == nil || bad.line != 2 {
		t.Errorf("an invalid line 2: %v, want line 2 refused", bad)
	}
}

// BenchmarkDecodeNDJSON is the bench's body: 500 records of about 100
// bytes, decoded into a reused slice as the server's pooled ones are.
func BenchmarkDecodeNDJSON(b *testing.B) {
	var body bytes.Buffer
	for i := range 500 {
		fmt.Fprintf(&body, "{\"id\":%d,\"user\":\"u%05d\",\"event\":\"page_view\",\"path\":\"/shop/item/%d\",\"amount\":%d.%02d,\"ok\":true}\n", i, i, i, i, i%100)
	}
	b.SetBytes(int64(body.Len()))
	b.ReportAllocs()
	var recs []record.Record
	for b.Loop() {
		var bad *badInput
		recs, _, bad = decode(formatNDJSON, body.Bytes(), recs[:0])
		if bad != nil || len(recs) != 500 {
			b.Fatal(bad)
		}
	}
}
