//go:build integration

package fleet_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// A directory of three pipelines: Kafka → file, file → file (edited 20
// times under load) and generate → blackhole. The Kafka pipeline never
// restarts: one run, the same group member all along (no rebalance: its
// member id and assignment do not change), every record in its output.
// The edited one loses nothing, with duplicates at most what was in flight.
// It skips without WEIR_KAFKA_BROKERS.
func TestE2EKafkaPipelineUntouchedByAnEdit(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := weirtest.BuildTemp(t, "")
	cl := kafkatest.Client(t, brokers)
	const parts = 4
	topic := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-fleet", parts)
	group := "weir-e2e-fleet-" + topic
	adm := kadm.NewClient(cl)
	sent := 0
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"n":%d}`, sent)})
			sent++
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}

	root := t.TempDir()
	dir := filepath.Join(root, "pipelines")
	edited, kout := filepath.Join(root, "edited"), filepath.Join(root, "kafka-out")
	mkdirs(t, dir, filepath.Join(edited, "in"))
	ea := &appender{path: filepath.Join(edited, "in", "a.ndjson")}
	ea.add(t, 500)
	produce(1000)
	kafkaYAML := fmt.Sprintf(`sources:
  in:
    type: kafka
    brokers: [%q]
    group: %s
    topics: [%s]
    start_from: earliest
    session_timeout: 6s
    rebalance_timeout: 20s
sinks:
  out:
    type: file
    inputs: [in]
    path: %s
    format: ndjson
    compression: none
    batch: { max_records: 500, max_age: 50ms }
checkpoint: { commit_interval: 100ms }
`, brokers[0], group, topic, kout)
	writeFile(t, filepath.Join(dir, "kafka.yaml"), kafkaYAML)
	writeFile(t, filepath.Join(dir, "edited.yaml"), tailYAML(edited, "0"))
	writeFile(t, filepath.Join(dir, "gen.yaml"), generateYAML)
	w := start(t, bin, freeAddr(t, "127.0.0.1"), nil, "-d", dir, "--watch")

	members := func() ([]string, string) {
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return nil, err.Error()
		}
		g := gs[group]
		var ids []string
		for _, m := range g.Members {
			ca, _ := m.Assigned.AsConsumer()
			n := 0
			if ca != nil {
				for _, tp := range ca.Topics {
					n += len(tp.Partitions)
				}
			}
			ids = append(ids, fmt.Sprintf("%s:%d", m.MemberID, n))
		}
		slices.Sort(ids)
		return ids, g.State
	}
	var before []string
	weirtest.WaitFor(t, "the Kafka pipeline's member stable with every partition", 2*time.Minute, func() bool {
		ids, state := members()
		before = ids
		return state == "Stable" && len(ids) == 1 && strings.HasSuffix(ids[0], fmt.Sprintf(":%d", parts))
	})
	const edits = 20
	for i := 1; i <= edits; i++ {
		ea.add(t, 200)
		produce(200)
		writeFile(t, filepath.Join(dir, "edited.yaml"), tailYAML(edited, fmt.Sprint(i)))
		weirtest.WaitFor(t, fmt.Sprintf("reload %d", i), time.Minute, func() bool {
			p := w.pipelines(t, "")["edited"]
			return p.Reloads == i && p.State == "running"
		})
		if ids, state := members(); !slices.Equal(ids, before) || state != "Stable" {
			t.Fatalf("after edit %d of another pipeline the group is %s with %v, was %v: the Kafka pipeline rejoined", i, state, ids, before)
		}
	}
	ea.add(t, 500)
	produce(500)
	checkDelivered(t, "edited", ea, filepath.Join(edited, "out"), 4*50)
	ka := &appender{n: sent}
	checkDelivered(t, "kafka", ka, kout, 0)
	for _, n := range []string{"kafka", "gen"} {
		if p := w.pipelines(t, "")[n]; p.Runs != 1 || p.Reloads != 0 || p.State != "running" {
			t.Errorf("%s: %d runs, %d reloads, %s; want one run, never restarted", n, p.Runs, p.Reloads, p.State)
		}
	}
	if strings.Count(w.stderr.String(), "pipeline=kafka") > 0 && strings.Contains(w.stderr.String(), `msg="shutting down" pipeline=kafka`) {
		t.Error("the Kafka pipeline shut down during the edits")
	}
	if v, ok := w.metric(t, `weir_pipeline_reloads_total{pipeline="kafka"}`); !ok || v != 0 {
		t.Errorf("weir_pipeline_reloads_total of kafka: %v (exported: %v), want 0", v, ok)
	}
	if v, ok := w.metricPrefix(t, `weir_records_out_total{pipeline="kafka",component="out"}`); !ok || v != float64(sent) {
		t.Errorf("the Kafka pipeline's sink wrote %v records, want %d", v, sent)
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	if w.err != nil {
		t.Fatalf("weir exited: %v", w.err)
	}
}
