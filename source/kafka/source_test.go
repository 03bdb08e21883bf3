package kafka_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/source/kafka"
)

// testCtx bounds a test: a broken source fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openSource(ctx context.Context, t *testing.T, brokers []string, group, topic string) (*kafka.Source, *kafkatest.Host) {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Group = group
	cfg.Topics = []string{topic}
	// Short timeouts keep a rebalance after a member's exit quick in tests.
	cfg.SessionTimeout = 6 * time.Second
	cfg.RebalanceTimeout = 10 * time.Second
	src, err := kafka.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := kafkatest.NewHost()
	h.Source = src
	if err := src.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = src.Close(context.Background())
		if err := h.Misuse(); err != nil {
			t.Errorf("the source called the Host for partitions it did not hold: %v", err)
		}
	})
	return src, h
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// A partition is reported to the Host at the group's committed offset, and
// its first batch starts there.
func TestAssignAtCommittedOffset(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 2)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 2, 10)
	kafkatest.Commit(ctx, t, cl, "g", "t", 3, 7)

	src, h := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	loopCtx, stop := context.WithCancel(ctx)
	wait := kafkatest.PollLoop(loopCtx, src, h)
	if err := h.WaitFor(ctx, "10 records", func() bool { return h.Count() == 10 }); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	calls := h.Calls()
	slices.SortFunc(calls, func(a, b kafkatest.Call) int { return strings.Compare(a.Name, b.Name) })
	want := []kafkatest.Call{{Op: "assign", Name: "t/0", Pos: 3}, {Op: "assign", Name: "t/1", Pos: 7}}
	if !slices.Equal(calls, want) {
		t.Fatalf("host calls = %v, want %v", calls, want)
	}
	if got := h.Offsets("t/0"); !slices.Equal(got, seq(3, 10)) {
		t.Errorf("t/0 offsets = %v, want 3..9", got)
	}
	if got := h.Offsets("t/1"); !slices.Equal(got, seq(7, 10)) {
		t.Errorf("t/1 offsets = %v, want 7..9", got)
	}
}

// A batch carries the record's key, value, headers, time and origin, and
// End is one past its last offset.
func TestBatchContents(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	ts := time.UnixMilli(1_700_000_000_000)
	err := cl.ProduceSync(ctx, &kgo.Record{
		Topic: "t", Key: []byte("k"), Value: []byte(`{"a":1}`), Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
	}).FirstErr()
	if err != nil {
		t.Fatal(err)
	}
	src, _ := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	var b connector.Batch
	if err := src.Poll(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if b.End != 1 || len(b.Records) != 1 {
		t.Fatalf("batch End=%d with %d records, want End=1 with 1", b.End, len(b.Records))
	}
	r := b.Records[0]
	v, _ := r.Value()
	if string(r.Key) != "k" || string(v) != `{"a":1}` || !r.Time.Equal(ts) {
		t.Errorf("record key=%q value=%q time=%v", r.Key, v, r.Time)
	}
	if len(r.Headers) != 1 || r.Headers[0].Key != "h" || string(r.Headers[0].Value) != "v" {
		t.Errorf("headers = %+v", r.Headers)
	}
	if r.Origin.Source != "in" || r.Origin.Partition != "t/0" || r.Origin.Offset != 0 {
		t.Errorf("origin = %+v", r.Origin)
	}
	if len(r.Meta) != 1 || r.Meta[0].Key != "topic" || r.Meta[0].Value != "t" {
		t.Errorf("meta = %+v", r.Meta)
	}
}

// The runtime cancels a Poll's context to apply a rewind. A Poll whose
// context is cancelled returns at once, with a batch it had buffered or with
// the context's error, and loses nothing: the next Polls return every record
// exactly once.
func TestPollCancelledKeepsBuffered(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 3)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 3, 10)
	src, h := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	got := map[string][]int64{}
	take := func(b *connector.Batch) {
		for _, r := range b.Records {
			got[r.Origin.Partition] = append(got[r.Origin.Partition], r.Origin.Offset)
		}
		h.Deliver(b)
		b.Reset()
	}
	var b connector.Batch
	if err := src.Poll(ctx, &b); err != nil {
		t.Fatal(err)
	}
	take(&b)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	interrupted := false
	for range 10 {
		err := src.Poll(cancelled, &b)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Poll returned %v, want context.Canceled", err)
			}
			interrupted = true
			break
		}
		take(&b)
	}
	if !interrupted {
		t.Fatal("Poll with a cancelled context kept returning batches")
	}
	count := func() int { return len(got["t/0"]) + len(got["t/1"]) + len(got["t/2"]) }
	for n := count(); n < 30; n = count() {
		if err := src.Poll(ctx, &b); err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		take(&b)
	}
	for _, name := range []string{"t/0", "t/1", "t/2"} {
		if !slices.Equal(got[name], seq(0, 10)) {
			t.Errorf("%s offsets %v, want 0..9 once each", name, got[name])
		}
	}
}

