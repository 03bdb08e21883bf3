package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
)

// readCommitted reads every partition of topic from its start to its last
// stable offset with isolation level read_committed, as a consumer of the
// output that asks for committed records does, and returns the values.
func readCommitted(ctx context.Context, t testing.TB, cl *kgo.Client, topic string) [][]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	meta, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	var out [][]byte
	for _, tm := range meta.Topics {
		if err := kerr.ErrorForCode(tm.ErrorCode); err != nil {
			if err == kerr.UnknownTopicOrPartition {
				return nil
			}
			t.Fatalf("metadata of %s: %v", topic, err)
		}
		for _, pm := range tm.Partitions {
			offset := int64(0)
			lso, since := int64(-1), time.Now()
			for try := 0; ; try++ {
				if try > 3000 {
					t.Fatalf("reading %s/%d: no end in sight", topic, pm.Partition)
				}
				freq := kmsg.NewPtrFetchRequest()
				freq.MaxWaitMillis, freq.MinBytes, freq.IsolationLevel = 10, 1, 1
				ft := kmsg.NewFetchRequestTopic()
				ft.Topic, ft.TopicID = topic, tm.TopicID
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.FetchOffset, fp.CurrentLeaderEpoch, fp.LogStartOffset, fp.PartitionMaxBytes = pm.Partition, offset, -1, -1, 8<<20
				ft.Partitions = append(ft.Partitions, fp)
				freq.Topics = append(freq.Topics, ft)
				kresp, err := cl.Broker(int(pm.Leader)).Request(ctx, freq)
				if err != nil {
					t.Fatalf("fetching %s/%d: %v", topic, pm.Partition, err)
				}
				rp := &kresp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
				part, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: pm.Partition}, rp, kgo.DefaultDecompressor(), nil)
				if part.Err != nil {
					t.Fatalf("fetching %s/%d: %v", topic, pm.Partition, part.Err)
				}
				for _, r := range part.Records {
					out = append(out, r.Value)
				}
				offset = max(offset, next)
				// Done once no transaction is open (a commit's markers reach
				// the partitions a moment after EndTxn returned) and every
				// record before the end was read; or, with a transaction
				// still open (the next group's, produced while this one
				// committed), once everything before it was read and the
				// last stable offset has stayed there a while.
				if part.LastStableOffset == part.HighWatermark && offset >= part.HighWatermark {
					break
				}
				if part.LastStableOffset != lso {
					lso, since = part.LastStableOffset, time.Now()
				} else if offset >= lso && time.Since(since) > 300*time.Millisecond {
					break
				}
			}
		}
	}
	return out
}

// eosCluster is a fake cluster for the exactly-once tests: each destination
// is an output topic of three partitions, with its own positions topic.
type eosCluster struct {
	c       *kfake.Cluster
	brokers []string
	admin   *kgo.Client
	mu      sync.Mutex
	n       int
	topics  map[connector.Sink][2]string // output and positions topic
	ids     atomic.Int64
	// partitions of each output topic: 3, or 1 where order is checked.
	partitions int32
}

func newEOSCluster(t *testing.T) *eosCluster {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return newEOSClusterAt(t, c.ListenAddrs(), c)
}

func newEOSClusterAt(t *testing.T, brokers []string, c *kfake.Cluster) *eosCluster {
	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return &eosCluster{c: c, brokers: brokers, admin: admin, topics: map[connector.Sink][2]string{}, partitions: 3}
}

// build returns a Keeper over the output and positions topics, with the
// transactional id id.
func (ec *eosCluster) build(t *testing.T, topics [2]string, id string) connector.Sink {
	t.Helper()
	cfg := NewConfig()
	cfg.Brokers = ec.brokers
	cfg.Topic = topics[0]
	cfg.PositionsTopic = topics[1]
	cfg.ExactlyOnce = true
	cfg.TransactionalID = id
	cfg.DeliveryTimeout = 30 * time.Second
	cfg.TransactionTimeout = 10 * time.Second
	s, err := Build("out", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.(*Keeper).setLogger(slog.New(slog.DiscardHandler))
	ec.mu.Lock()
	ec.topics[s] = topics
	ec.mu.Unlock()
	return s
}

func (ec *eosCluster) topicsOf(s connector.Sink) [2]string {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return ec.topics[s]
}

func (ec *eosCluster) harness(t *testing.T, prefix string) conformance.ExactlyOnceHarness {
	return conformance.ExactlyOnceHarness{
		New: func(t *testing.T) connector.Sink {
			ec.mu.Lock()
			ec.n++
			n := ec.n
			ec.mu.Unlock()
			topics := [2]string{fmt.Sprintf("%s-out-%d", prefix, n), fmt.Sprintf("%s-positions-%d", prefix, n)}
			createTopic(t, ec.admin, topics[0], ec.partitions)
			return ec.build(t, topics, fmt.Sprintf("%s-txn-%d", prefix, n))
		},
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			return ec.build(t, ec.topicsOf(s), s.(*Keeper).cfg.TransactionalID)
		},
		Another: func(t *testing.T, s connector.Sink) connector.Sink {
			return ec.build(t, ec.topicsOf(s), fmt.Sprintf("%s-other-%d", s.(*Keeper).cfg.TransactionalID, ec.ids.Add(1)))
		},
		// A dead process's connections close; its open transaction stays
		// until its timeout or the next producer with its id.
		Crash: func(t *testing.T, s connector.Sink) { s.(*Keeper).closeAll() },
		Held: func(t *testing.T, s connector.Sink) [][]byte {
			return readCommitted(context.Background(), t, ec.admin, ec.topicsOf(s)[0])
		},
		CrashPoints: func(s connector.Sink, step func(string)) { s.(*Keeper).step.Store(&step) },
	}
}

func createTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// The exactly-once sink passes the exactly-once suite against a fake
// cluster: crashed at every step of its transaction, it keeps records and
// positions together for read_committed consumers, and the positions log
// fences a second writer of the same source partitions.
func TestExactlyOnceConforms(t *testing.T) {
	conformance.TestExactlyOnce(t, eosClusterFor(t).harness(t, fmt.Sprintf("conf-%d", time.Now().UnixNano())))
}

// TestExactlyOnceBroken runs the suite against the sink broken by
// unsafe_eos_on.go (records and positions in two transactions); it fails by
// design, so it runs only in the child process of
// TestExactlyOnceCatchesSplitTransactions.
func TestExactlyOnceBroken(t *testing.T) {
	if os.Getenv("WEIR_UNSAFE_EOS") != "1" {
		t.Skip("run by TestExactlyOnceCatchesSplitTransactions (with -tags unsafe_eos)")
	}
	conformance.TestExactlyOnce(t, eosClusterFor(t).harness(t, fmt.Sprintf("broken-%d", time.Now().UnixNano())))
}

// eosClusterFor returns the real broker's cluster with WEIR_KAFKA_BROKERS
// set, a fake one otherwise.
func eosClusterFor(t *testing.T) *eosCluster {
	if b := os.Getenv("WEIR_KAFKA_BROKERS"); b != "" {
		return newEOSClusterAt(t, []string{b}, nil)
	}
	return newEOSCluster(t)
}

// eosRecords returns records of source "in", partition "in/0", at offsets
// from..to-1, with values naming them.
func eosRecords(from, to int64) []record.Record {
	var out []record.Record
	for o := from; o < to; o++ {
		r := record.New([]byte(fmt.Sprintf(`{"o":%d}`, o)))
		r.Origin = record.Origin{Source: "in", Partition: "in/0", Offset: o}
		out = append(out, r)
	}
	return out
}

// writeGroup writes recs into k with the position end for in/0.
func writeGroup(t *testing.T, k *Keeper, recs []record.Record, end int64) {
	t.Helper()
	if err := k.Write(context.Background(), recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	k.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "in/0", Position: connector.Position(end)}})
}

func countValues(vals [][]byte) map[string]int {
	m := map[string]int{}
	for _, v := range vals {
		m[string(v)]++
	}
	return m
}

// A second process with the same transactional id fences the first at its
// Open: the first one's open transaction is aborted and its commit fails,
// saying another process took the id over; it does not initialise the id
// again (which would fence the second in turn), so its retries keep failing
// while the second commits.
func TestSameTransactionalIDFencesTheFirst(t *testing.T) {
	ctx := context.Background()
	ec := eosClusterFor(t)
	h := ec.harness(t, fmt.Sprintf("same-id-%d", time.Now().UnixNano()))
	first := h.New(t).(*Keeper)
	if err := first.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer first.Close(ctx)
	writeGroup(t, first, eosRecords(0, 5), 5)
	second := h.Reopen(t, first).(*Keeper) // the same transactional id
	if err := second.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	err := first.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "took transactional_id") {
		t.Fatalf("the first process's commit after a second one with its transactional id opened returned %v, want it fenced (another process took transactional_id ... over)", err)
	}
	// The runtime writes the group again: still fenced, and the second
	// process is not fenced back.
	if err := first.Abort(ctx); err != nil {
		t.Logf("Abort: %v", err)
	}
	err = first.Write(ctx, eosRecords(0, 5))
	if err == nil {
		first.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "in/0", Position: 5}})
		err = first.Flush(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "took") {
		t.Fatalf("the fenced process's retry returned %v, want it fenced again", err)
	}
	writeGroup(t, second, eosRecords(0, 8), 8)
	if err := second.Flush(ctx); err != nil {
		t.Fatalf("the second process's commit failed after the first one's retry: %v", err)
	}
	got := countValues(h.Held(t, second))
	for o := 0; o < 8; o++ {
		if n := got[fmt.Sprintf(`{"o":%d}`, o)]; n != 1 {
			t.Fatalf("record %d is in the topic %d times for read_committed consumers, want once: %v", o, n, got)
		}
	}
	if len(got) != 8 {
		t.Fatalf("the topic holds %v, want the second process's 8 records", got)
	}
}

