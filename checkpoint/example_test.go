package checkpoint_test

import (
	"fmt"

	"github.com/weir-etl/weir/checkpoint"
)

// The whole flow for one partition: a poll batch's reference is cloned into
// every record, a filter drops one record, a flat_map fans another out into
// two, and routing sends records to two sinks that hold references in AckSets
// until their writes are durable. The position becomes committable only when
// the last holder has let go.
func Example() {
	cp := checkpoint.New()
	issuer := cp.NewIssuer()
	issuer.Assign(0, 1000) // partition 0 resumes at offset 1000

	// Poll: one batch of three records, offsets 1000 to 1002.
	batch := issuer.Issue(0, 1003)
	records := []checkpoint.AckRef{batch.Clone(), batch.Clone(), batch.Clone()}
	batch.Release(checkpoint.Delivered) // the poll loop's own reference

	// filter: records[0] does not match and is dropped. A deliberate drop is a
	// delivery, or the partition's lag would grow forever.
	records[0].Release(checkpoint.Delivered)

	// flat_map: records[1] becomes two records.
	outA, outB := records[1].Clone(), records[1].Clone()
	records[1].Release(checkpoint.Delivered)

	// route: outA goes to both sinks, outB and records[2] to the file sink.
	var fileChunk, dbBatch checkpoint.AckSet
	toDB := outA.Clone()
	fileChunk.Add(&outA)
	fileChunk.Add(&outB)
	fileChunk.Add(&records[2])
	dbBatch.Add(&toDB)
	fmt.Printf("file sink holds %d refs in %d entry\n", fileChunk.Refs(), fileChunk.Len())

	cp.Drain()
	fmt.Println("before the writes:", cp.Committable(nil))

	fileChunk.Ack() // fsynced and renamed
	cp.Drain()
	fmt.Println("file durable:", cp.Committable(nil))

	dbBatch.Ack() // COMMIT succeeded
	stats := cp.Drain()
	fmt.Println("resolved:", stats.Messages, stats.Outcome(checkpoint.Advanced))

	commits := cp.Committable(nil)
	fmt.Println("both durable:", commits)
	// source.Commit(ctx, commits) succeeded:
	cp.MarkCommitted(commits)
	fmt.Println("after commit:", cp.Committable(nil))

	// Output:
	// file sink holds 3 refs in 1 entry
	// before the writes: []
	// file durable: []
	// resolved: 1 1
	// both durable: [{0 1 1003}]
	// after commit: []
}

// A PartitionTracker on its own: resolutions in any order, a watermark that
// only passes a contiguous run of delivered batches.
func ExamplePartitionTracker() {
	t := checkpoint.NewPartitionTracker(1, 0)
	fmt.Println(t.Resolve(1, 20, checkpoint.Delivered), t.Watermark())
	fmt.Println(t.Resolve(0, 10, checkpoint.Delivered), t.Watermark())
	fmt.Println(t.Resolve(3, 40, checkpoint.Failed), t.Watermark())
	fmt.Println(t.Resolve(4, 50, checkpoint.Delivered), t.Watermark())
	fmt.Println(t.Resolve(2, 30, checkpoint.Delivered), t.Watermark())
	fmt.Println(t.Resolve(2, 30, checkpoint.Delivered), t.Watermark())
	fmt.Println("blocked:", t.Blocked())
	// Output:
	// buffered 0
	// advanced 20
	// failed 20
	// blocked 20
	// advanced 30
	// duplicate 30
	// blocked: true
}

// The failure policy's rewind: a failed batch blocks the epoch, so the source
// seeks back to the watermark and the partition is assigned again there. The
// acknowledgements of the old epoch still in flight are stale.
func ExampleAckIssuer_Assign() {
	cp := checkpoint.New()
	issuer := cp.NewIssuer()
	issuer.Assign(0, 0)
	a, b, late := issuer.Issue(0, 10), issuer.Issue(0, 20), issuer.Issue(0, 30)
	a.Release(checkpoint.Delivered)
	b.Release(checkpoint.Failed)
	cp.Drain()
	st, _ := cp.State(0)
	fmt.Println("watermark", st.Watermark, "blocked", st.Blocked)

	issuer.Assign(0, st.Watermark) // after seeking the source back to 10
	again := issuer.Issue(0, 20)
	late.Release(checkpoint.Delivered) // from the old epoch
	again.Release(checkpoint.Delivered)
	stats := cp.Drain()
	fmt.Println("stale:", stats.Outcome(checkpoint.Stale), "committable:", cp.Committable(nil))
	// Output:
	// watermark 10 blocked true
	// stale: 1 committable: [{0 2 20}]
}
