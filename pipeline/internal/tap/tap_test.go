package tap

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

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
	tp := New(Point{Kind: Source}, "x", 10, -1, t0)
	tp.lines = make(chan []byte, 1000)
	tp.Offer(recs, t0)
	if n := len(tp.lines); n != 1 {
		t.Fatalf("at the start: %d records, want 1", n)
	}
	tp.Offer(recs, t0.Add(500*time.Millisecond))
	if n := len(tp.lines); n != 6 {
		t.Fatalf("after half a second at 10/s: %d records, want 6", n)
	}
	tp.Offer(recs, t0.Add(time.Hour))
	if n := len(tp.lines); n != 16 {
		t.Fatalf("after a pause: %d records, want 16 (a second's worth more)", n)
	}
	one := recs[0]
	tp.Offer([]record.Record{one}, t0.Add(time.Hour+100*time.Millisecond))
	if n := len(tp.lines); n != 17 {
		t.Fatalf("one more after 100ms: %d, want 17", n)
	}

	counted := New(Point{}, "x", 1000, 3, t0.Add(-time.Second))
	counted.lines = make(chan []byte, 1000)
	counted.Offer(recs, t0)
	counted.Offer(recs, t0.Add(time.Second))
	if n := len(counted.lines); n != 3 {
		t.Fatalf("count 3: %d records", n)
	}

	slow := New(Point{}, "x", 1000, -1, t0.Add(-time.Second))
	slow.lines = make(chan []byte, 2)
	slow.Offer(recs[:10], t0)
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
	got := string(Line(nil, "transform", "paid", &r))
	want := `{"component":"paid","kind":"transform","source":"in","partition":"in/0","offset":7,"time":"2026-02-01T19:27:17Z","key":"k-1",` +
		`"headers":[{"key":"h","value":"/wA=","value_encoding":"base64"}],"value":{"id":12345678901234567891,"b":1.50}}`
	if got != want {
		t.Errorf("line\n got %s\nwant %s", got, want)
	}
	for _, v := range []string{"not json", "{\"a\":\n1}", "\xff"} {
		line := Line(nil, "source", "in", new(record.New([]byte(v))))
		var m struct {
			Value    []byte `json:"value"`
			Encoding string `json:"value_encoding"`
		}
		if err := json.Unmarshal(line, &m); err != nil || string(m.Value) != v || m.Encoding != "base64" {
			t.Errorf("value %q: line %s, decoded %q (%v)", v, line, m.Value, err)
		}
	}
}

// Guarantee: taps opened while the run ends are either refused or ended:
// none is left open, waiting for records that never come, and once closed
// the register refuses new taps and the hot path loads nil.
func TestRegisterCloseEndsEveryTap(t *testing.T) {
	for range 50 {
		var r Register
		s := &Shape{Sources: 1, RouteOuts: []int{2}, Sinks: 1}
		var wg sync.WaitGroup
		opened := make(chan *Tap, MaxOpen)
		for i := range MaxOpen {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tp := New(Point{Kind: Kind(i % 3), Out: -1}, "x", 1, -1, time.Now())
				if r.Add(s, tp) == nil {
					opened <- tp
				}
			}()
		}
		wg.Add(1)
		go func() { defer wg.Done(); r.Close() }()
		wg.Wait()
		close(opened)
		for tp := range opened {
			select {
			case <-tp.Done():
			default:
				t.Fatal("a tap accepted before the close was left open")
			}
		}
		if r.Load() != nil || r.Add(s, New(Point{}, "x", 1, -1, time.Now())) != ErrClosed {
			t.Fatal("a closed register still takes taps")
		}
	}
}

// Guarantee: taps read by many workers at once send at most their count,
// and a register refuses the tap beyond MaxOpen.
func TestCountUnderConcurrentOffers(t *testing.T) {
	recs := make([]record.Record, 100)
	for i := range recs {
		recs[i] = record.New([]byte(`1`))
	}
	t0 := time.Now()
	tp := New(Point{}, "x", MaxRateForTest, 50, t0.Add(-time.Second))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); tp.Offer(recs, t0) }()
	}
	wg.Wait()
	if n := len(tp.lines); n != 50 {
		t.Fatalf("%d lines sent, want the count of 50", n)
	}
	var r Register
	s := &Shape{Sources: 1}
	for range MaxOpen {
		if err := r.Add(s, New(Point{}, "x", 1, -1, t0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(s, New(Point{}, "x", 1, -1, t0)); err != ErrTooMany {
		t.Fatalf("tap %d: %v, want ErrTooMany", MaxOpen+1, err)
	}
}

// MaxRateForTest is a rate whose burst exceeds every offer of the test.
const MaxRateForTest = 10000
