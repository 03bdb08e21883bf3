//go:build integration

package kafka_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// memberIDs returns the group's member ids, sorted, once the group is stable
// with n members.
func memberIDs(ctx context.Context, t *testing.T, adm *kadm.Client, group string, n int, procs ...*weirtest.Proc) []string {
	t.Helper()
	waitMembers(ctx, t, adm, group, n, procs...)
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range gs[group].Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	return ids
}

// waitLog polls p's log until it holds want n times.
func waitLog(ctx context.Context, t *testing.T, p *weirtest.Proc, want string, n int) {
	t.Helper()
	for {
		b, _ := os.ReadFile(p.Log)
		if strings.Count(string(b), want) >= n {
			return
		}
		select {
		case <-p.Done:
			t.Fatalf("%s exited: %v", p.Name, p.Err)
		case <-ctx.Done():
			t.Fatalf("%s's log never had %q %d times", p.Name, want, n)
		case <-time.After(50 * time.Millisecond): // polling an external process
		}
	}
}

// Two weir processes share a group. One is reloaded (SIGHUP) while records
// flow, first with only its transform changed: its Kafka source is handed
// to the new configuration and stays in the group, so the group keeps its
// members (the same member ids: no rebalance, the other process never gives
// up a partition). Then with a source setting changed: the source is
// stopped and started, and rejoins as a new member. Throughout, every
// input record reaches the output, tagged by the configuration that
// wrote it, and the group's committed offsets reach the end of the input.
func TestE2EReloadKeepsTheMember(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := weirtest.BuildTemp(t, "")
	cl := kafkatest.Client(t, brokers)
	const parts, perPart = 4, 3000
	in := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-reload-in", parts)
	out := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-reload-out", parts)
	group := "weir-e2e-" + in
	adm := kadm.NewClient(cl)
	config := func(version, maxPoll int) string {
		tr := fmt.Sprintf("transforms:\n  tag: { type: map, inputs: [in], set: { v: '%d' } }", version)
		y := fmt.Sprintf(pipelineYAML, brokers[0], group, in, out, tr, "tag")
		return strings.Replace(y, "max_poll_records: 2000", fmt.Sprintf("max_poll_records: %d", maxPoll), 1)
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	cfgA := writeConfig(t, dirA, config(1, 2000))
	a := startWeir(t, bin, cfgA, "a", nil)
	b := startWeir(t, bin, writeConfig(t, dirB, config(0, 2000)), "b", nil)
	s := &sampler{adm: adm, group: group, in: in, out: out, inParts: parts, outPart: parts}
	waitCommittedTotal := func(want int64) {
		t.Helper()
		for {
			sm, err := s.take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if total(sm.committed) == want {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("committed %v, want %d in all: %v", sm.committed, want, ctx.Err())
			case <-time.After(50 * time.Millisecond): // polling an external process
			}
		}
	}
	before := memberIDs(ctx, t, adm, group, 2, a, b)
	produce(ctx, t, cl, in, parts, perPart/3)
	waitCommittedTotal(parts * (perPart / 3))

	// Only the transform changes: the source is kept.
	writeConfig(t, dirA, config(2, 2000))
	t0 := time.Now()
	_ = a.Cmd.Process.Signal(syscall.SIGHUP)
	produceRange(ctx, t, cl, in, 0, parts, perPart/3, perPart/3)
	waitLog(ctx, t, a, "reload: the previous configuration stopped", 1)
	waitCommittedTotal(parts * 2 * (perPart / 3))
	keptTook := time.Since(t0)
	if after := memberIDs(ctx, t, adm, group, 2, a, b); !slices.Equal(after, before) {
		t.Errorf("members %v after a reload that kept the source, were %v: the group rebalanced", after, before)
	}

	// A source setting changes: the source rejoins as a new member.
	writeConfig(t, dirA, config(3, 1000))
	t0 = time.Now()
	_ = a.Cmd.Process.Signal(syscall.SIGHUP)
	produceRange(ctx, t, cl, in, 0, parts, 2*(perPart/3), perPart-2*(perPart/3))
	waitLog(ctx, t, a, "reload: the previous configuration stopped", 2)
	waitCommittedTotal(parts * perPart)
	// Figures, not checks: from the signal to the third's last commit, the
	// producing of it included.
	t.Logf("from SIGHUP to the next %d records committed: %v with the source kept, %v with it rejoining",
		parts*(perPart/3), keptTook.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	after := memberIDs(ctx, t, adm, group, 2, a, b)
	if kept := 0; true {
		for _, id := range after {
			if slices.Contains(before, id) {
				kept++
			}
		}
		if kept != 1 {
			t.Errorf("members %v after a reload that changed the source, were %v; want exactly one new member", after, before)
		}
	}

	for _, p := range []*weirtest.Proc{a, b} {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(ctx); err != nil {
			t.Fatalf("%s after SIGTERM: %v", p.Name, err)
		}
	}
	recs := consumeAll(ctx, t, brokers, out)
	seen := map[string]int{}
	versions := map[string]int{}
	for _, r := range recs {
		seen[fmt.Sprintf("%d:%d", r.src, r.srcOff)]++
		versions[fmt.Sprint(r.value["v"])]++
	}
	for p := range parts {
		for o := range perPart {
			if seen[fmt.Sprintf("%d:%d", p, o)] == 0 {
				t.Fatalf("input %d:%d is not in the output", p, o)
			}
		}
	}
	for _, v := range []string{"0", "1", "2", "3"} {
		if versions[v] == 0 {
			t.Errorf("no record written by configuration %s: %v", v, versions)
		}
	}
	t.Logf("%d records in, %d out, by configuration %v", parts*perPart, len(recs), versions)
}
