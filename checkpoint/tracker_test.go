package checkpoint

import (
	"fmt"
	"slices"
	"testing"
)

// step is one resolution fed to a PartitionTracker and the outcome it must have.
type step struct {
	seq  uint64
	pos  Position
	st   AckStatus
	want ResolveOutcome
}

// TestPartitionTracker walks a tracker through every ResolveOutcome it can
// return and checks the watermark after each case. The guarantee under test is
// invariant 3: the watermark is the end of the longest delivered prefix, and
// never passes an unresolved, failed or rejected batch.
func TestPartitionTracker(t *testing.T) {
	D, F, R := Delivered, Failed, Rejected
	tests := []struct {
		name      string
		start     Position
		steps     []step
		watermark Position
		next      uint64
		buffered  int
		failedSeq int64 // -1: no failure
		failedSt  AckStatus
		blocked   bool
	}{
		{
			name: "in order", start: 100,
			steps:     []step{{0, 110, D, Advanced}, {1, 120, D, Advanced}, {2, 130, D, Advanced}},
			watermark: 130, next: 3, failedSeq: -1,
		},
		{
			name: "reversed", start: 0,
			steps:     []step{{2, 30, D, Buffered}, {1, 20, D, Buffered}, {0, 10, D, Advanced}},
			watermark: 30, next: 3, failedSeq: -1,
		},
		{
			name: "gap holds the watermark", start: 0,
			steps:     []step{{0, 10, D, Advanced}, {2, 30, D, Buffered}, {3, 40, D, Buffered}},
			watermark: 10, next: 1, buffered: 2, failedSeq: -1,
		},
		{
			name: "empty batches keep the position", start: 5,
			steps:     []step{{1, 5, D, Buffered}, {0, 5, D, Advanced}, {2, 9, D, Advanced}},
			watermark: 9, next: 3, failedSeq: -1,
		},
		{
			// Positions from a broken sender: a buffered resolution whose end
			// is behind the watermark when its turn comes must not pull the
			// watermark back.
			name: "never regresses", start: 0,
			steps:     []step{{2, 15, D, Buffered}, {0, 30, D, Advanced}, {1, 40, D, Advanced}},
			watermark: 40, next: 3, failedSeq: -1,
		},
		{
			// Vector committed past a failed message once a later one succeeded
			// (vector #24215); the watermark must stop before it instead.
			name: "failure in the middle", start: 0,
			steps: []step{
				{0, 10, D, Advanced}, {2, 30, F, FailedBatch}, {3, 40, D, Blocked},
				{1, 20, D, Advanced}, {4, 50, D, Blocked},
			},
			watermark: 20, next: 2, buffered: 3, failedSeq: 2, failedSt: F, blocked: true,
		},
		{
			name: "failure ahead of a gap is not yet blocking", start: 0,
			steps:     []step{{3, 40, R, FailedBatch}, {1, 20, D, Buffered}, {4, 50, D, Blocked}},
			watermark: 0, next: 0, buffered: 3, failedSeq: 3, failedSt: R,
		},
		{
			name: "earliest failure wins", start: 0,
			steps:     []step{{5, 60, R, FailedBatch}, {2, 30, F, FailedBatch}, {3, 40, D, Blocked}, {1, 20, D, Buffered}},
			watermark: 0, next: 0, buffered: 4, failedSeq: 2, failedSt: F,
		},
		{
			name: "failed head", start: 7,
			steps:     []step{{0, 10, F, FailedBatch}, {1, 20, D, Blocked}},
			watermark: 7, next: 0, buffered: 2, failedSeq: 0, failedSt: F, blocked: true,
		},
		{
			name: "duplicates are discarded", start: 0,
			steps: []step{
				{0, 10, D, Advanced}, {0, 10, D, Duplicate}, {0, 10, F, Duplicate},
				{2, 30, D, Buffered}, {2, 30, F, Duplicate}, {1, 20, F, FailedBatch}, {1, 20, D, Duplicate},
			},
			watermark: 10, next: 1, buffered: 2, failedSeq: 1, failedSt: F, blocked: true,
		},
		{
			name: "impossible inputs are discarded", start: 50,
			steps: []step{
				{0, 60, AckStatus(3), Impossible},        // invalid status
				{0, 49, D, Impossible},                   // behind the watermark
				{maxWindow, 1 << 40, D, Impossible},      // absurdly far ahead
				{1<<64 - 1, 1 << 40, D, Impossible},      // at the edge of uint64
				{0, 60, D, Advanced},                     // the tracker is unharmed
				{1, 55, D, Impossible},                   // behind the advanced watermark
				{1 + maxWindow, 1 << 40, D, Impossible},  // the window is relative to Next
				{2, 1 << 40, AckStatus(255), Impossible}, // invalid, even when in the window
				{1, 70, D, Advanced},
				{1, 70, D, Duplicate},
			},
			watermark: 70, next: 2, failedSeq: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewPartitionTracker(9, tc.start)
			if tr.Epoch() != 9 || tr.Watermark() != tc.start || tr.Next() != 0 {
				t.Fatalf("new tracker: epoch %d watermark %d next %d", tr.Epoch(), tr.Watermark(), tr.Next())
			}
			var accepted uint64
			for i, s := range tc.steps {
				before := tr.Watermark()
				got := tr.Resolve(s.seq, s.pos, s.st)
				if got != s.want {
					t.Fatalf("step %d: Resolve(%d, %d, %v) = %v, want %v", i, s.seq, s.pos, s.st, got, s.want)
				}
				if got != Advanced && tr.Watermark() != before {
					t.Fatalf("step %d: %v moved the watermark from %d to %d", i, got, before, tr.Watermark())
				}
				if tr.Watermark() < before {
					t.Fatalf("step %d: watermark regressed from %d to %d", i, before, tr.Watermark())
				}
				switch got {
				case Advanced, Buffered, Blocked, FailedBatch:
					accepted++
				}
			}
			if tr.Watermark() != tc.watermark || tr.Next() != tc.next || tr.Buffered() != tc.buffered {
				t.Errorf("watermark %d next %d buffered %d, want %d %d %d",
					tr.Watermark(), tr.Next(), tr.Buffered(), tc.watermark, tc.next, tc.buffered)
			}
			if tr.Resolved() != accepted {
				t.Errorf("Resolved() = %d, want %d", tr.Resolved(), accepted)
			}
			seq, st, ok := tr.Failure()
			if wantOK := tc.failedSeq >= 0; ok != wantOK || (ok && (seq != uint64(tc.failedSeq) || st != tc.failedSt)) {
				t.Errorf("Failure() = %d, %v, %v; want %d, %v, %v", seq, st, ok, tc.failedSeq, tc.failedSt, wantOK)
			}
			if tr.Blocked() != tc.blocked {
				t.Errorf("Blocked() = %v, want %v", tr.Blocked(), tc.blocked)
			}
		})
	}
}

