package iceberg

import (
	"context"
	"fmt"
	"testing"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

func partRecords(part string, from, to int) []record.Record {
	var out []record.Record
	for off := from; off < to; off++ {
		r := record.New([]byte(fmt.Sprintf(`{"off":"%s/%d"}`, part, off)))
		r.Origin = record.Origin{Source: "in", Partition: part, Offset: int64(off)}
		out = append(out, r)
	}
	return out
}

// Two processes of one writer (members of a Kafka group) commit to the
// same table at the same time, each its own partition: b commits while a
// is between writing its files and committing them. a's compare-and-swap
// then fails; it reads the positions again (now holding b's) and commits on
// top, keeping b's positions. Nothing is lost, nothing doubled, and a
// committed the files it had written (no file rewritten, none left over).
func TestConcurrentWritersKeepEachOthersPositions(t *testing.T) {
	ctx := context.Background()
	cfg := sqliteConfig(t.TempDir(), "two", Column{Name: "off", Type: "string"})
	a, b := openSink(t, cfg), openSink(t, cfg)
	if err := a.Write(ctx, partRecords("p1", 0, 10)); err != nil {
		t.Fatal(err)
	}
	a.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p1", Position: 10}})
	interleaved := false
	a.hook = func(step string) error {
		if step != stepFilesWritten || interleaved {
			return nil
		}
		interleaved = true
		if err := b.Write(ctx, partRecords("p2", 0, 5)); err != nil {
			return err
		}
		b.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p2", Position: 5}})
		return b.Flush(ctx)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if a.conflicts.Load() == 0 {
		t.Fatal("a's commit did not meet b's: the test did not interleave them")
	}
	got, err := a.StoredPositions(ctx, "in", []string{"p1", "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if got["p1"] != 10 || got["p2"] != 5 {
		t.Fatalf("stored positions %v, want p1 10 and p2 5", got)
	}
	vals := columnValues(t, a, "off")
	seen := map[string]int{}
	for _, v := range vals {
		seen[v]++
	}
	if len(vals) != 15 || len(seen) != 15 {
		t.Fatalf("the table holds %d rows, %d distinct, want 15 of each: %v", len(vals), len(seen), vals)
	}
	tbl, committed := committedFiles(t, a)
	if disk := dataFilesOnDisk(t, tbl); len(disk) != len(committed) {
		t.Fatalf("%d data files on disk, %d committed", len(disk), len(committed))
	}
}

// A process that lost a partition but still commits it (a zombie member,
// or one whose earlier commit landed although its answer was lost) has its
// commit find the partition's position moved: it leaves out the rows the
// position covers and appends only the rest.
func TestZombieCommitLeavesOutWhatIsStored(t *testing.T) {
	ctx := context.Background()
	cfg := sqliteConfig(t.TempDir(), "zombie", Column{Name: "off", Type: "string"})
	owner, zombie := openSink(t, cfg), openSink(t, cfg)
	if err := zombie.Write(ctx, partRecords("p", 0, 12)); err != nil {
		t.Fatal(err)
	}
	zombie.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p", Position: 12}})
	if err := owner.Write(ctx, partRecords("p", 0, 8)); err != nil {
		t.Fatal(err)
	}
	owner.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "p", Position: 8}})
	if err := owner.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := zombie.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := zombie.skipped.Load(); n != 8 {
		t.Fatalf("the zombie left out %d rows, want the 8 the owner stored", n)
	}
	vals := columnValues(t, owner, "off")
	seen := map[string]int{}
	for _, v := range vals {
		seen[v]++
	}
	if len(vals) != 12 || len(seen) != 12 {
		t.Fatalf("the table holds %d rows, %d distinct, want 12 of each", len(vals), len(seen))
	}
	got, _ := owner.StoredPositions(ctx, "in", []string{"p"})
	if got["p"] != 12 {
		t.Fatalf("stored position %d, want 12", got["p"])
	}
}
