//go:build integration

package exactlyonce_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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

// The source's part of every Kafka pipeline here: a consumer group member
// with a 2 s session (the CI broker allows 1 s, .ci/kafka.sh) and a
// heartbeat four times as often, so that a member stopped for a few seconds
// is evicted and its partitions move; its client id names the process and
// its start (WEIR_MEMBER), so that the group's description says which
// member is which. The map adds a field computed from the id.
const kafkaSourceYAML = `
sources:
  in:
    type: kafka
    brokers: [%[1]q]
    client_id: ${WEIR_MEMBER}
    group: %[2]s
    topics: [%[3]s]
    session_timeout: 2s
    heartbeat_interval: 500ms
    rebalance_timeout: 20s
    max_poll_records: %[4]d
transforms:
  m:
    type: map
    inputs: [in]
    set: { doubled: 'id * 2' }
checkpoint:
  commit_interval: 2s
  drain_timeout: 10s
  shutdown_timeout: 15s
metrics: { address: "127.0.0.1:0" } # its "metrics listening" line says a member runs
sinks:
`

// Each member has a transactional id of its own, stable across its
// restarts (docs/kafka.md).
const kafkaSinkYAML = `
  out:
    type: kafka
    inputs: [m]
    brokers: [%[1]q]
    topic: %[2]s
    exactly_once: true
    transactional_id: ${WEIR_TXN_ID}
    positions_topic: %[3]s
    transaction_timeout: 10s
    batch: { max_records: %[4]d, max_age: 30ms }
`

const twoSinksYAML = `
  files:
    type: file
    inputs: [m]
    path: %[1]s
    template: '{{field "k"}}/part'
    compression: gzip
    exactly_once: true
    batch: { max_records: %[3]d, max_age: 30ms }
  db:
    type: postgres
    inputs: [m]
    url: %[2]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: ev
    columns:
      - { name: id, type: bigint }
      - { name: doc, type: jsonb, value: true }
    batch: { max_records: %[3]d, max_age: 30ms }
`

// chaos is a Kafka pipeline run by two members of one group, killed,
// stopped and restarted at random while the input is produced.
type chaos struct {
	t       *testing.T
	bin     string
	cfg     string
	env     []string
	brokers []string
	cl      *kgo.Client
	in      string
	group   string
	parts   int32
	n       int
	members map[string]*proc
	starts  map[string]int // how many times each member was started
	// produced is how many records of the input are in the topic.
	produced int
	// upfront produces the whole input before the members start, and
	// onMarker makes every kill wait until the victim says it is between
	// its two steps (the unsafe variants' marker line): the unsafe variants'
	// kills must land there for the checks to have something to catch.
	upfront, onMarker bool
	markers           []string // the sink types whose markers the kills wait for, in turn
	kills, stops      int
	// evictions counts the SIGSTOP cycles during which the broker evicted
	// the stopped member: the group's description stopped listing it.
	evictions int
}

// maxStop bounds a SIGSTOP cycle, three sessions: a stopped member is let
// run again once the broker has evicted it and the other member holds
// every partition, or after this long.
const maxStop = 6 * time.Second

