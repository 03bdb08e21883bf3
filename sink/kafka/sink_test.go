package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/record"
	"github.com/weir-etl/weir/sink/kafka"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openSink(ctx context.Context, t *testing.T, brokers []string, change func(*kafka.Config)) *kafka.Sink {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Topic = "out"
	if change != nil {
		change(cfg)
	}
	s, err := kafka.New("out", cfg)
	if err != nil {
		t.Fatal(err)
	}
	kafka.SetLogger(s, slog.New(slog.DiscardHandler))
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func rec(value string, key string, headers ...record.Header) record.Record {
	r := record.New([]byte(value))
	if key != "" {
		r.Key = []byte(key)
	}
	r.Headers = headers
	return r
}

// consume reads n records from topic, from the start.
func consume(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := kafkatest.Client(t, brokers, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records from %s: %v", len(out), n, topic, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// Flush returns only after the broker acknowledged the produce: while the
// broker holds the produce request, Flush is still waiting.
func TestFlushWaitsForAcknowledgement(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "out", 1)
	s := openSink(ctx, t, c.ListenAddrs(), nil)

	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		// The control stays installed (it never handles the request): only
		// the first produce is held; a retry of it passes.
		first := false
		once.Do(func() { first = true; close(arrived) })
		if first {
			<-release
		}
		return nil, nil, false // now let the broker handle it
	})
	if err := s.Write(ctx, []record.Record{rec("v1", "k1", record.Header{Key: "h", Value: []byte("x")}), rec("v2", "")}); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(ctx) }()
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the produce request never reached the broker")
	}
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned %v before the broker answered the produce", err)
	default:
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "out", 2)
	if string(got[0].Value) != "v1" || string(got[0].Key) != "k1" || string(got[1].Value) != "v2" {
		t.Errorf("records = %q/%q, %q", got[0].Key, got[0].Value, got[1].Value)
	}
	if len(got[0].Headers) != 1 || got[0].Headers[0].Key != "h" || string(got[0].Headers[0].Value) != "x" {
		t.Errorf("headers = %+v, want h=x passed through", got[0].Headers)
	}
}

// A produce the broker refuses fails the group's Flush; after Abort the next
// group starts clean.
func TestFlushSurfacesProduceError(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "out", 1)
	s := openSink(ctx, t, c.ListenAddrs(), nil)

	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		return refuse(kreq.(*kmsg.ProduceRequest)), nil, true
	})
	if err := s.Write(ctx, []record.Record{rec("lost", "")}); err != nil {
		t.Fatal(err)
	}
	err := s.Flush(ctx)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.HasPrefix(err.Error(), "kafka: ") {
		t.Fatalf("Flush = %v, want the broker's TOPIC_AUTHORIZATION_FAILED with a kafka: prefix", err)
	}
	if want := "TOPIC_AUTHORIZATION_FAILED (29): "; !strings.Contains(err.Error(), want) {
		t.Errorf("Flush error %q does not spell the Kafka error out (%q)", err, want)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []record.Record{rec("kept", "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after Abort = %v, want nil", err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "out", 1)
	if string(got[0].Value) != "kept" {
		t.Errorf("first record in topic = %q, want kept", got[0].Value)
	}
}

// refuse answers a produce request with TOPIC_AUTHORIZATION_FAILED for every
// partition in it, an error the client does not retry.
func refuse(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// The topic template and key_field take values from the record's fields; a
// record missing them is rejected by index.
func TestTopicTemplateAndKeyField(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "ev-eu", 1)
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) {
		cfg.Topic = "ev-{{ geo.region }}"
		cfg.KeyField = "id"
	})
	err := s.Write(ctx, []record.Record{
		rec(`{"id":7,"geo":{"region":"eu"}}`, ""),
		rec(`{"id":8}`, ""),
	})
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), "geo.region") {
		t.Fatalf("Write = %v, want record 1 rejected for missing geo.region", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "ev-eu", 1)
	if string(got[0].Key) != "7" {
		t.Errorf("key = %q, want 7 from key_field id", got[0].Key)
	}
}

