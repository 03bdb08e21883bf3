package pipeline

import (
	"log/slog"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

// Guarantee: a checkpointer goroutine's wait is stamped and aged with the
// runtime's one clock, so /debug/stalls reports a commit that does not
// answer with the age the clock says: the wait is listed once it passes
// cpWaitListed, and not before, without the test waiting in real time.
func TestCheckpointerWaitAgedByTheRuntimeClock(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rt := &runtime{log: slog.New(slog.DiscardHandler), m: newMetrics(), now: func() time.Time { return now }, g: &graph{}}
	rt.g.spec.Checkpoint.StallWarning = time.Minute
	rt.g.spec.Checkpoint.CommitTimeout = 30 * time.Second
	s := newSourceRunner(rt, 0, SourceSpec{Name: "s"})
	rt.sources = []*sourceRunner{s}
	p := s.Assign("p", 0)

	s.cpw.commitBegin([]checkpoint.Commit{{Partition: p, Position: 7}})
	now = now.Add(cpWaitListed(time.Minute) - time.Millisecond)
	if got := rt.checkpointerStalls(nil); len(got) != 0 {
		t.Fatalf("a wait younger than %v is listed: %+v", cpWaitListed(time.Minute), got)
	}
	now = now.Add(90 * time.Second)
	got := rt.checkpointerStalls(nil)
	if len(got) != 1 {
		t.Fatalf("want the commit's wait listed, got %+v", got)
	}
	want := (cpWaitListed(time.Minute) - time.Millisecond + 90*time.Second).Milliseconds()
	if got[0].AgeMillis != want || got[0].Status != "commit_waiting" || got[0].Source != "s" {
		t.Fatalf("got %+v, want age %d ms, status commit_waiting, source s", got[0], want)
	}
	// The wait ends: nothing is listed, whatever the clock says.
	s.cpw.commitEnd(nil)
	now = now.Add(time.Hour)
	if got := rt.checkpointerStalls(nil); len(got) != 0 {
		t.Fatalf("after the commit answered: %+v", got)
	}
}