// A zombie's late commit fails: a process that wrote records of a source
// partition and stopped before committing, while another process (its own
// transactional id) took the partition over from the stored positions and
// committed the same records, cannot commit them when it resumes: the
// positions log fences it. Written again, as the runtime does, its group
// holds nothing the other process holds.
func TestZombieLateCommitFails(t *testing.T) {
	ctx := context.Background()
	ec := eosClusterFor(t)
	h := ec.harness(t, fmt.Sprintf("zombie-%d", time.Now().UnixNano()))
	zombie := h.New(t).(*Keeper)
	if err := zombie.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer zombie.Close(ctx)
	writeGroup(t, zombie, eosRecords(0, 5), 5)
	taker := h.Another(t, zombie).(*Keeper)
	if err := taker.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer taker.Close(ctx)
	if pos, err := taker.StoredPositions(ctx, "in", []string{"in/0"}); err != nil || len(pos) != 0 {
		t.Fatalf("stored positions before any commit: %v, %v", pos, err)
	}
	writeGroup(t, taker, eosRecords(0, 8), 8)
	if err := taker.Flush(ctx); err != nil {
		t.Fatalf("the taker's commit: %v", err)
	}
	err := zombie.Flush(ctx)
	if !errors.Is(err, errFenced) {
		t.Fatalf("the zombie's late commit returned %v, want it fenced by the positions the taker committed", err)
	}
	if err := zombie.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	writeGroup(t, zombie, eosRecords(0, 5), 5)
	if err := zombie.Flush(ctx); err != nil {
		t.Fatalf("the zombie's group written again: %v", err)
	}
	got := countValues(h.Held(t, taker))
	for o := 0; o < 8; o++ {
		if n := got[fmt.Sprintf(`{"o":%d}`, o)]; n != 1 {
			t.Fatalf("record %d is in the topic %d times for read_committed consumers, want once: %v", o, n, got)
		}
	}
	if n := zombie.held.Load(); n != 5 {
		t.Fatalf("the zombie left out %d records as held, want 5", n)
	}
}

// The exactly-once sink passes the ordinary sink suite too, without
// WritesThrough: an aborted transaction never shows to a read_committed
// consumer.
func TestExactlyOnceSinkConforms(t *testing.T) {
	ec := eosClusterFor(t)
	ec.partitions = 1 // the suite checks the order of what is written
	h := ec.harness(t, fmt.Sprintf("sink-%d", time.Now().UnixNano()))
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New:     h.New,
		Count:   func(t *testing.T, s connector.Sink) int { return len(h.Held(t, s)) },
		Written: h.Held,
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			h.Crash(t, s)
			return h.Reopen(t, s)
		},
	})
}

// New refuses exactly_once, naming the field and Build; Build returns a
// PositionKeeper with it and the at-least-once sink without.
func TestNewRefusesExactlyOnce(t *testing.T) {
	c := NewConfig()
	c.Brokers, c.Topic, c.ExactlyOnce = []string{"127.0.0.1:1"}, "out", true
	if _, err := New("out", c); err == nil || !strings.Contains(err.Error(), "exactly_once") || !strings.Contains(err.Error(), "Build") {
		t.Fatalf("New with exactly_once: %v, want a refusal naming exactly_once and Build", err)
	}
	if s, err := Build("out", c); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(connector.PositionKeeper); !ok {
		t.Fatalf("Build with exactly_once returned %T", s)
	}
	c.ExactlyOnce = false
	if s, err := Build("out", c); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(connector.PositionKeeper); ok {
		t.Fatal("Build without exactly_once returned a PositionKeeper")
	}
}