// Commit writes exactly the positions it is given and does not send positions
// below one already committed. A partition it never handed out is not
// skipped silently: Commit commits the others and returns an error naming it,
// so that the runtime does not count it as committed.
func TestCommitExactOffsets(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 2)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 2, 10)
	src, h := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	loopCtx, stop := context.WithCancel(ctx)
	wait := kafkatest.PollLoop(loopCtx, src, h)
	defer func() { stop(); _ = wait() }()
	if err := h.WaitFor(ctx, "20 records", func() bool { return h.Count() == 20 }); err != nil {
		t.Fatal(err)
	}
	p0, _ := h.ID("t/0")
	p1, _ := h.ID("t/1")

	commit := func(cs ...connector.Commit) {
		t.Helper()
		if err := src.Commit(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	commit(connector.Commit{Partition: p0, Position: 5})
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 2); !slices.Equal(got, []int64{5, -1}) {
		t.Fatalf("committed = %v after committing t/0@5, want [5 -1]", got)
	}
	commit(connector.Commit{Partition: p0, Position: 4}, connector.Commit{Partition: p1, Position: 8})
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 2); !slices.Equal(got, []int64{5, 8}) {
		t.Fatalf("committed = %v after t/0@4 (a regression) and t/1@8, want [5 8]", got)
	}
	err := src.Commit(ctx, []connector.Commit{{Partition: p0, Position: 9}, {Partition: 99, Position: 1}, {Partition: p1, Position: -1}})
	if err == nil {
		t.Fatal("Commit of a partition never handed out and of a negative offset returned nil")
	}
	for _, part := range []string{"kafka: source in:", "partition 99@1 not committed", "t/1@-1 not committed"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("Commit error %q does not say %q", err, part)
		}
	}
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 2); !slices.Equal(got, []int64{9, 8}) {
		t.Fatalf("committed = %v, want t/0@9 committed beside the refused ones", got)
	}
}

// A commit the broker refuses is an error, and nothing is recorded as
// committed, so the same position is committed on the next try.
func TestCommitErrorReturned(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 3)
	src, h := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	var b connector.Batch
	if err := src.Poll(ctx, &b); err != nil {
		t.Fatal(err)
	}
	h.Deliver(&b)

	c.ControlKey(int16(kmsg.OffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	commits := []connector.Commit{{Partition: b.Partition, Position: b.End}}
	err := src.Commit(ctx, commits)
	if err == nil || !strings.Contains(err.Error(), "kafka: source in:") || !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("Commit with a refused offset commit = %v, want a kafka: error wrapping the broker's", err)
	}
	if want := "t/0@3: TOPIC_AUTHORIZATION_FAILED (29): "; !strings.Contains(err.Error(), want) {
		t.Errorf("Commit error %q does not name the partition and spell the code out (%q)", err, want)
	}
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 1); got[0] != -1 {
		t.Fatalf("committed = %v after a refused commit, want none", got)
	}
	// The control function was used once; the retry goes through.
	if err := src.Commit(ctx, commits); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 1); got[0] != int64(b.End) {
		t.Fatalf("committed = %v after the retry, want %d", got, b.End)
	}
}

// When a second member joins, the first gets Host.Revoke for what it gives up,
// which commits the delivered position before the rebalance completes; the
// second member starts exactly there, and the first reads nothing more of it.
func TestRevokeCommitsBeforeHandOver(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 2)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 2, 10)

	srcA, hA := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	waitA := kafkatest.PollLoop(loopCtx, srcA, hA)
	if err := hA.WaitFor(ctx, "A reads 20", func() bool { return hA.Count() == 20 }); err != nil {
		t.Fatal(err)
	}

	srcB, hB := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	waitB := kafkatest.PollLoop(loopCtx, srcB, hB)
	revokes := func() []kafkatest.Call {
		var out []kafkatest.Call
		for _, call := range hA.Calls() {
			if call.Op == "revoke" {
				out = append(out, call)
			}
		}
		return out
	}
	if err := hA.WaitFor(ctx, "A revokes", func() bool { return len(revokes()) > 0 }); err != nil {
		t.Fatal(err)
	}
	rs := revokes()
	moved := rs[0].Name
	if len(rs) != 1 || rs[0].Pos != 10 {
		t.Fatalf("A's revokes = %v, want one revoke committing 10", rs)
	}
	if err := hA.RevokeErr(); err != nil {
		t.Fatalf("revoke's commit: %v", err)
	}
	movedPart := int(moved[len(moved)-1] - '0')
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 2); got[movedPart] != 10 {
		t.Fatalf("committed = %v, want 10 for %s", got, moved)
	}

	// New records of the moved partition go to B only, from offset 10.
	kafkatest.Produce(ctx, t, cl, "t", 2, 5)
	if err := hB.WaitFor(ctx, "B reads 5", func() bool { return hB.Count() == 5 }); err != nil {
		t.Fatal(err)
	}
	if err := hA.WaitFor(ctx, "A reads 25", func() bool { return hA.Count() == 25 }); err != nil {
		t.Fatal(err)
	}
	if bCalls := hB.Calls(); len(bCalls) != 1 || bCalls[0] != (kafkatest.Call{Op: "assign", Name: moved, Pos: 10}) {
		t.Fatalf("B's calls = %v, want assign %s@10", bCalls, moved)
	}
	if got := hB.Offsets(moved); !slices.Equal(got, seq(10, 15)) {
		t.Errorf("B read %s offsets %v, want 10..14", moved, got)
	}
	if got := hA.Offsets(moved); !slices.Equal(got, seq(0, 10)) {
		t.Errorf("A read %s offsets %v, want 0..9 only", moved, got)
	}
	stop()
	if err := waitA(); err != nil {
		t.Fatal(err)
	}
	if err := waitB(); err != nil {
		t.Fatal(err)
	}
}