// newChaos prepares the pipeline; poll is the source's max_poll_records, and
// so about the size of the sinks' groups (a group takes whole poll batches).
func newChaos(t *testing.T, bin string, env []string, n, poll int, sinks func(brokers []string) string) *chaos {
	brokers := kafkatest.Brokers(t)
	c := &chaos{t: t, bin: bin, env: env, brokers: brokers, cl: kafkatest.Client(t, brokers), parts: 8, n: n, members: map[string]*proc{}, starts: map[string]int{}}
	c.in = kafkatest.CreateTopic(ctx, t, c.cl, "eo-in", c.parts)
	c.group = "weir-eo-" + filepath.Base(c.in)
	dir := t.TempDir()
	c.cfg = filepath.Join(dir, "weir.yaml")
	yaml := fmt.Sprintf(kafkaSourceYAML, brokers[0], c.group, c.in, poll) + sinks(brokers)
	if err := os.WriteFile(c.cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// produce writes the input's records up to (not including) index to, in
// order: {"id":N,"k":N%3,...}, record N in partition N%8.
func (c *chaos) produce(to int) {
	c.t.Helper()
	pad := strings.Repeat("x", 40)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for id := c.produced; id < min(to, c.n); id++ {
		wg.Add(1)
		v := fmt.Appendf(nil, `{"id":%d,"k":%d,"pad":%q}`, id, id%3, pad)
		c.cl.Produce(ctx, &kgo.Record{Topic: c.in, Partition: int32(id) % c.parts, Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		c.t.Fatalf("producing the input: %v", first)
	}
	c.produced = max(c.produced, min(to, c.n))
}

func (c *chaos) start(name string) {
	c.starts[name]++
	env := []string{"WEIR_TXN_ID=eo-" + filepath.Base(c.in) + "-" + name, "WEIR_MEMBER=" + c.clientID(name)}
	c.members[name] = startWeir(c.t, c.bin, c.cfg, name, append(env, c.env...))
}

// clientID is the client id of member name's latest start: "a-1", "a-2"...
func (c *chaos) clientID(name string) string {
	return fmt.Sprintf("%s-%d", name, c.starts[name])
}

// unsafeMarker is the line the unsafe_eos variants write between their two
// steps (sink/*/unsafe_eos_on.go), with the sink's type.
func unsafeMarker(kind string) string {
	return "unsafe_eos: " + kind + " sink: between the data and its positions"
}

// waitMarker waits, up to 30 s, for p to write one more marker line of the
// next kind of c.markers than it had, polling its log every few
// milliseconds (the variants pause 100 ms there).
func (c *chaos) waitMarker(p *proc) {
	marker := unsafeMarker(c.markers[c.kills%len(c.markers)])
	count := func() int {
		b, _ := os.ReadFile(p.Log)
		return strings.Count(string(b), marker)
	}
	n := count()
	deadline := time.Now().Add(30 * time.Second)
	for count() == n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a log file written by another process
	}
}

// committed returns how many input records the group has committed.
func (c *chaos) committed() int64 {
	adm := kadm.NewClient(c.cl)
	offs, err := adm.FetchOffsets(ctx, c.group)
	if err != nil {
		return 0
	}
	var n int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.Topic == c.in {
			n += o.At
		}
	})
	return n
}

// groupView is what the broker says of the group: its state and its
// members, by client id, each with the number of input partitions it is
// assigned.
type groupView struct {
	state   string
	members []groupMember
}

type groupMember struct {
	client string
	parts  int
}

func (g groupView) String() string {
	var b strings.Builder
	b.WriteString(g.state)
	for i, m := range g.members {
		b.WriteString([]string{": ", ", "}[min(i, 1)])
		fmt.Fprintf(&b, "%s holds %d", m.client, m.parts)
	}
	return b.String()
}

// holds reports whether the group is stable with exactly the members
// clients, in any order, each assigned some of the parts partitions and
// all of them assigned.
func (g groupView) holds(parts int32, clients ...string) bool {
	if g.state != "Stable" || len(g.members) != len(clients) {
		return false
	}
	total := 0
	for _, m := range g.members {
		if m.parts == 0 || !slices.Contains(clients, m.client) {
			return false
		}
		total += m.parts
	}
	return total == int(parts)
}

// lists reports whether client is a member of the group.
func (g groupView) lists(client string) bool { return g.partsOf(client) >= 0 }

// partsOf returns the number of input partitions member client is
// assigned, or -1 if the group does not list it.
func (g groupView) partsOf(client string) int {
	for _, m := range g.members {
		if m.client == client {
			return m.parts
		}
	}
	return -1
}

// describe asks the broker about the group.
func (c *chaos) describe() (groupView, error) {
	gs, err := kadm.NewClient(c.cl).DescribeGroups(ctx, c.group)
	if err != nil {
		return groupView{}, err
	}
	d, err := gs.On(c.group, nil)
	if err != nil {
		return groupView{}, err
	}
	g := groupView{state: d.State}
	for _, m := range d.Members {
		n := 0
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range a.Topics {
				if tp.Topic == c.in {
					n += len(tp.Partitions)
				}
			}
		}
		g.members = append(g.members, groupMember{m.ClientID, n})
	}
	return g, nil
}

// waitGroup asks the broker about the group every 100 ms until cond holds
// of what it says, or d passes, and returns the last answer and whether
// cond held.
func (c *chaos) waitGroup(d time.Duration, cond func(groupView) bool) (groupView, bool) {
	deadline := time.Now().Add(d)
	for {
		g, err := c.describe()
		if err == nil && cond(g) {
			return g, true
		}
		if err != nil {
			g.state = err.Error()
		}
		if time.Now().After(deadline) {
			return g, false
		}
		time.Sleep(100 * time.Millisecond) // polling the broker, which notifies nobody
	}
}

