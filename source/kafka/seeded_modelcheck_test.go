//go:build modelcheck

package kafka_test

import (
	"context"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
)

// The epoch tests bite: with checkpoint.Apply's stale-epoch check switched
// off, the old epoch's late acknowledgement moves the re-assigned partition's
// watermark, and the final commit sends offset 10 for records the new epoch
// never delivered. Run with: go test -tags modelcheck -run Seeded ./source/kafka/
func TestSeededNoEpochCheckIsCaught(t *testing.T) {
	t.Cleanup(checkpoint.SeedBug("no-epoch-check"))

	t.Run("lost", func(t *testing.T) {
		_, got := lateAckScenario(t, 1, func(ctx context.Context, c *kafkaCluster, m *member) string {
			expireSession(c)
			if err := m.rec.WaitFor(ctx, "t/0 lost", func() bool { return len(m.rec.Find("lost", "t/0")) == 1 }); err != nil {
				t.Fatal(err)
			}
			return "t/0"
		})
		if got[0] != 10 {
			t.Errorf("without the epoch check, committed offset of t/0 = %d; want 10 (the stale ack applied), or the test no longer bites", got[0])
		}
	})
	t.Run("revoke", func(t *testing.T) {
		q, got := lateAckScenario(t, 2, func(ctx context.Context, c *kafkaCluster, m *member) string {
			return revokeToOther(ctx, t, c, m)
		})
		if off := got[q[len(q)-1]-'0']; off != 10 {
			t.Errorf("without the epoch check, committed offset of %s = %d; want 10 (the stale ack applied), or the test no longer bites", q, off)
		}
	})
}
