//go:build integration

package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// startWeir starts `weir run -c cfg` with args after it and env added to
// its environment, as name: its log is name.log beside cfg, created afresh,
// and its last 40 lines are logged when the test has failed (the failures
// here do not show it themselves).
func startWeir(t *testing.T, bin, cfg, name string, env []string, args ...string) *weirtest.Proc {
	t.Helper()
	logPath := filepath.Join(filepath.Dir(cfg), name+".log")
	if err := os.Remove(logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	// Registered before Start's cleanup, this runs after it: the log is
	// shown once the process is gone.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, weirtest.Tail(logPath, 40))
		}
	})
	return weirtest.Start(t, bin, logPath, env, append([]string{"run", "-c", cfg}, args...)...)
}

// produce writes perPart records to each partition of topic, with JSON
// values {"id":"<partition>:<offset>","n":<offset>,"pad":...} of about 100
// bytes. The topic is fresh, so the id names the record's offset.
func produce(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, parts int32, perPart int) {
	t.Helper()
	produceRange(ctx, t, cl, topic, 0, parts, 0, perPart)
}

// produceRange writes n records to each of the partitions from..to-1 of
// topic, as produce does, with offsets (and ids) from first on: the
// partitions must hold exactly first records already.
func produceRange(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, from, to int32, first, n int) {
	t.Helper()
	pad := strings.Repeat("x", 60)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := first; i < first+n; i++ {
		for p := from; p < to; p++ {
			wg.Add(1)
			v := fmt.Appendf(nil, `{"id":"%d:%d","n":%d,"pad":"%s"}`, p, i, i, pad)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: v}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("producing: %v", firstErr)
	}
}

// outRec is one record of the output topic.
type outRec struct {
	part   int32
	offset int64
	src    int32 // the input partition and offset it came from
	srcOff int64
	value  map[string]any
}

// consumeAll reads every record of topic up to its current end offsets.
func consumeAll(ctx context.Context, t *testing.T, brokers []string, topic string) []outRec {
	t.Helper()
	adm := kadm.NewClient(kafkatest.Client(t, brokers))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []outRec
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %d of %d records: %v", topic, len(out), want, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("reading %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			var v map[string]any
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("output record %q: %v", r.Value, err)
			}
			o := outRec{part: r.Partition, offset: r.Offset, value: v}
			id, _ := v["id"].(string)
			if _, err := fmt.Sscanf(id, "%d:%d", &o.src, &o.srcOff); err != nil {
				t.Fatalf("output record %q has no id: %v", r.Value, err)
			}
			out = append(out, o)
		})
	}
	return out
}

// sample is the group's committed offsets of the input, then the output's
// end offsets, read in that order: every record that was durable in the
// output when the committed offsets were read is below the end offsets.
type sample struct {
	at        time.Time
	committed []int64 // by input partition; -1 for none
	outEnd    []int64 // by output partition
}

type sampler struct {
	adm              *kadm.Client
	group, in, out   string
	inParts, outPart int32
}

func (s *sampler) take(ctx context.Context) (sample, error) {
	sm := sample{at: time.Now(), committed: make([]int64, s.inParts), outEnd: make([]int64, s.outPart)}
	offs, err := s.adm.FetchOffsets(ctx, s.group)
	if err != nil && !errors.Is(err, context.Canceled) {
		// The group may not exist yet: nothing committed.
		offs = nil
	}
	for p := range sm.committed {
		sm.committed[p] = -1
		if o, ok := offs.Lookup(s.in, int32(p)); ok && o.Err == nil {
			sm.committed[p] = o.At
		}
	}
	ends, err := s.adm.ListEndOffsets(ctx, s.out)
	if err != nil {
		return sm, err
	}
	if err := ends.Error(); err != nil {
		return sm, err
	}
	ends.Each(func(o kadm.ListedOffset) { sm.outEnd[o.Partition] = o.Offset })
	return sm, nil
}

func total(c []int64) int64 {
	var n int64
	for _, x := range c {
		n += max(x, 0)
	}
	return n
}

func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const pipelineYAML = `
sources:
  in:
    type: kafka
    brokers: [%[1]q]
    group: %[2]s
    topics: [%[3]s]
    session_timeout: 6s
    rebalance_timeout: 20s
    max_poll_records: 2000
%[5]s
sinks:
  out:
    type: kafka
    inputs: [%[6]s]
    brokers: [%[1]q]
    topic: %[4]s
    compression: none
    batch: { max_records: 5000, max_age: 50ms }
checkpoint:
  commit_interval: 100ms
  drain_timeout: 10s
  shutdown_timeout: 15s
metrics:
  address: "off"
`

