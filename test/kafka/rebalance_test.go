//go:build integration

package kafka_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// Partitions that stay empty during a rebalance: a 12-partition topic has
// data in partitions 0-5 only when w1 reads it alone; w2 joins and the group
// hands it partitions, the empty ones among them, while they are still empty.
// Then data arrives in every partition. Asked of the broker (kadm) while both
// processes run: every partition's committed offset reaches its end; then
// both stop cleanly and the output holds every input record.
//
// Before the fix of the source's bookkeeping, w1's revoke of partitions it
// had never read from took the runtime id 0 away from the partition that
// really had it: w1 went on reading that partition but its commits were
// dropped without a word, and its committed offset stayed behind.
func TestE2EEmptyPartitionsRebalance(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := weirtest.BuildTemp(t, "")
	cl := kafkatest.Client(t, brokers)
	const parts, data, wave = 12, 6, 2000
	in := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-empty-in", parts)
	out := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-empty-out", parts)
	group := "weir-e2e-" + in
	produceRange(ctx, t, cl, in, 0, data, 0, wave)

	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(pipelineYAML, brokers[0], group, in, out, "", "in"))
	adm := kadm.NewClient(cl)
	w1 := startWeir(t, bin, cfg, "w1", nil)
	waitCommittedEnds(ctx, t, adm, group, in, parts, w1)

	w2 := startWeir(t, bin, cfg, "w2", nil)
	waitMembers(ctx, t, adm, group, 2, w1, w2)

	// Data for every partition: more for 0-5, the first for 6-11.
	produceRange(ctx, t, cl, in, 0, data, wave, wave)
	produceRange(ctx, t, cl, in, data, parts, 0, wave)
	waitCommittedEnds(ctx, t, adm, group, in, parts, w1, w2)

	for _, p := range []*weirtest.Proc{w1, w2} {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(ctx); err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit code 0", p.Name, err)
		}
	}
	seen := make([]map[int64]bool, parts)
	for p := range seen {
		seen[p] = map[int64]bool{}
	}
	for _, r := range consumeAll(ctx, t, brokers, out) {
		seen[r.src][r.srcOff] = true
	}
	for p := range int32(parts) {
		want := wave
		if p < data {
			want = 2 * wave
		}
		if len(seen[p]) != want {
			t.Errorf("input partition %d: %d distinct records in the output, want %d", p, len(seen[p]), want)
		}
	}
}

// waitCommittedEnds polls the broker until the group's committed offset of
// every partition of topic equals the partition's end offset, failing the
// test if a process in procs exits meanwhile or the offsets do not get there
// within a minute.
func waitCommittedEnds(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string, parts int32, procs ...*weirtest.Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	committed, ends := make([]int64, parts), make([]int64, parts)
	for {
		listed, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			t.Fatalf("end offsets of %s: %v", topic, err)
		}
		listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		offs, err := adm.FetchOffsets(ctx, group)
		done := err == nil
		for p := range committed {
			committed[p] = -1
			if o, ok := offs.Lookup(topic, int32(p)); err == nil && ok && o.Err == nil {
				committed[p] = o.At
			}
			// An empty partition has nothing to commit.
			done = done && (committed[p] == ends[p] || ends[p] == 0 && committed[p] == -1)
		}
		if done {
			return
		}
		for _, p := range procs {
			select {
			case <-p.Done:
				t.Fatalf("%s exited: %v", p.Name, p.Err)
			default:
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("committed offsets %v never reached the ends %v", committed, ends)
		case <-time.After(50 * time.Millisecond): // polling an external process
		}
	}
}

// waitMembers polls the broker until the group is stable with n members,
// each assigned partitions.
func waitMembers(ctx context.Context, t *testing.T, adm *kadm.Client, group string, n int, procs ...*weirtest.Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	last := "not described"
	for {
		gs, err := adm.DescribeGroups(ctx, group)
		if err == nil {
			g := gs[group]
			last = fmt.Sprintf("%s, %d members", g.State, len(g.Members))
			ok := g.Err == nil && g.State == "Stable" && len(g.Members) == n
			for _, m := range g.Members {
				if ca, _ := m.Assigned.AsConsumer(); ca == nil || len(ca.Topics) == 0 {
					ok = false
				}
			}
			if ok {
				return
			}
		}
		for _, p := range procs {
			select {
			case <-p.Done:
				t.Fatalf("%s exited: %v", p.Name, p.Err)
			default:
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s not stable with %d members: %s", group, n, last)
		case <-time.After(50 * time.Millisecond): // polling an external process
		}
	}
}
