package pipeline

import (
	"testing"
	"time"

	"github.com/weir-etl/weir/record"
)

// The adapted group size (linger.go): it grows while the sink is what the
// pipeline waits for, shrinks when the sink keeps up, and stays within its
// bounds and within what fits in batch.max_bytes.
func TestNextGroupTarget(t *testing.T) {
	const mb = 1 << 20
	lo, hi := DefaultBatchMaxRecords, DefaultBatchMaxRecordsCeiling
	ms := time.Millisecond
	for _, c := range []struct {
		name          string
		cur           int
		fill, durable time.Duration
		avg, maxBytes int64
		want          int
	}{
		{"a sink behind a backlog: twice the size", lo, 4 * ms, 6 * ms, 300, 64 * mb, 2 * lo},
		{"durable in as long as the fill still counts as behind", 20000, 10 * ms, 10 * ms, 300, 64 * mb, 40000},
		{"durable a little faster than the fill: unchanged", 20000, 10 * ms, 9 * ms, 300, 64 * mb, 20000},
		{"growth stops at the ceiling", 80000, 10 * ms, 50 * ms, 300, 64 * mb, hi},
		{"at the ceiling it stays", hi, 10 * ms, 50 * ms, 300, 64 * mb, hi},
		{"in between: unchanged", 40000, 40 * ms, 10 * ms, 300, 64 * mb, 40000},
		{"a sink that keeps up: a quarter less", 40000, 100 * ms, 24 * ms, 300, 64 * mb, 30000},
		{"a trickle closed by max_age: back to the floor", 12000, time.Second, ms, 300, 64 * mb, lo},
		{"never below the floor", lo, time.Second, ms, 300, 64 * mb, lo},
		// Three fifths of 8 MiB / 300 bytes (a 100-byte value and the
		// record's 200-byte struct): 16,777 records, not 40,000.
		{"bounded by max_bytes with each record's own size", 20000, ms, 10 * ms, 300, 8 * mb, 16777},
		{"a target above what fits comes down to it", hi, ms, 10 * ms, 300, 8 * mb, 16777},
		// Three fifths of 8 MiB / 2,200 bytes: 2,287, less than the floor: the floor
		// holds (max_bytes closes those groups first anyway).
		{"large records: the floor, max_bytes closes the group", lo, ms, 10 * ms, 2200, 8 * mb, lo},
		{"a group filled at once (fill 0) counts as behind", lo, 0, 0, 100, 64 * mb, 2 * lo},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := nextGroupTarget(c.cur, c.fill, c.durable, c.avg, c.maxBytes); got != c.want {
				t.Errorf("nextGroupTarget(%d, fill %v, durable %v, avg %d, max_bytes %d) = %d, want %d",
					c.cur, c.fill, c.durable, c.avg, c.maxBytes, got, c.want)
			}
		})
	}
}

// The sink runner's group bytes count each record's size in memory
// (record.Record.Size, its struct included), and the size a group may reach
// is three fifths of batch.max_bytes over that size, the struct counted once.
func TestGroupSizerCountsTheStructOnce(t *testing.T) {
	rec := record.New(make([]byte, 20))
	size := int64(rec.Size()) // 20 bytes and the struct
	const maxBytes = 8 << 20
	g := newGroupSizer(BatchSettings{MaxRecords: DefaultBatchMaxRecords, AdaptRecords: true}, time.Unix(0, 0))
	g.target = DefaultBatchMaxRecordsCeiling
	n := 20000
	g.observe(n, int64(n)*size, time.Millisecond, 0, maxBytes)
	if want := int(maxBytes * 3 / 5 / size); g.target != want {
		t.Fatalf("target %d after a group of %d-byte records under max_bytes %d, want %d", g.target, size, maxBytes, want)
	}
}

// Only a batch.max_records left to its default adapts; a set one is kept.
func TestGroupSizerAdaptsOnlyTheDefault(t *testing.T) {
	var def, set Spec
	def.Sinks = []SinkSpec{{Name: "a"}}
	set.Sinks = []SinkSpec{{Name: "a", Batch: BatchSettings{MaxRecords: 5000}}}
	FillDefaults(&def)
	FillDefaults(&set)
	FillDefaults(&def) // Run fills its own copy again: the flag stays
	if b := def.Sinks[0].Batch; !b.AdaptRecords || b.MaxRecords != DefaultBatchMaxRecords {
		t.Fatalf("default batch: AdaptRecords %v, MaxRecords %d; want true, %d", b.AdaptRecords, b.MaxRecords, DefaultBatchMaxRecords)
	}
	if b := set.Sinks[0].Batch; b.AdaptRecords {
		t.Fatal("batch.max_records set to 5000 adapts; it must stay fixed")
	}
	now := time.Unix(0, 0)
	for _, c := range []struct {
		b    BatchSettings
		want int
	}{{def.Sinks[0].Batch, 2 * DefaultBatchMaxRecords}, {set.Sinks[0].Batch, 5000}} {
		g := newGroupSizer(c.b, now)
		fill := g.sealed(now.Add(time.Millisecond))
		g.observe(g.target, 100*int64(g.target), fill, 10*time.Millisecond, c.b.MaxBytes)
		if g.target != c.want {
			t.Errorf("max_records %d (adapt %v) after a slow group: target %d, want %d", c.b.MaxRecords, c.b.AdaptRecords, g.target, c.want)
		}
	}
}