// Validate names the option at fault in a *connector.FieldError, for every
// problem at once.
func TestSinkConfigValidate(t *testing.T) {
	fieldsOf := func(err error) []string {
		fields, other := connector.FieldErrors(err)
		if len(other) != 0 {
			t.Errorf("errors naming no option: %v", other)
		}
		var out []string
		for _, f := range fields {
			out = append(out, f.Field)
		}
		return out
	}
	for _, tc := range []struct {
		field  string
		change func(*kafka.Config)
	}{
		{"topic", func(c *kafka.Config) { c.Topic = "" }},
		{"topic", func(c *kafka.Config) { c.Topic = "a-{{x" }},
		{"topic", func(c *kafka.Config) { c.Topic = "a-{{}}" }},
		{"compression", func(c *kafka.Config) { c.Compression = "brotli" }},
		{"brokers", func(c *kafka.Config) { c.Brokers = nil }},
		{"connect_timeout", func(c *kafka.Config) { c.ConnectTimeout = 0 }},
		{"delivery_timeout", func(c *kafka.Config) { c.DeliveryTimeout = 0 }},
		{"max_buffered_records", func(c *kafka.Config) { c.MaxBufferedRecords = 0 }},
		{"tls.cert_file", func(c *kafka.Config) { c.TLS.KeyFile = "k.pem" }},
	} {
		c := kafka.NewConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		c.Topic = "t"
		tc.change(c)
		if got := fieldsOf(c.Validate()); !slices.Equal(got, []string{tc.field}) {
			t.Errorf("changing %s: Validate() = %v, want one problem, with %s", tc.field, c.Validate(), tc.field)
		}
	}
	c := kafka.NewConfig()
	c.Compression = "brotli"
	c.DeliveryTimeout = 0
	want := []string{"brokers", "topic", "compression", "delivery_timeout"}
	if got := fieldsOf(c.Validate()); !slices.Equal(got, want) {
		t.Errorf("Validate() names %v, want all of %v", got, want)
	}
	if _, err := kafka.New("out", c); err == nil || !strings.HasPrefix(err.Error(), "kafka: sink out: ") {
		t.Errorf("New with a bad config = %v, want an error prefixed with the sink", err)
	}
}

// Every option has a doc tag: help and schema are generated from them.
func TestSinkConfigDocTags(t *testing.T) {
	kafkatest.CheckDocTags(t, reflect.TypeFor[kafka.Config]())
}

// fakeTopics starts an in-process cluster with a one-partition topic for each
// name, and returns it with the topics' ids: from Produce v13 on, a produce
// request names its topics by id only.
func fakeTopics(ctx context.Context, t *testing.T, topics ...string) (*kfake.Cluster, map[[16]byte]string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	details, err := kadm.NewClient(kafkatest.Client(t, c.ListenAddrs())).ListTopics(ctx, topics...)
	if err != nil {
		t.Fatalf("listing topics: %v", err)
	}
	ids := map[[16]byte]string{}
	for _, d := range details {
		if d.Err != nil {
			t.Fatalf("topic %s: %v", d.Topic, d.Err)
		}
		ids[d.ID] = d.Topic
	}
	return c, ids
}

// writesTo reports whether a produce request has records for topic.
func writesTo(req *kmsg.ProduceRequest, ids map[[16]byte]string, topic string) bool {
	for _, rt := range req.Topics {
		if rt.Topic == topic || ids[rt.TopicID] == topic {
			return true
		}
	}
	return false
}

// releaser returns a channel and a function closing it, which also runs when
// the test ends so that nothing stays held at the broker.
func releaser(t *testing.T) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return ch, release
}

// holdProduce keeps every produce request for topic at the broker until
// release is closed, then lets the broker handle it; other requests go on.
// The returned channel is closed when the first such request arrives.
func holdProduce(c *kfake.Cluster, ids map[[16]byte]string, topic string, release <-chan struct{}) <-chan struct{} {
	return controlProduce(c, ids, topic, release, false)
}

// refuseProduce is holdProduce, but the broker then refuses the request (and
// every later one for topic) with TOPIC_AUTHORIZATION_FAILED.
func refuseProduce(c *kfake.Cluster, ids map[[16]byte]string, topic string, release <-chan struct{}) <-chan struct{} {
	return controlProduce(c, ids, topic, release, true)
}

func controlProduce(c *kfake.Cluster, ids map[[16]byte]string, topic string, release <-chan struct{}, fail bool) <-chan struct{} {
	arrived := make(chan struct{})
	var once sync.Once
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ProduceRequest)
		if !writesTo(req, ids, topic) {
			return nil, nil, false
		}
		once.Do(func() { close(arrived) })
		// Sleeping lets the cluster serve other connections (fetches, the
		// reads that check what is in the topic) meanwhile. A control
		// whose release has come stays registered (it handled nothing) and
		// must not sleep again: a request slept twice, by this control and
		// a later one, races inside kfake's sleep queue.
		select {
		case <-release:
		default:
			c.SleepControl(func() { <-release })
		}
		if !fail {
			return nil, nil, false
		}
		c.KeepControl()
		return refuse(req), nil, true
	})
	return arrived
}

func wait(ctx context.Context, t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
	}
}

