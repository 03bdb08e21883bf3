// Package transform holds weir's record transforms: filter, map, flat_map and
// route. Transforms work on record fields and know nothing of acknowledgements:
// the runtime (package pipeline) gives each output a reference of its input's
// batch, releases the input's reference when a record is dropped, and resolves
// a record as Rejected when Process returns an error.
package transform

import "github.com/weir-etl/weir/record"

// Transform turns one record into zero or more.
//
// Process appends to out the records that in becomes and returns out. A filter
// appends nothing to drop a record; a map modifies *in and appends it; a
// flat_map appends several records built with in.CloneData(). The runtime takes
// the reference off in before calling Process and attaches the outputs' own, so
// in, and every output built from it, carries none. An error means the record cannot
// be processed (a field of the wrong type): the runtime resolves it as Rejected
// and applies the failure policy.
//
// A Transform may be called from several goroutines at once; it must not keep
// per-record state.
type Transform interface {
	Process(in *record.Record, out []record.Record) ([]record.Record, error)
}

// Predicate is a Transform that keeps or drops its input and never changes it
// (a filter). Keep reports whether in is kept; Process(in, out) appends *in to
// out exactly when Keep(in) is true. The runtime uses Keep to filter a poll
// batch where it lies, without copying the records it keeps; Keep must not
// modify in, and like Process it may be called from several goroutines.
type Predicate interface {
	Transform
	Keep(in *record.Record) (bool, error)
}

// InPlace is a transform that makes at most one output of each input and
// can make it where the input lies, for a caller that runs many records in a
// row on one goroutine (the runtime's chains of filters and maps): Apply(s,
// in) turns *in into the output Process would append and reports true, or
// reports false where Process would append nothing (a filter's drop, a map's
// drop()). On an error *in is as it was. s is the caller's evaluation state,
// kept from one record to the next instead of taken from a pool for each.
// Unlike Process, Apply (and Predicate's Keep) sees the record with its
// acknowledgement reference still on it, which no transform can reach: the
// runtime releases it when the record is dropped.
type InPlace interface {
	Transform
	Apply(s *Scratch, in *record.Record) (bool, error)
}

// Scratch is one goroutine's evaluation state for InPlace.Apply.
// The zero Scratch is ready; it takes its state at the first use. Between
// records it holds what it read of the last one: Release it when a run of
// records is done, so that nothing of them stays reachable from it (it
// takes new state at its next use). A Scratch is not safe for concurrent use.
type Scratch struct{ e *env }

// Release gives the state back; s may be used again.
func (s *Scratch) Release() {
	if s.e != nil {
		putEnv(s.e)
		s.e = nil
	}
}

// Router is a transform with named outputs ("route"). Downstream components
// name an output as "<route name>.<output name>".
type Router interface {
	// Outputs returns the output names, in the order Route refers to them.
	Outputs() []string
	// Route appends to dst the index of every output whose condition in
	// matches, and returns dst. Matching none drops the record.
	Route(in *record.Record, dst []int) ([]int, error)
}
