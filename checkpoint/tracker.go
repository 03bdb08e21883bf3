package checkpoint

import "fmt"

// ResolveOutcome is what applying one batch resolution did.
type ResolveOutcome uint8

const (
	// Advanced: the batch was the oldest unresolved one and delivered; the
	// watermark moved past it and past every buffered batch behind it.
	Advanced ResolveOutcome = iota
	// Buffered: delivered, but an earlier batch is unresolved; kept until it is.
	Buffered
	// Blocked: delivered, but an earlier batch failed, so the watermark cannot
	// pass it in this epoch.
	Blocked
	// FailedBatch: the batch resolved Failed or Rejected; the watermark will
	// stop before it.
	FailedBatch
	// Stale: the batch belongs to an epoch that is no longer current (the
	// partition was revoked, forgotten or re-assigned). Discarded.
	Stale
	// Duplicate: the batch was already resolved. Discarded.
	Duplicate
	// Impossible: the resolution cannot come from a correct issuer: an epoch
	// that was never assigned, a sequence number absurdly far ahead, a position
	// behind the watermark, an invalid status. Discarded.
	Impossible

	numOutcomes = iota
)

var outcomeNames = [numOutcomes]string{"advanced", "buffered", "blocked", "failed", "stale", "duplicate", "impossible"}

// String returns the outcome's name.
func (o ResolveOutcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return fmt.Sprintf("ResolveOutcome(%d)", uint8(o))
}

// maxWindow bounds how far ahead of the oldest unresolved batch a resolution
// may be. A correct pipeline has far fewer batches in flight per partition (the
// in-flight limits); anything beyond this is reported as Impossible rather than
// allowed to allocate a huge window.
const maxWindow = 1 << 22

// PartitionTracker tracks contiguity for one partition within one epoch.
// Resolutions arrive in any order; the watermark is the end position of the
// highest batch such that it and every batch before it were delivered. A failed
// or rejected batch stops the watermark before it for the rest of the epoch.
//
// Out-of-order resolutions wait in a ring indexed by sequence number, so each
// resolution is O(1) amortized and memory grows with the widest out-of-order
// window seen, not with history.
//
// A PartitionTracker is a plain data structure: no goroutines, locks,
// channels, clocks or I/O. The zero value is not ready; use NewPartitionTracker.
type PartitionTracker struct {
	epoch     Epoch
	watermark Position
	next      uint64 // oldest sequence not yet passed by the watermark
	ring      []trackSlot
	buffered  int    // occupied slots of ring
	resolved  uint64 // accepted resolutions

	failed    bool // some resolution failed; failedSeq is the earliest
	failedSeq uint64
	failedSt  AckStatus
}

type trackSlot struct {
	pos Position
	st  uint8 // 0: empty; otherwise 1 + AckStatus
}

// NewPartitionTracker returns a tracker for an epoch whose first batch begins
// at start; the watermark starts there.
func NewPartitionTracker(epoch Epoch, start Position) *PartitionTracker {
	t := new(PartitionTracker)
	t.reset(epoch, start)
	return t
}

// reset re-arms t for a new epoch, keeping its ring's memory.
func (t *PartitionTracker) reset(epoch Epoch, start Position) {
	clear(t.ring)
	*t = PartitionTracker{epoch: epoch, watermark: start, ring: t.ring}
}

// Epoch returns the epoch t tracks.
func (t *PartitionTracker) Epoch() Epoch { return t.epoch }

// Watermark returns the highest position below which everything is delivered.
func (t *PartitionTracker) Watermark() Position { return t.watermark }

// Next returns the sequence number of the oldest batch the watermark has not
// passed: the one it waits for (or that failed).
func (t *PartitionTracker) Next() uint64 { return t.next }

// Resolved returns how many resolutions t accepted.
func (t *PartitionTracker) Resolved() uint64 { return t.resolved }

// Buffered returns how many resolutions wait behind an unresolved or failed one.
func (t *PartitionTracker) Buffered() int { return t.buffered }

// Failure returns the earliest failed batch's sequence and status; ok is false
// when nothing failed in this epoch.
func (t *PartitionTracker) Failure() (seq uint64, st AckStatus, ok bool) {
	return t.failedSeq, t.failedSt, t.failed
}

// Blocked reports whether the oldest batch the watermark waits for failed, so
// the watermark cannot move again in this epoch.
func (t *PartitionTracker) Blocked() bool { return t.failed && t.failedSeq == t.next }

// Resolve applies the resolution of batch seq, which ends at pos, with status
// st, and says what it did. Nothing but Advanced moves the watermark.
func (t *PartitionTracker) Resolve(seq uint64, pos Position, st AckStatus) ResolveOutcome {
	if !st.Valid() {
		return Impossible
	}
	if seq < t.next {
		return Duplicate
	}
	off := seq - t.next
	if off >= maxWindow || pos < t.watermark {
		return Impossible
	}
	if off >= uint64(len(t.ring)) {
		t.grow(off + 1)
	}
	mask := uint64(len(t.ring) - 1)
	sl := &t.ring[seq&mask]
	if sl.st != 0 {
		return Duplicate
	}
	sl.pos, sl.st = pos, 1+uint8(st)
	t.buffered++
	t.resolved++
	if st != Delivered {
		if !t.failed || seq < t.failedSeq {
			t.failed, t.failedSeq, t.failedSt = true, seq, st
		}
		return FailedBatch
	}
	if off != 0 {
		if t.failed && t.failedSeq < seq {
			return Blocked
		}
		return Buffered
	}
	t.advance(mask)
	return Advanced
}

// advance moves the watermark past the head, which was just resolved
// delivered, and past every delivered batch behind it, up to the first batch
// that is unresolved or failed.
func (t *PartitionTracker) advance(mask uint64) {
	if seededAdvance(t, mask) { // a wrong variant, modelcheck build only (seeded_on.go)
		return
	}
	for t.buffered > 0 {
		sl := &t.ring[t.next&mask]
		if sl.st != 1+uint8(Delivered) {
			break
		}
		t.watermark = max(t.watermark, sl.pos)
		sl.st = 0
		t.next++
		t.buffered--
	}
}

// grow makes the ring hold at least n slots from t.next on.
func (t *PartitionTracker) grow(n uint64) {
	size := max(uint64(len(t.ring)), 16)
	for size < n {
		size *= 2
	}
	ring := make([]trackSlot, size)
	old := t.ring
	for s := t.next; s < t.next+uint64(len(old)); s++ {
		ring[s&(size-1)] = old[s&uint64(len(old)-1)]
	}
	t.ring = ring
}