// Persist of a sealed group returns once the group's records are
// acknowledged and readable, and does not wait for the records written to
// the next group after Seal.
func TestPersistWaitsForSealedGroupOnly(t *testing.T) {
	ctx := testCtx(t)
	c, ids := fakeTopics(ctx, t, "a", "b")
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) { cfg.Topic = "{{t}}" })
	holdA, releaseA := releaser(t)
	holdB, releaseB := releaser(t)
	arrivedA := holdProduce(c, ids, "a", holdA)
	holdProduce(c, ids, "b", holdB)

	if err := s.Write(ctx, []record.Record{rec(`{"t":"a","i":1}`, ""), rec(`{"t":"a","i":2}`, "")}); err != nil {
		t.Fatal(err)
	}
	ga, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A Persist that also waited for the next group would wait until this
	// ctx expires: the next group's produce is held throughout.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	persisted := make(chan error, 1)
	go func() { persisted <- ga.Persist(pctx) }()
	wait(ctx, t, arrivedA, "the first group's produce to reach the broker")
	if err := s.Write(ctx, []record.Record{rec(`{"t":"b","i":3}`, "")}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-persisted:
		t.Fatalf("Persist returned %v while the broker held the group's produce", err)
	case <-time.After(200 * time.Millisecond):
	}
	releaseA()
	if err := <-persisted; err != nil {
		t.Fatalf("Persist of the first group = %v while the second group's produce is held, want nil", err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "a", 2)
	if len(got) != 2 || string(got[0].Value) != `{"t":"a","i":1}` || string(got[1].Value) != `{"t":"a","i":2}` {
		t.Fatalf("topic a holds %d records, want the first group's two", len(got))
	}

	gb, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	releaseB()
	if err := gb.Persist(ctx); err != nil {
		t.Fatalf("Persist of the second group = %v", err)
	}
	if got := consume(ctx, t, c.ListenAddrs(), "b", 1); string(got[0].Value) != `{"t":"b","i":3}` {
		t.Errorf("topic b holds %q, want the second group's record", got[0].Value)
	}
}

// A produce refused in a sealed group fails that group's Persist only: its
// promise, arriving after the next group started, does not touch the next
// group.
func TestPersistFailureStaysInItsGroup(t *testing.T) {
	ctx := testCtx(t)
	c, ids := fakeTopics(ctx, t, "a", "b")
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) { cfg.Topic = "{{t}}" })
	hold, release := releaser(t)
	arrived := refuseProduce(c, ids, "a", hold)

	if err := s.Write(ctx, []record.Record{rec(`{"t":"a"}`, "")}); err != nil {
		t.Fatal(err)
	}
	ga, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait(ctx, t, arrived, "the first group's produce to reach the broker")
	if err := s.Write(ctx, []record.Record{rec(`{"t":"b"}`, "")}); err != nil {
		t.Fatal(err)
	}
	// The refusal arrives while the second group is the current one.
	release()
	err = ga.Persist(ctx)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.HasPrefix(err.Error(), "kafka: sink out: ") {
		t.Fatalf("Persist of the refused group = %v, want TOPIC_AUTHORIZATION_FAILED with a kafka: sink out: prefix", err)
	}
	if err := ga.Discard(ctx); err != nil {
		t.Fatalf("Discard = %v", err)
	}
	gb, err := s.Seal(ctx)
	if err != nil {
		t.Fatalf("Seal of the next group = %v, want nil", err)
	}
	if err := gb.Persist(ctx); err != nil {
		t.Fatalf("Persist of the next group = %v, want nil", err)
	}
	if got := consume(ctx, t, c.ListenAddrs(), "b", 1); string(got[0].Value) != `{"t":"b"}` {
		t.Errorf("topic b holds %q, want the next group's record", got[0].Value)
	}
}

// stuckGroup opens a sink (changed by change) on a fake cluster that holds
// produce requests until release is called, writes one record and seals its
// group once the produce reached the broker.
func stuckGroup(t *testing.T, change func(*kafka.Config)) (ctx context.Context, s *kafka.Sink, g connector.SealedGroup, release func()) {
	t.Helper()
	ctx = testCtx(t)
	c, ids := fakeTopics(ctx, t, "out")
	s = openSink(ctx, t, c.ListenAddrs(), change)
	hold, release := releaser(t)
	arrived := holdProduce(c, ids, "out", hold)
	if err := s.Write(ctx, []record.Record{rec("stuck", "")}); err != nil {
		t.Fatal(err)
	}
	g, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait(ctx, t, arrived, "the produce to reach the broker")
	return ctx, s, g, release
}

// within runs f and returns its error, failing the test if f still runs
// after limit.
func within(t *testing.T, limit time.Duration, what string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(limit):
		t.Fatalf("%s still waiting after %v", what, limit)
		return nil
	}
}

// Persist gives up when its ctx is done, even while the group's produces
// are stuck at the broker.
func TestPersistHonoursContext(t *testing.T) {
	ctx, _, g, _ := stuckGroup(t, nil)
	pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := within(t, 10*time.Second, "Persist, 10s after its context expired,", func() error { return g.Persist(pctx) })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "kafka: sink out: ") {
		t.Fatalf("Persist = %v, want the context's deadline error with a kafka: sink out: prefix", err)
	}
}

