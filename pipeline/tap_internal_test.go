package pipeline

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Guarantee: a tap takes at most its rate of records per second (a
// second's worth at most after a pause) and at most its count; a reader too
// slow for what was sampled loses lines, counted, and the pipeline never
// waits for it.
func TestTapSamplesByRateAndCount(t *testing.T) {
	recs := make([]record.Record, 100)
	for i := range recs {
		recs[i] = record.New([]byte(`{"i":1}`))
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tp := &tap{name: "x", where: tapWhere{kind: "source"}, lines: make(chan []byte, 1000), rate: 10, tokens: 1, last: t0, remaining: -1}
	tp.offer(recs, t0)
	if n := len(tp.lines); n != 1 {
		t.Fatalf("at the start: %d records, want 1", n)
	}
	tp.offer(recs, t0.Add(500*time.Millisecond))
	if n := len(tp.lines); n != 6 {
		t.Fatalf("after half a second at 10/s: %d records, want 6", n)
	}
	tp.offer(recs, t0.Add(time.Hour))
	if n := len(tp.lines); n != 16 {
		t.Fatalf("after a pause: %d records, want 16 (a second's worth more)", n)
	}
	one := recs[0]
	tp.offerOne(&one, t0.Add(time.Hour+100*time.Millisecond))
	if n := len(tp.lines); n != 17 {
		t.Fatalf("one more after 100ms: %d, want 17", n)
	}

	counted := &tap{name: "x", lines: make(chan []byte, 1000), rate: 1000, tokens: 1000, last: t0, remaining: 3}
	counted.offer(recs, t0)
	counted.offer(recs, t0.Add(time.Second))
	if n := len(counted.lines); n != 3 {
		t.Fatalf("count 3: %d records", n)
	}

	slow := &tap{name: "x", lines: make(chan []byte, 2), rate: 1000, tokens: 1000, last: t0, remaining: -1}
	slow.offer(recs[:10], t0)
	if n, d := len(slow.lines), slow.dropped.Load(); n != 2 || d != 8 {
		t.Fatalf("a reader with room for 2: %d sent, %d dropped; want 2 and 8", n, d)
	}
}

// Guarantee: a tapped record is one line of JSON that gives its value
// back exactly: embedded when it is one JSON value on one line, base64
// otherwise; key and header values as text when they are UTF-8.
func TestTapLine(t *testing.T) {
	r := record.New([]byte(`{"id":12345678901234567891,"b":1.50}`))
	r.Key = []byte("k-1")
	r.Headers = []record.Header{{Key: "h", Value: []byte{0xff, 0x00}}}
	r.Origin = record.Origin{Source: "in", Partition: "in/0", Offset: 7}
	r.Time = time.Date(2026, 2, 1, 19, 27, 17, 0, time.UTC)
	got := string(tapLine(nil, "transform", "paid", &r))
	want := `{"component":"paid","kind":"transform","source":"in","partition":"in/0","offset":7,"time":"2026-02-01T19:27:17Z","key":"k-1",` +
		`"headers":[{"key":"h","value":"/wA=","value_encoding":"base64"}],"value":{"id":12345678901234567891,"b":1.50}}`
	if got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	for _, v := range []string{"not json", "{\"a\":\n1}", "\xff"} {
		line := tapLine(nil, "source", "in", new(record.New([]byte(v))))
		var m struct {
			Value    []byte `json:"value"`
			Encoding string `json:"value_encoding"`
		}
		if err := json.Unmarshal(line, &m); err != nil || string(m.Value) != v || m.Encoding != "base64" {
			t.Errorf("value %q: line %s, decoded %q (%v)", v, line, m.Value, err)
		}
	}
}

// BenchmarkTapHooks is what the tap hooks cost one batch of 500 records
// going through a source, a transform and a sink: with nobody tapping (one
// atomic load and nil checks), and with a tap open on another component
// (the table is loaded and its empty lists ranged over). Neither samples a
// record, so both must stay at 0 allocs/op and a few nanoseconds.
func BenchmarkTapHooks(b *testing.B) {
	recs := make([]record.Record, 500)
	for i := range recs {
		recs[i] = record.New([]byte(`{"i":1}`))
	}
	batch := &connector.Batch{Records: recs}
	for _, tc := range []struct {
		name  string
		table *tapTable
	}{
		{"nobody", nil},
		{"elsewhere", &tapTable{source: make([][]*tap, 2), transform: make([][]*tap, 1), routeOut: make([][][]*tap, 1), sink: [][]*tap{nil, {{}}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rt := &runtime{}
			if tc.table != nil {
				rt.taps.table.Store(tc.table)
			}
			w := &worker{rt: rt}
			src := &sourceRunner{idx: 0}
			snk := &sinkRunner{rt: rt, idx: 0}
			b.ReportAllocs()
			for b.Loop() {
				w.tapBatch(src, batch)
				w.tapOut(0, recs)
				snk.tapIn(recs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
		})
	}
}