// TestPartitionTrackerRingWraps resolves far more batches than the ring holds,
// with a sliding out-of-order window, so that the ring wraps, and grows while
// it holds buffered resolutions: none may be lost or misplaced, and the ring
// grows no larger than the window needs.
func TestPartitionTrackerRingWraps(t *testing.T) {
	for _, window := range []uint64{1, 3, 16, 17, 100} {
		for _, order := range []string{"reversed", "head-last"} {
			t.Run(fmt.Sprint(order, window), func(t *testing.T) {
				tr := NewPartitionTracker(1, 0)
				const n = 1000
				for base := uint64(0); base < n; base += window {
					end := min(base+window, n)
					// Every window's first batch resolves last, so only it
					// advances, past the whole window. Reversed, the ring grows
					// before anything is buffered; head-last, it grows while
					// the window's earlier resolutions wait in it.
					var seqs []uint64
					for s := base + 1; s < end; s++ {
						seqs = append(seqs, s)
					}
					if order == "reversed" {
						slices.Reverse(seqs)
					}
					for _, seq := range append(seqs, base) {
						want := Buffered
						if seq == base {
							want = Advanced
						}
						if got := tr.Resolve(seq, Position(10*(seq+1)), Delivered); got != want {
							t.Fatalf("Resolve(%d) = %v, want %v", seq, got, want)
						}
					}
					if tr.Watermark() != Position(10*end) || tr.Buffered() != 0 {
						t.Fatalf("after window at %d: watermark %d buffered %d, want %d 0", base, tr.Watermark(), tr.Buffered(), 10*end)
					}
				}
				// Memory follows the widest window, not history: the ring is
				// the smallest power of two, of at least 16 slots, that holds
				// a window.
				want := 16
				for uint64(want) < window {
					want *= 2
				}
				if len(tr.ring) != want {
					t.Errorf("ring grew to %d slots for a window of %d, want %d", len(tr.ring), window, want)
				}
			})
		}
	}
}

// refTracker is a deliberately naive reference for PartitionTracker: it keeps
// every resolution of the epoch in a map and recomputes the watermark from
// scratch as the end of the longest delivered prefix.
type refTracker struct {
	start    Position
	statuses map[uint64]AckStatus
	ends     map[uint64]Position
}

func (r *refTracker) prefix() (n uint64, wm Position) {
	wm = r.start
	for {
		st, ok := r.statuses[n]
		if !ok || st != Delivered {
			return n, wm
		}
		wm = max(wm, r.ends[n])
		n++
	}
}