// The exactly-once sink rejects a record larger than max_message_bytes by
// index as the at-least-once one does: the records before it are in the
// transaction, which then commits.
func TestExactlyOnceRejectsARecordLargerThanABatch(t *testing.T) {
	ctx := context.Background()
	ec := eosClusterFor(t)
	h := ec.harness(t, fmt.Sprintf("large-%d", time.Now().UnixNano()))
	k := h.New(t).(*Keeper)
	k.cfg.MaxMessageBytes = 2048
	if err := k.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	recs := eosRecords(0, 3)
	recs[1] = record.New([]byte(`{"blob":"` + strings.Repeat("x", 3000) + `"}`))
	recs[1].Origin = record.Origin{Source: "in", Partition: "in/0", Offset: 1}
	err := k.Write(ctx, recs)
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "max_message_bytes (2048)") {
		t.Fatalf("Write = %v, want the record at index 1 rejected for max_message_bytes", err)
	}
	k.GroupPositions([]connector.GroupPosition{{Source: "in", Partition: "in/0", Position: 1}})
	if err := k.Flush(ctx); err != nil {
		t.Fatalf("Flush after the rejection: %v", err)
	}
}

// A commit the client reports while the broker aborted the transaction (as
// franz-go does when it takes a transaction for empty: it ends it with an
// abort and EndTransaction(TryCommit) returns nil) fails the Persist: the
// group's positions record is read back with read_committed before the
// group counts as durable. Here the fake broker turns one commit into an
// abort; without the check, Flush returns nil and the records are gone.
func TestCommitTheBrokerAbortedFails(t *testing.T) {
	ctx := context.Background()
	ec := eosClusterFor(t)
	if ec.c == nil {
		t.Skip("needs the fake cluster, to turn a commit into an abort")
	}
	h := ec.harness(t, fmt.Sprintf("flip-%d", time.Now().UnixNano()))
	k := h.New(t).(*Keeper)
	if err := k.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	var flipped atomic.Bool
	ec.c.ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if r := kreq.(*kmsg.EndTxnRequest); r.Commit && flipped.CompareAndSwap(false, true) {
			r.Commit = false // the broker aborts; the answer says nothing of it
		}
		ec.c.KeepControl()
		return nil, nil, false
	})
	writeGroup(t, k, eosRecords(0, 5), 5)
	err := k.Flush(ctx)
	if !errors.Is(err, errCommitAborted) {
		t.Fatalf("Flush of a transaction the broker aborted = %v, want errCommitAborted", err)
	}
	if got := len(h.Held(t, k)); got != 0 {
		t.Fatalf("%d records visible after the aborted commit, want 0", got)
	}
	// The runtime writes the group again; that commit goes through.
	writeGroup(t, k, eosRecords(0, 5), 5)
	if err := k.Flush(ctx); err != nil {
		t.Fatalf("the group written again: %v", err)
	}
	got := countValues(h.Held(t, k))
	for o := 0; o < 5; o++ {
		if n := got[fmt.Sprintf(`{"o":%d}`, o)]; n != 1 {
			t.Fatalf("record %d is in the topic %d times, want once: %v", o, n, got)
		}
	}
	if d := k.Describe(); !strings.Contains(d, "1 commits the broker aborted written again") {
		t.Fatalf("Describe = %q, want the aborted commit counted", d)
	}
}

// StoredPositions called while a group of the same sink is being persisted
// (its positions produced, its fence and commit to come) waits for that
// group's commit and returns its positions. It used to hold the positions
// log through its wait, which the group's fence needs too: the commit waited
// for the read, the read for the commit, until storedWait (5 s) passed and
// the read gave up without the group's positions; after a rebalance, every
// partition newly assigned to a process cost it that wait.
func TestStoredPositionsDuringOwnPersist(t *testing.T) {
	ctx := context.Background()
	ec := eosClusterFor(t)
	h := ec.harness(t, fmt.Sprintf("own-%d", time.Now().UnixNano()))
	k := h.New(t).(*Keeper)
	if err := k.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer k.Close(ctx)
	waiting := make(chan struct{}, 1)
	k.pos.mu.Lock()
	k.pos.waiting = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	k.pos.mu.Unlock()
	type result struct {
		pos map[string]connector.Position
		err error
	}
	got := make(chan result, 1)
	step := func(name string) {
		if name != "acknowledged" {
			return
		}
		// The group's positions are in the log, its transaction open: read
		// the stored positions now, and go on to the fence once the read
		// waits for that transaction.
		go func() {
			pos, err := k.StoredPositions(ctx, "in", []string{"in/0"})
			got <- result{pos, err}
		}()
		select {
		case <-waiting:
		case <-time.After(30 * time.Second):
			t.Error("StoredPositions never waited for the open transaction")
		}
	}
	k.step.Store(&step)
	writeGroup(t, k, eosRecords(0, 5), 5)
	sg, err := k.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sg.Persist(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.pos["in/0"] != 5 {
		t.Fatalf("StoredPositions during the group's Persist returned %v, %v; want in/0 at 5, the group's own commit", r.pos, r.err)
	}
}
