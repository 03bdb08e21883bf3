package kafkatest

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fake starts an in-process kfake cluster with topic having partitions
// partitions, closed when the test ends.
func Fake(t testing.TB, topic string, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// FakeOn is Fake listening on port of 127.0.0.1: a test can point a
// connector at the port before the cluster runs (FreePort finds one).
func FakeOn(t testing.TB, port int, topic string, partitions int32) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatalf("kfake on port %d: %v", port, err)
	}
	t.Cleanup(c.Close)
	return c
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on: the
// system just gave it out and it was closed again, so it stays free unless
// another process happens to be given it meanwhile.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Client returns a plain client for brokers, closed when the test ends.
func Client(t testing.TB, brokers []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// The manual partitioner lets tests say which partition a record goes to.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatalf("kgo: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce writes n records with values "<partition>-<i>" to each of the
// partitions of topic, synchronously.
func Produce(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, partitions int32, n int) {
	t.Helper()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte{byte('0' + p), '-', byte('0' + i%10)}})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// Committed returns the group's committed offset for each partition of
// topic; -1 where none is committed.
func Committed(ctx context.Context, t testing.TB, cl *kgo.Client, group, topic string, partitions int32) []int64 {
	t.Helper()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetching offsets: %v", err)
	}
	out := make([]int64, partitions)
	for p := range out {
		out[p] = -1
		if o, ok := resp.Lookup(topic, int32(p)); ok && o.Err == nil {
			out[p] = o.At
		}
	}
	return out
}

// Commit commits offsets[p] for each partition p of topic in group, as an
// administrator would.
func Commit(ctx context.Context, t testing.TB, cl *kgo.Client, group, topic string, offsets ...int64) {
	t.Helper()
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: int32(p), At: at, LeaderEpoch: -1})
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing offsets: %v", err)
	}
}
