package checkpoint

import "fmt"

// Partition identifies one partition of a source within a Checkpointer: a Kafka
// topic-partition, a file. Sources map their own partition names to small dense
// integers (the Checkpointer indexes a slice by them).
type Partition uint32

// Epoch numbers one assignment of a partition. Every Assign, including a rewind
// that re-assigns a partition at its watermark, starts a new epoch; epochs of a
// Checkpointer are unique and increase, so an acknowledgement from an earlier
// assignment is recognised as stale. Zero is never a valid epoch.
type Epoch uint64

// Position is a source position: a Kafka offset to resume from, a byte offset in
// a file. Positions of a partition never decrease from one batch to the next.
// The Checkpointer only compares them; what they mean is the source's business.
type Position int64

// BatchID is the identity of one source poll batch: its partition, the
// assignment epoch it was issued in, and its sequence number within that
// (partition, epoch), counting from zero.
type BatchID struct {
	Partition Partition
	Epoch     Epoch
	Seq       uint64
}

// BatchId is BatchID under the name the module's original description gives it.
type BatchId = BatchID

// String formats id as "p3/e7/s42".
func (id BatchID) String() string {
	return fmt.Sprintf("p%d/e%d/s%d", id.Partition, id.Epoch, id.Seq)
}

// AckMsg is the message a batch sends to the Checkpointer when the last clone
// of its AckRef is released: which batch, the position that becomes
// committable once it and every batch before it are delivered, and the worst
// status any of its records was released with.
type AckMsg struct {
	ID       BatchID
	Position Position
	Status   AckStatus
	// Leaked is set when no release resolved the batch: its last reference
	// became unreachable while still held. Status is then Failed.
	Leaked bool
}