// A lost partition is forgotten without any commit: the member rejoins and
// starts again from the group's committed offset, not from what it polled.
func TestLostCommitsNothing(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 10)
	kafkatest.Commit(ctx, t, cl, "g", "t", 2)

	src, h := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	wait := kafkatest.PollLoop(loopCtx, src, h)
	if err := h.WaitFor(ctx, "8 records", func() bool { return h.Count() == 8 }); err != nil {
		t.Fatal(err)
	}
	// The coordinator forgets the member: its next heartbeat is refused,
	// which ends the member's ownership without a revoke.
	c.ControlKey(int16(kmsg.Heartbeat), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		resp := kreq.(*kmsg.HeartbeatRequest).ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	if err := h.WaitFor(ctx, "lost and re-assigned", func() bool { return len(h.Calls()) >= 3 && len(h.Owned()) == 1 }); err != nil {
		t.Fatalf("%v; calls %v", err, h.Calls())
	}
	want := []kafkatest.Call{{Op: "assign", Name: "t/0", Pos: 2}, {Op: "lost", Name: "t/0", Pos: -1}, {Op: "assign", Name: "t/0", Pos: 2}}
	if got := h.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if got := kafkatest.Committed(ctx, t, cl, "g", "t", 1); got[0] != 2 {
		t.Fatalf("committed = %v, want the admin's 2 untouched", got)
	}
	if err := h.WaitFor(ctx, "re-read", func() bool { return h.Count() == 16 }); err != nil {
		t.Fatal(err)
	}
	if got := h.Offsets("t/0"); !slices.Equal(got, append(seq(2, 10), seq(2, 10)...)) {
		t.Errorf("offsets = %v, want 2..9 twice", got)
	}
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// Seek makes the partition's next batch start at the given position, even
// while Poll is waiting for new data.
func TestSeekReplays(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 10)
	src, h := openSource(ctx, t, c.ListenAddrs(), "g", "t")
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	wait := kafkatest.PollLoop(loopCtx, src, h)
	if err := h.WaitFor(ctx, "10 records", func() bool { return h.Count() == 10 }); err != nil {
		t.Fatal(err)
	}
	p, _ := h.ID("t/0")
	if err := src.Seek(ctx, p, 4); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitFor(ctx, "replay", func() bool { return h.Count() == 16 }); err != nil {
		t.Fatal(err)
	}
	if got := h.Offsets("t/0"); !slices.Equal(got, append(seq(0, 10), seq(4, 10)...)) {
		t.Errorf("offsets = %v, want 0..9 then 4..9", got)
	}
	if err := src.Seek(ctx, checkpoint.Partition(42), 0); err == nil {
		t.Error("Seek of a partition never assigned succeeded")
	}
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// Validate names the option at fault in a *connector.FieldError, for every
// problem at once.
func TestConfigValidate(t *testing.T) {
	ok := func() *kafka.Config {
		c := kafka.NewConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		c.Group = "g"
		c.Topics = []string{"t"}
		return c
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
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
		{"brokers", func(c *kafka.Config) { c.Brokers = nil }},
		{"brokers[0]", func(c *kafka.Config) { c.Brokers = []string{"nohost"} }},
		{"connect_timeout", func(c *kafka.Config) { c.ConnectTimeout = 0 }},
		{"group", func(c *kafka.Config) { c.Group = "" }},
		{"topics", func(c *kafka.Config) { c.Topics = nil }},
		{"topics[1]", func(c *kafka.Config) { c.Topics = []string{"t", ""} }},
		{"topic_regex", func(c *kafka.Config) { c.TopicRegex = "x" }},
		{"topic_regex", func(c *kafka.Config) { c.Topics = nil; c.TopicRegex = "(" }},
		{"start_from", func(c *kafka.Config) { c.StartFrom = "middle" }},
		{"balancer", func(c *kafka.Config) { c.Balancer = "eager" }},
		{"sasl.mechanism", func(c *kafka.Config) { c.SASL.Mechanism = "gssapi" }},
		{"sasl.username", func(c *kafka.Config) { c.SASL.Mechanism = "plain" }},
		{"sasl.mechanism", func(c *kafka.Config) { c.SASL.Password = "x" }},
		{"tls.key_file", func(c *kafka.Config) { c.TLS.CertFile = "c.pem" }},
		{"max_poll_records", func(c *kafka.Config) { c.MaxPollRecords = 0 }},
		{"fetch_max_bytes", func(c *kafka.Config) { c.FetchMaxBytes = -1 }},
		{"session_timeout", func(c *kafka.Config) { c.SessionTimeout = 0 }},
		{"heartbeat_interval", func(c *kafka.Config) { c.HeartbeatInterval = 99 * time.Millisecond }},
		{"heartbeat_interval", func(c *kafka.Config) { c.HeartbeatInterval = c.SessionTimeout }},
		{"heartbeat_interval", func(c *kafka.Config) { c.SessionTimeout = 2 * time.Second }}, // the default 3s heartbeat
		{"rebalance_timeout", func(c *kafka.Config) { c.RebalanceTimeout = time.Millisecond }},
	} {
		c := ok()
		tc.change(c)
		if got := fieldsOf(c.Validate()); !slices.Equal(got, []string{tc.field}) {
			t.Errorf("changing %s: Validate() = %v, want one problem, with %s", tc.field, c.Validate(), tc.field)
		}
	}

	// Every problem at once.
	c := kafka.NewConfig()
	c.Brokers = []string{"nohost"}
	c.StartFrom = "middle"
	c.SessionTimeout = 0
	want := []string{"brokers[0]", "group", "topics", "start_from", "session_timeout"}
	if got := fieldsOf(c.Validate()); !slices.Equal(got, want) {
		t.Errorf("Validate() names %v, want all of %v", got, want)
	}
	if _, err := kafka.New("in", c); err == nil || !strings.HasPrefix(err.Error(), "kafka: source in: ") {
		t.Errorf("New with a bad config = %v, want an error prefixed with the source", err)
	}

	// The heartbeat's bounds: 100ms, and anything below session_timeout.
	for _, hb := range []time.Duration{100 * time.Millisecond, 2*time.Second - time.Millisecond} {
		c := ok()
		c.SessionTimeout, c.HeartbeatInterval = 2*time.Second, hb
		if err := c.Validate(); err != nil {
			t.Errorf("heartbeat_interval %v under session_timeout 2s: %v", hb, err)
		}
	}
	c = ok()
	c.SessionTimeout = 2 * time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "heartbeat_interval: 3s is not below session_timeout 2s") || !strings.Contains(err.Error(), "666ms") {
		t.Errorf("the default heartbeat under a 2s session: %v, want it named with the fix, a third of the session", err)
	}
}

