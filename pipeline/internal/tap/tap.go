// Package tap samples the records leaving a pipeline's components for the
// taps of GET /api/v1/tap/{component} (`weir tap`), with no lock and no
// cost while nobody taps.
//
// The runtime's hot path holds one hook: a *Table, loaded once per batch
// (or per chunk in a sink) from a Register with one atomic load, nil while
// no tap is open. When it is not nil, Offer hands records to the taps open
// at a point. A Table is never changed once published: opening or closing
// a tap publishes a new one with a compare-and-swap. A tap samples by a
// rate (a generic cell rate: one atomic time, no mutex) and a count, and
// encodes a record on the spot into a line it hands to its reader with a
// send that never blocks: a slow reader loses lines, counted, and never
// slows the pipeline.
package tap

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/record"
)

// Buffer is how many encoded records wait for a slow reader.
const Buffer = 256

// Kind is the kind of component a tap reads from.
type Kind uint8

// The kinds of component.
const (
	Source Kind = iota
	Transform
	Sink
)

func (k Kind) String() string {
	switch k {
	case Source:
		return "source"
	case Transform:
		return "transform"
	}
	return "sink"
}

// Point is where a tap reads: a component by kind and index, and for a
// route's output its index (-1: the component itself).
type Point struct {
	Kind Kind
	Idx  int
	Out  int
}

// Tap is one open tap: what it samples, and the lines for its reader.
type Tap struct {
	at    Point
	name  string
	lines chan []byte
	done  chan struct{} // closed when the run ends
	once  sync.Once

	// The sampling state. tat is the time (Unix nanoseconds) at which the
	// next record would be due at the rate: a record is taken when now is
	// at least tat+interval, and tat is kept no further back than burst
	// before now (a second's worth of records, at least one).
	tat       atomic.Int64
	interval  int64
	burst     int64
	remaining atomic.Int64 // records still to send; -1 without a count limit
	dropped   atomic.Int64
}

// New returns a tap named name reading at p, taking rate records per
// second and count records in all (count < 0: no limit), starting at now
// with one record due.
func New(p Point, name string, rate float64, count int64, now time.Time) *Tap {
	t := &Tap{at: p, name: name, lines: make(chan []byte, Buffer), done: make(chan struct{})}
	t.interval = max(int64(float64(time.Second)/rate), 1)
	t.burst = max(int64(max(rate, 1)*float64(t.interval)), t.interval)
	t.tat.Store(now.UnixNano() - t.interval)
	t.remaining.Store(count)
	return t
}

// Lines delivers the encoded records; Done is closed when the run ends.
func (t *Tap) Lines() <-chan []byte { return t.lines }

// Done is closed when the run ends.
func (t *Tap) Done() <-chan struct{} { return t.done }

// Dropped counts the records sampled that the reader had no room for.
func (t *Tap) Dropped() int64 { return t.dropped.Load() }

// End ends the tap: the run is over.
func (t *Tap) End() { t.once.Do(func() { close(t.done) }) }

// Offer samples recs at now: it encodes the records the tap's rate and
// count let through and hands them to the reader.
func (t *Tap) Offer(recs []record.Record, now time.Time) {
	for i := range recs {
		if !t.take(now) {
			return
		}
		t.send(&recs[i])
	}
}

// take uses a record's worth of the rate and one of the records still to
// send, if there are.
func (t *Tap) take(now time.Time) bool {
	n := now.UnixNano()
	for {
		tat := t.tat.Load()
		next := max(tat, n-t.burst) + t.interval
		if next > n {
			return false
		}
		if t.tat.CompareAndSwap(tat, next) {
			break
		}
	}
	for {
		r := t.remaining.Load()
		switch {
		case r == 0:
			return false
		case r < 0:
			return true
		case t.remaining.CompareAndSwap(r, r-1):
			return true
		}
	}
}

// send hands rec, encoded, to the reader without waiting.
func (t *Tap) send(rec *record.Record) {
	select {
	case t.lines <- Line(nil, t.at.Kind.String(), t.name, rec):
	default:
		t.dropped.Add(1)
	}
}
