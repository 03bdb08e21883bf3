//go:build modelcheck

package checkpoint

import (
	"strings"
	"testing"

	"github.com/weir-etl/weir/internal/modelcheck"
)

// mcSeeded is the catalogue of seeded bugs (seeded_on.go), each with the model
// that must catch it. The models pass the real code (modelcheck_test.go); this
// shows they would not pass wrong code, so a green run means something.
var mcSeeded = []struct {
	bug   seededBugID
	name  string
	model func(*modelcheck.Model)
}{
	{bugDecLoadStore, "decrement as load then store", mcCloneRelease(Failed, Rejected, Delivered)},
	{bugOrAfterDec, "status merged after the decrement", mcCloneRelease(Failed, Rejected, Delivered)},
	{bugStatusOverwrite, "status overwritten, not merged", mcCloneRelease(Failed, Rejected, Delivered)},
	{bugSignalBeforeLink, "wake signalled before the node is linked", mcWake},
	{bugNoEpochCheck, "stale-epoch check omitted", mcRevoke},
	{bugAdvanceOnFailed, "watermark advanced past a failed batch", mcWatermark},
	{bugMergeDropsRefs, "AckSet.Merge drops references", mcAckSet(Failed)},
}

// TestModelSeededBugs switches each seeded bug on in turn and requires the
// explorer to find a failing schedule within the models' preemption bound, and
// the failure's token to replay the same failure.
func TestModelSeededBugs(t *testing.T) {
	covered := map[seededBugID]bool{}
	for _, sb := range mcSeeded {
		covered[sb.bug] = true
		t.Run(strings.ReplaceAll(sb.name, " ", "_"), func(t *testing.T) {
			seeded.Store(uint32(sb.bug))
			defer seeded.Store(uint32(bugNone))
			res := modelcheck.Explore(mcConfig, sb.model)
			f := res.Failure
			if f == nil {
				t.Fatalf("seeded bug %q not found: %v", sb.name, res)
			}
			if strings.Contains(f.Msg, "not deterministic") || strings.Contains(f.Msg, "replay token") {
				t.Fatalf("seeded bug %q: the explorer failed, not the model: %v", sb.name, f)
			}
			msg, _, _ := strings.Cut(f.Msg, "\n")
			t.Logf("found after %d schedules (%v), token %s: %s", f.Schedule, res.Elapsed.Round(1e6), f.Token, msg)
			rep := modelcheck.Explore(modelcheck.Config{Replay: f.Token}, sb.model)
			if rep.Failure == nil || rep.Failure.Msg != f.Msg {
				t.Fatalf("replaying %s did not reproduce %q: %v", f.Token, msg, rep.Failure)
			}
		})
	}
	for b := bugNone + 1; b < numSeededBugs; b++ {
		if !covered[b] {
			t.Errorf("seeded bug %d has no model in the catalogue", b)
		}
	}
}
