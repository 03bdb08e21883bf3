package checkpoint

import "fmt"

// AckSet is a fail-safe collection of references for data that is not durable
// yet: the records encoded into a file chunk, a sink's pending batch. A sink
// moves each record's reference into the set when it buffers the record, and
// gives the set its outcome when the write is over: Ack once the data is durable,
// Fail when it is not.
//
// Memory is per batch, not per record: adding a reference of the batch the set
// added last merges it into that entry, so 10,000 records of one poll batch take
// one entry. References of interleaved batches take one entry per run.
//
// A set that is dropped without an outcome never reports its batches
// delivered: its references leak, and the leak backstop resolves their batches
// as Failed.
//
// The zero AckSet is empty and ready. After Ack or Fail the set is empty again
// and may be reused; reusing one keeps its capacity, so a sink that recycles its
// sets does not allocate per chunk. An AckSet is not safe for concurrent use.
type AckSet struct {
	entries []setEntry
}

type setEntry struct {
	h *handle
	n int64 // references held
}

// Add moves the reference r into the set and clears r.
func (s *AckSet) Add(r *AckRef) {
	h := r.h
	if h == nil {
		panic("checkpoint: AckSet.Add of a zero or released AckRef")
	}
	r.h = nil
	if k := len(s.entries); k > 0 && s.entries[k-1].h == h {
		s.entries[k-1].n++
		return
	}
	s.entries = append(s.entries, setEntry{h: h, n: 1})
}

// Merge moves every reference of o into s and leaves o empty.
func (s *AckSet) Merge(o *AckSet) {
	if seededMerge(s, o) { // a wrong variant, modelcheck build only (seeded_on.go)
		return
	}
	for _, e := range o.entries {
		if k := len(s.entries); k > 0 && s.entries[k-1].h == e.h {
			s.entries[k-1].n += e.n
			continue
		}
		s.entries = append(s.entries, e)
	}
	o.reset()
}

// Len returns the number of entries: runs of references to the same batch.
func (s *AckSet) Len() int { return len(s.entries) }

// Refs returns the number of references the set holds.
func (s *AckSet) Refs() int64 {
	var n int64
	for _, e := range s.entries {
		n += e.n
	}
	return n
}

// Batches calls f with the identity of each entry's batch, in the order added.
// It is meant for diagnostics (which batches a stalled sink holds).
func (s *AckSet) Batches(f func(BatchID)) {
	for _, e := range s.entries {
		f(e.h.n.id)
	}
}

// Ack releases every reference as Delivered. Call it only once the data is
// durable: fsynced and renamed, committed, acknowledged by the broker.
func (s *AckSet) Ack() { s.Fail(Delivered) }

// Fail releases every reference with status st.
func (s *AckSet) Fail(st AckStatus) {
	if !st.Valid() {
		panic(fmt.Sprintf("checkpoint: AckSet.Fail with invalid status %d", uint8(st)))
	}
	for _, e := range s.entries {
		e.h.release(st, e.n)
	}
	s.reset()
}

func (s *AckSet) reset() {
	clear(s.entries) // drop the handle pointers so the leak backstop can see them go
	s.entries = s.entries[:0]
}