// The source's client heartbeats at heartbeat_interval, the client's own 3s
// by default, and with the session_timeout configured.
func TestHeartbeatIntervalReachesTheClient(t *testing.T) {
	c := kafkatest.Fake(t, "t", 1)
	for _, tc := range []struct {
		session, heartbeat  time.Duration // zero: NewConfig's
		wantSession, wantHB time.Duration
	}{
		{0, 0, 45 * time.Second, 3 * time.Second},
		{2 * time.Second, 500 * time.Millisecond, 2 * time.Second, 500 * time.Millisecond},
	} {
		ctx := testCtx(t)
		cfg := kafka.NewConfig()
		cfg.Brokers = c.ListenAddrs()
		cfg.Group = "g"
		cfg.Topics = []string{"t"}
		if tc.session != 0 {
			cfg.SessionTimeout, cfg.HeartbeatInterval = tc.session, tc.heartbeat
		}
		src, err := kafka.New("in", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Open(ctx, kafkatest.NewHost()); err != nil {
			t.Fatal(err)
		}
		session, hb := kafka.ClientOpt(src, kgo.SessionTimeout), kafka.ClientOpt(src, kgo.HeartbeatInterval)
		_ = src.Close(context.Background())
		if session != tc.wantSession || hb != tc.wantHB {
			t.Errorf("client session timeout %v, heartbeat interval %v; want %v and %v", session, hb, tc.wantSession, tc.wantHB)
		}
	}
}

// Every option has a doc tag: help and schema are generated from them.
func TestConfigDocTags(t *testing.T) {
	kafkatest.CheckDocTags(t, reflect.TypeFor[kafka.Config]())
}
