package pipeline

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/weir-etl/weir/checkpoint"
)

// TestPartProgressAgainstNaiveModel drives a partProgress through random
// chunks, outcomes in any order, rejections, commits and replays, and checks
// it against a naive model that remembers, for every position, whether the
// sink holds its record. The two rules it pins are the ones nothing may ever
// break: a replayed record is skipped only if the sink holds it, and a
// PositionKeeper never stores a position past a record it does not hold (or
// one an earlier group will not make durable first).
func TestPartProgressAgainstNaiveModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pp := newPartProgress(1, 0, true)
		var chunks []*ppChunk // every chunk accepted, in order
		// routed says, once and for all, whether the record at a position
		// goes to this sink (a filter is deterministic: a replay routes the
		// same records again).
		routed := map[checkpoint.Position]bool{}
		isRouted := func(t *rapid.T, o checkpoint.Position) bool {
			r, ok := routed[o]
			if !ok {
				r = rapid.IntRange(0, 3).Draw(t, "routed") > 0
				routed[o] = r
			}
			return r
		}
		next := checkpoint.Position(0)      // where the next batch begins
		var batchEnds []checkpoint.Position // every batch end, ascending: where commits can be
		held := map[checkpoint.Position]bool{}
		committed := checkpoint.Position(0)

		// inSink reports whether the sink holds the record at position o:
		// a delivered chunk has it, and it was not the rejected record.
		inSink := func(o checkpoint.Position) bool {
			if held[o] {
				return false
			}
			for _, c := range chunks {
				if o >= c.start && o < c.end && c.state == entryDone {
					return true
				}
			}
			return false
		}
		// mustHold checks that the sink holds every routed record it skips.
		mustHold := func(t *rapid.T, what string) {
			for o := range next + 8 {
				if pp.skips(o) && routed[o] && !inSink(o) {
					t.Fatalf("%s: position %d is skipped (below %d, ranges %v), but the sink does not hold it", what, o, pp.skipBelow(), pp.ranges)
				}
			}
		}
		pending := func() []*ppChunk {
			var out []*ppChunk
			for _, c := range chunks {
				if c.state == entryPending {
					out = append(out, c)
				}
			}
			return out
		}

		t.Repeat(map[string]func(*rapid.T){
			"accept": func(t *rapid.T) {
				// A batch of n positions; the chunk is accepted only if it
				// has a record routed to the sink.
				n := checkpoint.Position(rapid.IntRange(1, 5).Draw(t, "n"))
				start := next
				next += n
				if len(batchEnds) == 0 || batchEnds[len(batchEnds)-1] < next {
					batchEnds = append(batchEnds, next)
				}
				any := false
				for o := start; o < next; o++ {
					any = isRouted(t, o) || any
				}
				if !any {
					return
				}
				first := start
				for !routed[first] {
					first++
				}
				e := pp.accept(first, next)
				chunks = append(chunks, &ppChunk{seq: e.seq, start: start, end: next})
			},
			"deliver": func(t *rapid.T) {
				p := pending()
				if len(p) == 0 {
					t.Skip("nothing pending")
				}
				c := p[rapid.IntRange(0, len(p)-1).Draw(t, "i")]
				c.state = entryDone
				pp.resolve(c.seq, entryDone)
			},
			"fail": func(t *rapid.T) {
				p := pending()
				if len(p) == 0 {
					t.Skip("nothing pending")
				}
				c := p[rapid.IntRange(0, len(p)-1).Draw(t, "i")]
				c.state = entryFailed
				pp.resolve(c.seq, entryFailed)
			},
			"reject": func(t *rapid.T) {
				p := pending()
				if len(p) == 0 {
					t.Skip("nothing pending")
				}
				c := p[rapid.IntRange(0, len(p)-1).Draw(t, "i")]
				o := checkpoint.Position(rapid.Int64Range(int64(c.start), int64(c.end)-1).Draw(t, "offset"))
				if !routed[o] {
					t.Skip("not a record of the sink")
				}
				held[o] = true
				pp.hold(o)
			},
			"commit": func(t *rapid.T) {
				// The source commits at batch ends only what every sink
				// holds: here, a prefix of what this sink holds, past
				// rejected records only once their dead letters are durable
				// (and the rest of their chunk is delivered).
				dead := rapid.Bool().Draw(t, "dead letters durable")
				ok := func(o checkpoint.Position) bool {
					if !routed[o] || inSink(o) {
						return true
					}
					if !dead || !held[o] {
						return false
					}
					held[o] = false
					defer func() { held[o] = true }()
					return inSink(o)
				}
				c := committed
				for c < next && ok(c) {
					c++
				}
				var can []checkpoint.Position
				for _, e := range batchEnds {
					if e > committed && e <= c {
						can = append(can, e)
					}
				}
				if len(can) == 0 {
					t.Skip("no batch end to commit")
				}
				committed = rapid.SampledFrom(can).Draw(t, "to")
				for o := range held {
					if o < committed {
						delete(held, o)
					}
				}
				pp.release(committed)
			},
			"replay": func(t *rapid.T) {
				// A rewind: the sink settles every entry first, then the
				// source starts again at its watermark (here: committed),
				// and the sink skips what it holds.
				for _, c := range pending() {
					st := entryDone
					if rapid.Bool().Draw(t, "fails") {
						st = entryFailed
					}
					c.state = st
					pp.resolve(c.seq, st)
				}
				if !pp.settled() {
					t.Fatal("settled() is false with every entry resolved")
				}
				pp.restart()
				below := pp.skipBelow()
				mustHold(t, "after a replay")
				// The replay brings every batch from the watermark again;
				// batches wholly below the skip position are skipped.
				next = committed
				for next < below {
					next++
				}
			},
			"keep": func(t *rapid.T) {
				// A group made of pending chunks up to the last one is about
				// to be stored: every routed record below the position given
				// must be held, or be in a pending chunk (an earlier group,
				// persisted first, or this one), and must not be rejected.
				p := pending()
				if len(p) == 0 {
					t.Skip("nothing pending")
				}
				end := p[len(p)-1].end
				got := pp.keepPosition(end)
				if got > end {
					t.Fatalf("keepPosition(%d) = %d, past the group's end", end, got)
				}
				for o := checkpoint.Position(0); o < got; o++ {
					if !routed[o] || inSink(o) {
						continue
					}
					ok := !held[o]
					if ok {
						ok = false
						for _, c := range p {
							ok = ok || (o >= c.start && o < c.end)
						}
					}
					if !ok {
						t.Fatalf("keepPosition(%d) = %d passes position %d, which the sink will not hold", end, got, o)
					}
				}
			},
			"": func(t *rapid.T) {
				mustHold(t, "invariant")
			},
		})
	})
}

// ppChunk is the naive model's chunk: a batch's positions [start, end),
// some of them routed to the sink, and the outcome of its entry.
type ppChunk struct {
	seq        uint64
	start, end checkpoint.Position
	state      entryState
}