// stop plays one SIGSTOP cycle on member name, or on the other member if
// only that one holds partitions. The stop waits until the broker shows a
// stable group of both members as started last, the one stopped holding
// partitions: not one still joining, nor one whose last start the group
// has not seen. The member is evicted when its session expires: the
// group no longer lists it. It is let run again once the other member
// holds all the partitions (plus a random moment, so that it resumes at
// different points of the other's takeover), or after maxStop, and goes
// on as a zombie: whatever it had in flight must be fenced. stop returns
// the name of the member it stopped.
func (c *chaos) stop(name string, rng *rand.Rand) string {
	t := c.t
	ids := map[string]string{"a": c.clientID("a"), "b": c.clientID("b")}
	g, ok := c.waitGroup(time.Minute, func(g groupView) bool {
		a, b := g.partsOf(ids["a"]), g.partsOf(ids["b"])
		return g.state == "Stable" && len(g.members) == 2 && a >= 0 && b >= 0 && a+b > 0
	})
	if !ok {
		t.Fatalf("the group did not settle with members %s and %s within a minute: %v", ids["a"], ids["b"], g)
	}
	other := map[string]string{"a": "b", "b": "a"}
	if g.partsOf(ids[name]) == 0 {
		name = other[name]
	}
	victim, survivor := ids[name], ids[other[name]]
	p := c.members[name]
	_ = p.Cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	evicted := time.Duration(-1)
	g, moved := c.waitGroup(maxStop, func(g groupView) bool {
		if evicted < 0 && g.lists(survivor) && !g.lists(victim) {
			evicted = time.Since(stopped)
		}
		return g.holds(c.parts, survivor)
	})
	if moved {
		time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
	}
	_ = p.Cmd.Process.Signal(syscall.SIGCONT)
	d := time.Since(stopped).Round(time.Millisecond)
	switch {
	case evicted < 0:
		t.Logf("%s stopped for %v: the broker did not evict it; the group then %v", victim, d, g)
	case !moved:
		t.Logf("%s stopped for %v: evicted after %v; its partitions had not moved to %s: %v", victim, d, evicted.Round(time.Millisecond), survivor, g)
	default:
		t.Logf("%s stopped for %v: evicted after %v; the group then %v", victim, d, evicted.Round(time.Millisecond), g)
	}
	if evicted >= 0 {
		c.evictions++
	}
	c.stops++
	return name
}

// run starts member a, then b (a rebalance), then plays kills SIGKILLs and
// stops SIGSTOP cycles (see stop: the stopped member is evicted, its
// partitions move to the other, and it goes on as a zombie when it is let
// run again) at random members and moments while the input is produced, and
// finally lets both run until the group has committed the whole input, and
// stops them with SIGTERM. At least one SIGSTOP cycle must have evicted its
// member, or the zombies went untested.
func (c *chaos) run(kills, stops int) {
	t := c.t
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	events := make([]string, 0, kills+stops)
	for range kills {
		events = append(events, "kill")
	}
	for range stops {
		events = append(events, "stop")
	}
	rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	c.produce(c.n / 5)
	if c.upfront {
		c.produce(c.n)
	}
	c.start("a")
	weirtest.WaitFor(t, "member a to commit some of the input", 2*time.Minute, func() bool { return c.committed() > 0 })
	c.start("b")
	start := time.Now()
	for i, ev := range events {
		c.produce(c.n/5 + (c.n*7/10)*(i+1)/len(events))
		time.Sleep(200*time.Millisecond + time.Duration(rng.Int64N(int64(1300*time.Millisecond))))
		name := []string{"a", "b"}[rng.IntN(2)]
		p := c.members[name]
		switch ev {
		case "kill":
			if c.onMarker {
				c.waitMarker(p)
			}
			p.Kill()
			c.kills++
			time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
			c.start(name)
		case "stop":
			name = c.stop(name, rng)
		}
		t.Logf("%s %s at %v (%d of the input committed)", ev, name, time.Since(start).Round(time.Millisecond), c.committed())
	}
	if c.stops > 0 && c.evictions == 0 {
		t.Errorf("none of the %d SIGSTOP cycles saw the broker evict the stopped member within %v: no member ran on as a zombie, and the test checked less than it claims", c.stops, maxStop)
	}
	c.produce(c.n)
	for name, p := range c.members {
		if !p.Running() {
			t.Fatalf("member %s exited by itself: %v\n%s", name, p.Err, tail(p.Log, 30))
		}
	}
	weirtest.WaitFor(t, "the group to commit the whole input", 4*time.Minute, func() bool { return c.committed() >= int64(c.n) })
	for name, p := range c.members {
		// A member started again after the last kill may not have caught
		// signals yet when the other has committed the rest.
		weirtest.WaitRunning(t, "member "+name, p.Log, p.From)
		if err := p.Stop(t, time.Minute); err != nil {
			if c.onMarker {
				// The unsafe variants' pauses may outlast the shutdown.
				t.Logf("member %s exited with %v after SIGTERM", name, err)
				continue
			}
			t.Errorf("member %s exited with %v after SIGTERM:\n%s", name, err, tail(p.Log, 30))
		}
	}
	fenced, markers := 0, 0
	for _, p := range c.members {
		b, _ := os.ReadFile(p.Log)
		fenced += strings.Count(string(b), "fenced")
		markers += strings.Count(string(b), "unsafe_eos: ")
	}
	if c.onMarker {
		t.Logf("the unsafe variants paused between their two steps %d times", markers)
	}
	t.Logf("%d SIGKILLs, %d SIGSTOP cycles (%d evicted the member) in %v; %d log lines of fenced commits; a's summary:\n%s", c.kills, c.stops, c.evictions, time.Since(start).Round(time.Second), fenced, tail(c.members["a"].Log, 8))
}