// resolve returns the outcome the specification gives, or ok=false when either
// Duplicate or Impossible is right (a repeated sequence number with a position
// behind the watermark is both).
func (r *refTracker) resolve(seq uint64, pos Position, st AckStatus) (want ResolveOutcome, alt ResolveOutcome) {
	next, wm := r.prefix()
	_, dup := r.statuses[seq]
	bad := !st.Valid() || pos < wm || (seq >= next && seq-next >= maxWindow)
	switch {
	case !st.Valid():
		return Impossible, Impossible
	case dup && bad:
		return Duplicate, Impossible
	case dup:
		return Duplicate, Duplicate
	case bad:
		return Impossible, Impossible
	}
	r.statuses[seq], r.ends[seq] = st, pos
	if st != Delivered {
		return FailedBatch, FailedBatch
	}
	if seq == next {
		return Advanced, Advanced
	}
	for s := next; s < seq; s++ {
		if fs, ok := r.statuses[s]; ok && fs != Delivered {
			return Blocked, Blocked
		}
	}
	return Buffered, Buffered
}

// FuzzTracker feeds PartitionTracker arbitrary resolution sequences and checks
// it against refTracker: same outcomes, the watermark is the end of the longest
// delivered prefix and never regresses, duplicates are reported as such.
//
// Input layout: byte 0 chooses the start position; then each resolution takes
// three bytes: the batch (seq), the status and a variant (a position behind the
// watermark, a sequence number beyond the window, an arbitrary position).
func FuzzTracker(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 2, 0, 0})
	f.Add([]byte{5, 2, 0, 1, 1, 0, 1, 0, 0, 1})
	f.Add([]byte{0, 1, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0})
	f.Add([]byte{9, 3, 2, 0, 0, 0, 0xf0, 1, 0, 0, 2, 7, 0x30})
	f.Add([]byte{0, 2, 0x80, 0xd0, 0, 0x80, 0, 1, 0x80, 0}) // a stale position buffered, then passed
	f.Add([]byte{0, 1, 0x80, 0xe1, 0, 0x80, 0xf2})          // beyond the window, behind the watermark
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		start := Position(data[0])
		data = data[1:]
		// Batch ends: non-decreasing, with repeats (empty batches), drawn from
		// the input so that every batch has one fixed end.
		const nb = 64
		var ends [nb]Position
		p := start
		for i := range ends {
			if i < len(data) {
				p += Position(data[i] % 3)
			} else {
				p += 1
			}
			ends[i] = p
		}
		tr := NewPartitionTracker(1, start)
		ref := &refTracker{start: start, statuses: map[uint64]AckStatus{}, ends: map[uint64]Position{}}
		for ; len(data) >= 3; data = data[3:] {
			seq := uint64(data[0] % nb)
			st := AckStatus(data[1] % 4) // 3 is invalid
			if data[1]&0x80 != 0 {
				st = Delivered // favour deliveries so the watermark moves
			}
			pos := ends[seq]
			switch data[2] >> 4 {
			case 0xf:
				pos = tr.Watermark() - 1 - Position(data[2]&3)
			case 0xe:
				seq = tr.Next() + maxWindow + uint64(data[2]&3)
			case 0xd:
				pos = start + Position(data[2]&15) // out of step with the batch ends
			}
			before := tr.Watermark()
			want, alt := ref.resolve(seq, pos, st)
			got := tr.Resolve(seq, pos, st)
			if got != want && got != alt {
				t.Fatalf("Resolve(%d, %d, %v) = %v, want %v", seq, pos, st, got, want)
			}
			next, wm := ref.prefix()
			if tr.Watermark() != wm || tr.Next() != next {
				t.Fatalf("after Resolve(%d, %d, %v): watermark %d next %d, reference %d %d", seq, pos, st, tr.Watermark(), tr.Next(), wm, next)
			}
			if tr.Watermark() < before {
				t.Fatalf("watermark regressed from %d to %d", before, tr.Watermark())
			}
			if uint64(len(ref.statuses)) != tr.Resolved() || tr.Buffered() != len(ref.statuses)-int(next) {
				t.Fatalf("resolved %d buffered %d, reference %d %d", tr.Resolved(), tr.Buffered(), len(ref.statuses), len(ref.statuses)-int(next))
			}
			fseq, fst, fok := tr.Failure()
			var rseq uint64
			var rst AckStatus
			rok := false
			for s, st := range ref.statuses {
				if st != Delivered && (!rok || s < rseq) {
					rseq, rst, rok = s, st, true
				}
			}
			if fok != rok || (rok && (fseq != rseq || fst != rst)) {
				t.Fatalf("Failure() = %d %v %v, reference %d %v %v", fseq, fst, fok, rseq, rst, rok)
			}
			if tr.Blocked() != (rok && rseq == next) {
				t.Fatalf("Blocked() = %v, reference %v", tr.Blocked(), rok && rseq == next)
			}
		}
	})
}
