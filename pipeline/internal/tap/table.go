package tap

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/record"
)

// MaxOpen is how many taps may be open at once.
const MaxOpen = 16

// Errors of Register.Add.
var (
	ErrClosed  = errors.New("pipeline: the pipeline is not running")
	ErrTooMany = fmt.Errorf("pipeline: %d taps are open already; close one", MaxOpen)
)

// Shape is how many components a pipeline has where taps can read:
// sources, transforms (with the outputs of each, 0 for a transform that is
// not a route) and sinks.
type Shape struct {
	Sources   int
	RouteOuts []int // by transform
	Sinks     int
}

// Table says who taps what. It is never changed once published.
type Table struct {
	open      []*Tap
	source    [][]*Tap   // by source
	transform [][]*Tap   // by transform (a route: every record it routes)
	routeOut  [][][]*Tap // by transform, then route output
	sink      [][]*Tap   // by sink
}

// Offer hands recs to the taps at component idx of kind k, and, for a
// route, to those of the outputs outs it routes them to. It is the hot
// path's one hook, called only on a table that is not nil.
func (tt *Table) Offer(k Kind, idx int, outs []int, recs []record.Record) {
	var at [][]*Tap
	switch k {
	case Source:
		at = tt.source
	case Transform:
		at = tt.transform
	default:
		at = tt.sink
	}
	routed := k == Transform && outs != nil && tt.routeOut[idx] != nil
	if len(at[idx]) == 0 && !routed {
		return
	}
	now := time.Now()
	for _, t := range at[idx] {
		t.Offer(recs, now)
	}
	if routed {
		for _, o := range outs {
			for _, t := range tt.routeOut[idx][o] {
				t.Offer(recs, now)
			}
		}
	}
}

// Register is a run's open taps: the table the hot path loads, replaced
// with a compare-and-swap whenever a tap opens or closes.
type Register struct {
	table  atomic.Pointer[Table] // nil while no tap is open
	closed atomic.Bool
}

// Load returns the table of the open taps, nil when none is open: one
// atomic load.
func (r *Register) Load() *Table { return r.table.Load() }

// Add opens t in a pipeline of shape s, or says why not.
func (r *Register) Add(s *Shape, t *Tap) error {
	for {
		if r.closed.Load() {
			return ErrClosed
		}
		old := r.table.Load()
		var open []*Tap
		if old != nil {
			open = old.open
		}
		if len(open) >= MaxOpen {
			return ErrTooMany
		}
		if r.table.CompareAndSwap(old, build(s, append(slices.Clone(open), t))) {
			break
		}
	}
	// Close may have swapped its nil in before this table: then it ended
	// every tap it saw, but not t.
	if r.closed.Load() {
		r.Remove(s, t)
		t.End()
		return ErrClosed
	}
	return nil
}

// Remove closes t.
func (r *Register) Remove(s *Shape, t *Tap) {
	for {
		old := r.table.Load()
		if old == nil {
			return
		}
		i := slices.Index(old.open, t)
		if i < 0 {
			return
		}
		if r.table.CompareAndSwap(old, build(s, slices.Delete(slices.Clone(old.open), i, i+1))) {
			return
		}
	}
}

// Close ends every tap and refuses new ones: the run is over.
func (r *Register) Close() {
	r.closed.Store(true)
	if old := r.table.Swap(nil); old != nil {
		for _, t := range old.open {
			t.End()
		}
	}
}

// build is the table of the taps open, nil when none is.
func build(s *Shape, open []*Tap) *Table {
	if len(open) == 0 {
		return nil
	}
	tt := &Table{open: open, source: make([][]*Tap, s.Sources), transform: make([][]*Tap, len(s.RouteOuts)),
		routeOut: make([][][]*Tap, len(s.RouteOuts)), sink: make([][]*Tap, s.Sinks)}
	for _, t := range open {
		p := t.at
		switch {
		case p.Kind == Source:
			tt.source[p.Idx] = append(tt.source[p.Idx], t)
		case p.Kind == Sink:
			tt.sink[p.Idx] = append(tt.sink[p.Idx], t)
		case p.Out >= 0:
			if tt.routeOut[p.Idx] == nil {
				tt.routeOut[p.Idx] = make([][]*Tap, s.RouteOuts[p.Idx])
			}
			tt.routeOut[p.Idx][p.Out] = append(tt.routeOut[p.Idx][p.Out], t)
		default:
			tt.transform[p.Idx] = append(tt.transform[p.Idx], t)
		}
	}
	return tt
}