// outputCount is what a read_committed consumer found in the output.
type outputCount struct {
	records, distinct, duplicates, missing, wrong int
}

// readOutput reads topic with a read_committed franz-go consumer: a
// non-transactional sentinel is produced to each partition first (every
// weir is stopped, so every transaction has ended), and the topic is read
// until each partition's sentinel, which comes after everything weir wrote.
func readOutput(t *testing.T, brokers []string, topic string, parts int32, n int) outputCount {
	t.Helper()
	prod := kafkatest.Client(t, brokers)
	for p := range parts {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(`{"sentinel":true}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := kafkatest.Client(t, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ids := map[int64]int{}
	var c outputCount
	done := map[int32]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for len(done) < int(parts) {
		if time.Now().After(deadline) {
			t.Fatalf("the read_committed consumer did not reach every partition's sentinel (%d of %d)", len(done), parts)
		}
		fs := cons.PollRecords(ctx, 10000)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v struct {
				ID       *int64 `json:"id"`
				Doubled  int64  `json:"doubled"`
				Sentinel bool   `json:"sentinel"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil || (v.ID == nil && !v.Sentinel) {
				c.wrong++
				return
			}
			if v.Sentinel {
				done[r.Partition] = true
				return
			}
			c.records++
			if v.Doubled != 2**v.ID {
				c.wrong++
			}
			ids[*v.ID]++
		})
	}
	for id, k := range ids {
		if k > 1 {
			c.duplicates += k - 1
		}
		if id < 0 || id >= int64(n) {
			c.wrong++
		}
	}
	c.distinct = len(ids)
	for id := range int64(n) {
		if ids[id] == 0 {
			c.missing++
		}
	}
	return c
}

// Kafka → map → exactly-once Kafka, two members, SIGKILL and SIGSTOP
// cycles and rebalances over 400k records (short in CI), then a clean run:
// a read_committed consumer finds every record once, with the mapped field.
func TestKafkaKillExactlyOnce(t *testing.T) {
	var out, positions string
	c := newChaos(t, buildWeir(t, ""), nil, size(80_000, 400_000), 1000, func(brokers []string) string {
		cl := kafkatest.Client(t, brokers)
		out = kafkatest.CreateTopic(ctx, t, cl, "eo-out", 8)
		positions = "eo-positions-" + filepath.Base(out)
		t.Cleanup(func() { kadm.NewClient(cl).DeleteTopics(ctx, positions) })
		return fmt.Sprintf(kafkaSinkYAML, brokers[0], out, positions, 1000)
	})
	c.run(size(6, 22), size(2, 4))
	got := readOutput(t, c.brokers, out, 8, c.n)
	t.Logf("the read_committed consumer: %+v", got)
	if got.missing != 0 || got.duplicates != 0 || got.wrong != 0 || got.records != c.n {
		t.Fatalf("%d records for %d ids: %d missing, %d duplicates, %d wrong; want every record exactly once", got.records, c.n, got.missing, got.duplicates, got.wrong)
	}
}

// The Kafka sink built with unsafe_eos commits a group's records in one
// transaction and its positions in the next (and waits between the two):
// the same check must find records twice.
func TestKafkaUnsafeVariantIsCaught(t *testing.T) {
	var out string
	c := newChaos(t, buildWeir(t, "unsafe_eos"), []string{"WEIR_UNSAFE_EOS=1", "WEIR_UNSAFE_EOS_PAUSE=100ms"}, 40_000, 100, func(brokers []string) string {
		cl := kafkatest.Client(t, brokers)
		out = kafkatest.CreateTopic(ctx, t, cl, "eo-out-unsafe", 8)
		positions := "eo-positions-" + filepath.Base(out)
		t.Cleanup(func() { kadm.NewClient(cl).DeleteTopics(ctx, positions) })
		return fmt.Sprintf(kafkaSinkYAML, brokers[0], out, positions, 200)
	})
	// Small groups, each with its pause, and the whole input there from the
	// start: the members are committing, and mostly pausing, at every kill.
	c.upfront, c.onMarker, c.markers = true, true, []string{"kafka"}
	c.run(4, 0)
	got := readOutput(t, c.brokers, out, 8, c.n)
	t.Logf("the read_committed consumer: %+v", got)
	if got.missing != 0 {
		t.Fatalf("%d records missing: even the unsafe variant is at-least-once", got.missing)
	}
	if got.duplicates == 0 {
		t.Fatalf("the unsafe variant wrote no duplicate over %d kills: the test cannot tell exactly-once from at-least-once", c.kills)
	}
}