// Three weir processes share a consumer group reading a 12-partition topic of
// 240,000 records and writing them to another topic. Mid-run one is killed
// (SIGKILL), a fourth joins, and another stops gracefully (SIGTERM); the
// group's committed offsets reach the end of every partition.
//
// Checked:
//   - every input record is in the output at least once;
//   - the group's committed offsets never regress between samples;
//   - for every sample of the committed offsets taken during the run, every
//     input record below a committed offset was already in the output: the
//     output's end offsets read right after the committed offsets cover an
//     occurrence of it. This is the promise itself, checked at the moments
//     sampled (every ~50ms), not only at the end;
//   - duplicates come only from the killed process: each duplicated record
//     is at or after its partition's committed offset sampled just before the
//     kill, and was in the output by the sample taken 2s after it (before
//     anyone can take the killed process's partitions over);
//   - the gracefully stopped process exits 0.
func TestE2EGroupKillJoinStop(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := weirtest.BuildTemp(t, "")
	cl := kafkatest.Client(t, brokers)
	const parts, perPart = 12, 20000
	in := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-in", parts)
	out := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-out", parts)
	group := "weir-e2e-" + in
	produce(ctx, t, cl, in, parts, perPart)

	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(pipelineYAML, brokers[0], group, in, out, "", "in"))
	s := &sampler{adm: kadm.NewClient(cl), group: group, in: in, out: out, inParts: parts, outPart: parts}
	var samples []sample
	takeSample := func() sample {
		sm, err := s.take(ctx)
		if err != nil {
			t.Fatalf("sampling offsets: %v", err)
		}
		samples = append(samples, sm)
		return sm
	}

	procs := []*weirtest.Proc{startWeir(t, bin, cfg, "w1", nil), startWeir(t, bin, cfg, "w2", nil), startWeir(t, bin, cfg, "w3", nil)}
	const all = parts * perPart
	var preKill, postKill sample
	killed, joined, stopped := false, false, false
	for {
		sm := takeSample()
		done := total(sm.committed)
		if !killed && done >= all/5 {
			preKill = sm
			procs[0].Kill()
			// The broker may still append what the killed process had
			// sent (its last produce requests, read off the socket after
			// the process died): the sample that counts what was written
			// but uncommitted at the kill waits for them. Nobody takes
			// w1's partitions over before session_timeout (6s).
			time.Sleep(2 * time.Second)
			postKill = takeSample()
			killed = true
			// w2 and w3 may commit the rest before w4 catches signals:
			// the SIGTERMs wait until it runs.
			procs = append(procs, startWeir(t, bin, cfg, "w4", nil, "--set", "metrics.address=127.0.0.1:0"))
			weirtest.WaitRunning(t, "w4", procs[3].Log, 0)
			joined = true
			t.Logf("w1 killed at %d of %d committed; w4 started", done, all)
		}
		if joined && !stopped && done >= all/2 {
			_ = procs[1].Cmd.Process.Signal(syscall.SIGTERM)
			stopped = true
			t.Logf("w2 stopped (SIGTERM) at %d of %d committed", done, all)
		}
		if done == all && stopped {
			break
		}
		for _, p := range procs[1:] {
			select {
			case <-p.Done:
				if p != procs[1] || !stopped {
					t.Fatalf("%s exited early: %v", p.Name, p.Err)
				}
			default:
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("committed %d of %d records: %v; last sample %v", done, all, ctx.Err(), sm.committed)
		case <-time.After(50 * time.Millisecond): // sampling an external process
		}
	}
	if err := procs[1].Wait(ctx); err != nil {
		t.Errorf("w2 after SIGTERM: %v, want exit code 0", err)
	}
	for _, p := range procs[2:] {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(ctx); err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit code 0", p.Name, err)
		}
	}
	final := takeSample()
	for p, c := range final.committed {
		if c != perPart {
			t.Errorf("partition %d committed %d, want %d", p, c, perPart)
		}
	}

	recs := consumeAll(ctx, t, brokers, out)
	checkOutput(t, recs, samples, preKill, postKill, parts, perPart)
}

