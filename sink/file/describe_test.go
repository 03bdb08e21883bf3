package file

import "testing"

// Describe names the output directory and counts only what Flush published:
// an aborted group is not output.
func TestDescribeCountsPublishedChunks(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.MaxRecords = 2 })
	if err := s.Write(ctx, recs(`{"a":1}`, `{"a":2}`, `{"a":3}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, recs(`{"a":4}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	want := dir + ": 2 chunks, 3 records"
	if got := s.Describe(); got != want {
		t.Fatalf("Describe() = %q, want %q", got, want)
	}
}
