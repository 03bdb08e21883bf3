//go:build integration

package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/kafka"
)

// Against a real broker: records written and flushed by the sink are all in
// the topic, with their keys and their source timestamps, which are days old
// (a replay of an old topic must not time out).
func TestIntegrationSinkRoundTrip(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx := testCtx(t)
	cl := kafkatest.Client(t, brokers)
	topic := kafkatest.CreateTopic(ctx, t, cl, "weir-sink", 3)
	s := openSink(ctx, t, brokers, func(c *kafka.Config) { c.Topic = topic; c.Compression = "zstd" })
	const n = 5000
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Millisecond)
	for g := 0; g < 5; g++ {
		var recs []record.Record
		for i := g * n / 5; i < (g+1)*n/5; i++ {
			r := rec(fmt.Sprintf(`{"i":%d}`, i), fmt.Sprint(i))
			r.Time = old
			recs = append(recs, r)
		}
		if err := s.Write(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := consume(ctx, t, brokers, topic, n)
	seen := map[string]bool{}
	for _, r := range got {
		if string(r.Value) != fmt.Sprintf(`{"i":%s}`, r.Key) {
			t.Fatalf("record key %q value %q do not match", r.Key, r.Value)
		}
		if !r.Timestamp.Equal(old) {
			t.Fatalf("record %s has timestamp %v, want the source's %v", r.Key, r.Timestamp, old)
		}
		seen[string(r.Key)] = true
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("read %d records, %d distinct, want %d", len(got), len(seen), n)
	}
}

// Against a real broker: two groups sealed one after the other and persisted
// in order are both in the topic once their Persists return.
func TestIntegrationSinkSealPersist(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	ctx := testCtx(t)
	cl := kafkatest.Client(t, brokers)
	topic := kafkatest.CreateTopic(ctx, t, cl, "weir-sink-seal", 3)
	s := openSink(ctx, t, brokers, func(c *kafka.Config) { c.Topic = topic })
	const n = 40000
	var sealed []connector.SealedGroup
	for g := 0; g < 2; g++ {
		var recs []record.Record
		for i := g * n / 2; i < (g+1)*n/2; i++ {
			recs = append(recs, rec(fmt.Sprintf(`{"i":%d}`, i), fmt.Sprint(i)))
		}
		if err := s.Write(ctx, recs); err != nil {
			t.Fatal(err)
		}
		sg, err := s.Seal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, sg)
	}
	adm := kadm.NewClient(cl)
	for i, sg := range sealed {
		if err := sg.Persist(ctx); err != nil {
			t.Fatalf("Persist of group %d: %v", i, err)
		}
		// Everything up to this group is in the topic as Persist returns.
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if want := int64((i + 1) * n / 2); total < want {
			t.Fatalf("after Persist of group %d the topic holds %d records, want at least %d", i, total, want)
		}
	}
	got := consume(ctx, t, brokers, topic, n)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Key)] = true
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("read %d records, %d distinct, want %d", len(got), len(seen), n)
	}
}