// checkOutput checks recs, the output, against the samples taken during the
// run (see TestE2EGroupKillJoinStop).
func checkOutput(t *testing.T, recs []outRec, samples []sample, preKill, postKill sample, parts int32, perPart int) {
	t.Helper()
	// firstSeen[p][o] is the index of the first sample whose output end
	// offsets cover an occurrence of input record (p, o).
	firstSeen := make([][]int, parts)
	count := make([][]int, parts)
	for p := range firstSeen {
		firstSeen[p] = make([]int, perPart)
		count[p] = make([]int, perPart)
		for o := range firstSeen[p] {
			firstSeen[p][o] = len(samples)
		}
	}
	for _, r := range recs {
		if r.src < 0 || r.src >= parts || r.srcOff < 0 || r.srcOff >= int64(perPart) {
			t.Fatalf("output record from unknown input %d:%d", r.src, r.srcOff)
		}
		count[r.src][r.srcOff]++
		// End offsets only grow, so the first covering sample is found by
		// binary search.
		i, _ := slices.BinarySearchFunc(samples, r, func(s sample, r outRec) int {
			if s.outEnd[r.part] > r.offset {
				return 1
			}
			return -1
		})
		firstSeen[r.src][r.srcOff] = min(firstSeen[r.src][r.srcOff], i)
	}
	dups := 0
	for p := range count {
		for o, n := range count[p] {
			if n == 0 {
				t.Errorf("input record %d:%d is missing from the output", p, o)
			}
			if n > 1 {
				dups += n - 1
				if int64(o) < preKill.committed[p] {
					t.Errorf("input record %d:%d written %d times, but it was committed (%d) before the kill", p, o, n, preKill.committed[p])
				}
			}
		}
	}
	// Committed offsets never regress, and never pass a record that was not
	// in the output when they were read.
	for i, s := range samples {
		for p, c := range s.committed {
			if i > 0 && c < samples[i-1].committed[p] {
				t.Errorf("partition %d: committed offset went from %d to %d", p, samples[i-1].committed[p], c)
			}
			worst := -1
			for o := int64(0); o < c; o++ {
				if firstSeen[p][o] > i {
					worst = int(o)
					break
				}
			}
			if worst >= 0 {
				t.Errorf("sample %d: partition %d committed %d while record %d was not in the output", i, p, c, worst)
				return
			}
		}
	}
	post := slices.IndexFunc(samples, func(s sample) bool { return s.at.Equal(postKill.at) })
	inFlight := 0
	for p := range count {
		for o := max(preKill.committed[p], 0); o < int64(perPart); o++ {
			if firstSeen[p][o] <= post {
				inFlight++
			}
		}
	}
	t.Logf("%d records, %d output records, %d duplicates; written but uncommitted at the kill: %d; %d samples",
		int(parts)*perPart, len(recs), dups, inFlight, len(samples))
	if dups > inFlight {
		t.Errorf("%d duplicates, more than the %d records written but not committed when the process was killed", dups, inFlight)
	}
}

// Kafka → filter → map → Kafka through the binary: the output holds exactly
// the records the filter keeps, with the map's field, and the group commits to
// the end of the input (records the filter drops count as delivered).
func TestE2EFilterMap(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := weirtest.BuildTemp(t, "")
	cl := kafkatest.Client(t, brokers)
	const parts, perPart = 4, 5000
	in := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-fm-in", parts)
	out := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-fm-out", parts)
	group := "weir-e2e-" + in
	produce(ctx, t, cl, in, parts, perPart)
	transforms := `transforms:
  keep:
    type: filter
    inputs: [in]
    condition: 'n % 3 == 0'
  tag:
    type: map
    inputs: [keep]
    set:
      tripled: n * 3
    delete: [pad]`
	cfg := writeConfig(t, t.TempDir(), fmt.Sprintf(pipelineYAML, brokers[0], group, in, out, transforms, "tag"))
	p := startWeir(t, bin, cfg, "w", nil)
	s := &sampler{adm: kadm.NewClient(cl), group: group, in: in, out: out, inParts: parts, outPart: parts}
	for {
		sm, err := s.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if total(sm.committed) == parts*perPart {
			break
		}
		select {
		case <-p.Done:
			t.Fatalf("weir exited: %v", p.Err)
		case <-ctx.Done():
			t.Fatalf("committed %v: %v", sm.committed, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling an external process
		}
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("weir after SIGTERM: %v", err)
	}
	recs := consumeAll(ctx, t, brokers, out)
	seen := map[string]int{}
	for _, r := range recs {
		if r.srcOff%3 != 0 {
			t.Fatalf("record %d:%d passed the filter", r.src, r.srcOff)
		}
		want, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%d:%d", r.src, r.srcOff), "n": r.srcOff, "tripled": r.srcOff * 3})
		got, _ := json.Marshal(r.value)
		if !bytes.Equal(got, want) {
			t.Fatalf("output %s, want %s", got, want)
		}
		seen[fmt.Sprintf("%d:%d", r.src, r.srcOff)]++
	}
	if want := parts * ((perPart + 2) / 3); len(seen) != want {
		t.Fatalf("%d distinct records out, want %d", len(seen), want)
	}
}
