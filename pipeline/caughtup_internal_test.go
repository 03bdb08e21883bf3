package pipeline

import "testing"

// TestHoldsMuch is the decision of a sink asked to flush by a source paused
// at its limits (pressed): only an open group that spans at least one share
// of the batches in flight is flushed.
func TestHoldsMuch(t *testing.T) {
	for _, c := range []struct {
		records, held    int
		shares, inflight int64
		want             bool
	}{
		{records: 0, held: 0, shares: 4, inflight: 8, want: false},       // nothing to flush
		{records: 10, held: 1, shares: 4, inflight: 8, want: false},      // an eighth of them: the others free the source
		{records: 10, held: 2, shares: 4, inflight: 8, want: true},       // a quarter: one share of four
		{records: 10, held: 8, shares: 2, inflight: 8, want: true},       // all of them
		{records: 10, held: 1, shares: 2, inflight: 3, want: false},      // a third, with two shares
		{records: 10, held: 1, shares: 2, inflight: 1, want: true},       // the one batch in flight
		{records: 5000, held: 3, shares: 4, inflight: 1024, want: false}, // a big group of few batches
	} {
		if got := holdsMuch(c.records, c.held, c.shares, c.inflight); got != c.want {
			t.Errorf("holdsMuch(%d records, %d batches held, %d shares, %d in flight) = %v, want %v",
				c.records, c.held, c.shares, c.inflight, got, c.want)
		}
	}
}
