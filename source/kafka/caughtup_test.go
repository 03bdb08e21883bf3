package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/source/kafka"
)

// polled is one batch a test polled: its size and whether it claimed the
// source caught up.
type polled struct {
	n        int
	caughtUp bool
}

func (p polled) String() string { return fmt.Sprintf("%d/%t", p.n, p.caughtUp) }

// pollUntil polls src until it has handed out total records, as the
// runtime would, and returns the batches.
func pollUntil(ctx context.Context, t *testing.T, src *kafka.Source, h *kafkatest.Host, total int) []polled {
	t.Helper()
	var out []polled
	got := 0
	for got < total {
		var b connector.Batch
		if err := src.Poll(ctx, &b); err != nil {
			t.Fatalf("poll after %d records: %v", got, err)
		}
		h.Deliver(&b)
		out = append(out, polled{len(b.Records), b.CaughtUp})
		got += len(b.Records)
	}
	if got != total {
		t.Fatalf("polled %d records, want %d", got, total)
	}
	return out
}

func openCaughtUpSource(ctx context.Context, t *testing.T, brokers []string, maxPoll int, inFlight int64) (*kafka.Source, *kafkatest.Host) {
	t.Helper()
	cfg := kafka.NewConfig()
	cfg.Brokers = brokers
	cfg.Group = "g"
	cfg.Topics = []string{"t"}
	cfg.MaxPollRecords = maxPoll
	src, err := kafka.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if inFlight > 0 {
		src.LimitReadAhead(inFlight)
	}
	h := kafkatest.NewHost()
	h.Source = src
	if err := src.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	return src, h
}

// Guarantee: a batch claims that the source caught up (so that the sinks
// flush at once) only when it is the last record the brokers had, not while
// max_poll_records cuts a backlog into polls; and a later record that
// arrives alone is caught up again.
func TestCaughtUpAfterTheLastPollOfABacklog(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 25)

	src, h := openCaughtUpSource(ctx, t, c.ListenAddrs(), 10, 0)
	got := pollUntil(ctx, t, src, h, 25)
	if s := fmt.Sprint(got); s != "[10/false 10/false 5/true]" {
		t.Fatalf("batches (records/caught up) = %s, want [10/false 10/false 5/true]", s)
	}

	kafkatest.Produce(ctx, t, cl, "t", 1, 3)
	if s := fmt.Sprint(pollUntil(ctx, t, src, h, 3)); s != "[3/true]" {
		t.Fatalf("batches of a later trickle = %s, want [3/true]", s)
	}
}

// Guarantee: only the last batch of what the client held claims the end. A
// poll that max_poll_records ends exactly where one partition's records end
// does not, while the client still holds another partition's, and the poll
// that takes the last of them does, although it too returned
// max_poll_records records; of a poll that returned both partitions, only
// the second batch does.
//
// The client usually fetches both partitions in one fetch, but a busy
// machine can make it fetch one before the other's starting offset is
// loaded: its first poll then holds one partition only, and its claim is
// right (a partition not fetched yet does not count, caughtup.go). Such a
// run tells nothing, so it is run again, on a new cluster, up to five
// times; a source that claims the end on every batch fails all five.
func TestCaughtUpOnlyWhenTheClientHoldsNothing(t *testing.T) {
	for _, maxPoll := range []int{10, 100} {
		t.Run(fmt.Sprint("max_poll_records=", maxPoll), func(t *testing.T) {
			var runs []string
			for range 5 {
				got := caughtUpOfTwoPartitions(t, maxPoll)
				if len(got) != 2 {
					t.Fatalf("batches (records/caught up) = %v, want two of 10", got)
				}
				if got[0].caughtUp && got[1].caughtUp {
					runs = append(runs, fmt.Sprint(got)) // perhaps fetched apart: again
					continue
				}
				if got[0].caughtUp || !got[1].caughtUp {
					t.Fatalf("batches (records/caught up) = %v: only the last one may claim the source caught up", got)
				}
				return
			}
			t.Fatalf("batches (records/caught up) of five runs = %v: only the last one may claim the source caught up", runs)
		})
	}
}

// caughtUpOfTwoPartitions polls 10 records of each of two partitions from a
// new cluster with maxPoll and returns the batches.
func caughtUpOfTwoPartitions(t *testing.T, maxPoll int) []polled {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 2)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 2, 10)
	src, h := openCaughtUpSource(ctx, t, c.ListenAddrs(), maxPoll, 0)
	return pollUntil(ctx, t, src, h, 20)
}