// A record keeps its source timestamp, however old: replaying a topic
// written days ago must not time every record out (the client measures its
// own delivery timeout from the record's timestamp, so the sink must not use
// it). Both Flush and Seal/Persist deliver it.
func TestOldTimestampsAreDelivered(t *testing.T) {
	ctx := testCtx(t)
	c, _ := fakeTopics(ctx, t, "out")
	s := openSink(ctx, t, c.ListenAddrs(), nil)
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Millisecond)
	r := rec("flushed", "")
	r.Time = old
	if err := s.Write(ctx, []record.Record{r}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush of a record stamped three days ago: %v", err)
	}
	r = rec("persisted", "")
	r.Time = old
	if err := s.Write(ctx, []record.Record{r}); err != nil {
		t.Fatal(err)
	}
	g, err := s.Seal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Persist(ctx); err != nil {
		t.Fatalf("Persist of a record stamped three days ago: %v", err)
	}
	for _, kr := range consume(ctx, t, c.ListenAddrs(), "out", 2) {
		if !kr.Timestamp.Equal(old) {
			t.Errorf("%s has timestamp %v, want the source's %v", kr.Value, kr.Timestamp, old)
		}
	}
}

// A group whose acknowledgements do not come gives up after delivery_timeout,
// through Persist and through Flush, and Abort then clears what the client
// still holds so that the next group is not stuck behind it.
func TestDeliveryTimeoutFailsTheGroup(t *testing.T) {
	ctx, s, g, release := stuckGroup(t, func(c *kafka.Config) { c.DeliveryTimeout = time.Second })
	start := time.Now()
	err := within(t, 11*time.Second, "Persist, 10s after delivery_timeout,", func() error { return g.Persist(ctx) })
	if err == nil || !strings.Contains(err.Error(), "delivery_timeout") {
		t.Fatalf("Persist = %v, want a delivery_timeout error", err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("Persist gave up after %v, before delivery_timeout (1s)", d)
	}
	if err := s.Write(ctx, []record.Record{rec("stuck too", "")}); err != nil {
		t.Fatal(err)
	}
	if err := within(t, 11*time.Second, "Flush, 10s after delivery_timeout,", func() error { return s.Flush(ctx) }); err == nil || !strings.Contains(err.Error(), "delivery_timeout") {
		t.Fatalf("Flush = %v, want a delivery_timeout error", err)
	}
	release()
	if err := s.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := s.Write(ctx, []record.Record{rec("after", "")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after the broker answers again: %v", err)
	}
}

// With the client's buffer full and a broker that does not answer, Write
// does not wait for buffer space forever: after delivery_timeout the records
// waiting fail, Write returns, and the group fails.
func TestFullBufferGivesUpAfterDeliveryTimeout(t *testing.T) {
	ctx := testCtx(t)
	c, ids := fakeTopics(ctx, t, "out")
	s := openSink(ctx, t, c.ListenAddrs(), func(c *kafka.Config) {
		c.DeliveryTimeout = time.Second
		c.MaxBufferedRecords = 2
	})
	hold, release := releaser(t)
	holdProduce(c, ids, "out", hold)
	recs := make([]record.Record, 10)
	for i := range recs {
		recs[i] = rec(fmt.Sprintf("r%d", i), "")
	}
	within(t, 15*time.Second, "Write on a full buffer, 14s after delivery_timeout,", func() error { return s.Write(ctx, recs) })
	g, err := s.Seal(ctx)
	if err == nil {
		err = g.Persist(ctx)
	}
	if err == nil {
		t.Fatal("the group whose records could not be buffered did not fail")
	}
	release()
	if err := s.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
}

// Guarantee: a key or a topic taken from a number field is the number's
// literal as the record wrote it: an id above 2^53 is not rounded, 1.50 is
// not shortened and 1e3 is not rewritten.
func TestKeyFieldKeepsNumberLiterals(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "n-1.50", 1)
	s := openSink(ctx, t, c.ListenAddrs(), func(cfg *kafka.Config) {
		cfg.Topic = "n-{{ price }}"
		cfg.KeyField = "ids.big"
	})
	if err := s.Write(ctx, []record.Record{
		rec(`{"ids":{"big":12345678901234567891},"price":1.50}`, ""),
		rec(`{"ids":{"big":1e3},"price":1.50}`, ""),
		rec(`{"ids":{"big":"caf\u00e9"},"price":1.50}`, ""),
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consume(ctx, t, c.ListenAddrs(), "n-1.50", 3)
	for i, want := range []string{"12345678901234567891", "1e3", "café"} {
		if string(got[i].Key) != want {
			t.Errorf("record %d: key %q, want %q", i, got[i].Key, want)
		}
	}
}