// Guarantee: a poll that returned fewer records than max_poll_records is
// not taken for the end while a partition is behind its high watermark: a
// fetch's size limit (here one partition's 1 MiB) cut the backlog, and more
// of it is on the broker now.
func TestNotCaughtUpWhileBehindTheHighWatermark(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	// 3 MiB, uncompressed, in produce batches of 64 KiB each, so that a
	// fetch can stop between two of them.
	value := []byte(strings.Repeat("x", 16<<10))
	const total = 192
	for i := 0; i < total; i += 4 {
		var recs []*kgo.Record
		for range 4 {
			recs = append(recs, &kgo.Record{Topic: "t", Partition: 0, Value: value})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	src, h := openCaughtUpSource(ctx, t, c.ListenAddrs(), 1_000_000, 4<<20)
	got := pollUntil(ctx, t, src, h, total)
	if len(got) < 2 {
		t.Fatalf("batches = %v: one fetch returned all 3 MiB, so the test does not cut the backlog", got)
	}
	for i, b := range got {
		if last := i == len(got)-1; b.caughtUp != last {
			t.Fatalf("batches (records/caught up) = %v: only the last one may claim the source caught up", got)
		}
	}
}

// Guarantee: the client's buffers are sized from the pipeline's in-flight
// byte limit, which the runtime hands over before Open: a fetch is a
// sixty-fourth of it (at least 1 MiB, at most 50 MiB), one partition's part at
// most 1 MiB, and two fetches at most are buffered at once; fetch_max_bytes,
// when set, replaces the derived fetch size. Without a limit the runtime's
// default (64 MiB) applies.
func TestFetchBuffersFollowTheInFlightLimit(t *testing.T) {
	c := kafkatest.Fake(t, "t", 1)
	for _, tc := range []struct {
		name                   string
		inFlight               int64
		fetchMaxBytes          int32
		wantFetch, wantPerPart int32
	}{
		{"default limit", 0, 0, 1 << 20, 1 << 20},
		{"large limit", 512 << 20, 0, 8 << 20, 1 << 20},
		{"huge limit", 8 << 30, 0, 50 << 20, 1 << 20},
		{"small limit", 8 << 20, 0, 1 << 20, 1 << 20},
		{"fetch_max_bytes set", 512 << 20, 256 << 10, 256 << 10, 256 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			cfg := kafka.NewConfig()
			cfg.Brokers = c.ListenAddrs()
			cfg.Group = "g-" + strings.ReplaceAll(tc.name, " ", "-")
			cfg.Topics = []string{"t"}
			cfg.FetchMaxBytes = tc.fetchMaxBytes
			src, err := kafka.New("in", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.inFlight > 0 {
				src.LimitReadAhead(tc.inFlight)
			}
			if err := src.Open(ctx, kafkatest.NewHost()); err != nil {
				t.Fatal(err)
			}
			defer src.Close(context.Background())
			fetch := kafka.ClientOpt(src, kgo.FetchMaxBytes)
			part := kafka.ClientOpt(src, kgo.FetchMaxPartitionBytes)
			conc := kafka.ClientOpt(src, kgo.MaxConcurrentFetches)
			if fetch != tc.wantFetch || part != tc.wantPerPart || conc != 2 {
				t.Fatalf("client fetch max bytes %v, partition bytes %v, concurrent fetches %v; want %d, %d, 2",
					fetch, part, conc, tc.wantFetch, tc.wantPerPart)
			}
		})
	}
}

// Guarantee: in a pipeline, a Kafka source that caught up has its sinks
// flush at once, not at their max_age (an hour here): a backlog's tail is
// durable and committed without waiting. The
// runtime hands the source its in-flight byte limit before Open, so the
// client's fetches are sized from max_in_flight_bytes with no other option.
// One partition: with two, the client may fetch the second only after the
// source claimed it caught up with the first, and the runtime honours one
// claim per max_age (see caughtup.go), so the second would wait the hour.
func TestPipelineFlushesWhenKafkaCaughtUp(t *testing.T) {
	ctx := testCtx(t)
	c := kafkatest.Fake(t, "t", 1)
	cl := kafkatest.Client(t, c.ListenAddrs())
	kafkatest.Produce(ctx, t, cl, "t", 1, 60)

	cfg := kafka.NewConfig()
	cfg.Brokers = c.ListenAddrs()
	cfg.Group = "g"
	cfg.Topics = []string{"t"}
	cfg.MaxPollRecords = 7 // the backlog takes several polls
	src, err := kafka.New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	mem := &conformance.MemSink{}
	spec := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "in", Source: src, MaxInFlightBytes: 256 << 20}},
		Sinks: []pipeline.SinkSpec{{Name: "out", Inputs: []string{"in"}, Sink: mem,
			Batch: pipeline.BatchSettings{MaxAge: time.Hour}}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 50 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(runCtx, spec, pipeline.WithLogger(testLogger())) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	waitCommitted(ctx, t, cl, "g", "t", 60)
	if n := len(mem.Values()); n != 60 {
		t.Fatalf("%d records durable, want 60", n)
	}
	if got := kafka.ClientOpt(src, kgo.FetchMaxBytes); got != int32(4<<20) {
		t.Errorf("client fetch max bytes %v under max_in_flight_bytes 256 MiB, want 4 MiB (a sixty-fourth)", got)
	}
}
