// Command kafka benchmarks weir's Kafka source against a real broker. It
// produces N records into a topic once (a later run with the same -records
// and -size reuses the topic), then measures, in turns, several runs each of:
//
//   - bare:      a plain franz-go consume loop reading every record, in a fresh
//     consumer group per run like weir (so both pay the same join), with no
//     commits;
//   - blackhole: weir, in this process, kafka source (a fresh consumer group
//     per run) → blackhole sink, acknowledgements on;
//   - file:      weir, kafka source → file sink (NDJSON, fsync on flush).
//
// A weir run is built from YAML by package config and run by pipeline.Run, as
// `weir run` does; a thin wrapper around the sink counts the records of every
// group the sink flushed. A run is over when all N records are durable in the
// sink; the time to the group's final commit is reported separately.
//
// The last partial group of a run waits for the sink's batch.max_age (1s by
// default) before it is flushed, which dominates a sub-second run; the rate
// to the moment every record was written (not yet flushed) is printed too,
// and -max-age sets the sink's max_age. -linger sets the sink's linger
// (pipeline.BatchSettings.Linger, off by default), which flushes that group
// once the input has been idle for it instead.
//
// It reports records/s from the start of the run (client creation, group
// join) to the last record, as medians, and the ratio weir/bare. (A rate from
// the first record on would flatter the bare loop: its first poll returns
// only after the client has prefetched a large part of the topic.)
//
//	bash .ci/kafka.sh start
//	go run ./bench/kafka                         # 1M records of ~100 bytes, 3 runs each
//	go run ./bench/kafka -records 2000000 -runs 5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"

	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/source/kafka"
)

var (
	brokers = flag.String("brokers", envOr("WEIR_KAFKA_BROKERS", "127.0.0.1:9092"), "broker address")
	records = flag.Int("records", 1_000_000, "records to produce and read")
	size    = flag.Int("size", 100, "approximate record value size in bytes")
	parts   = flag.Int("partitions", 12, "partitions of the topic")
	runs    = flag.Int("runs", 3, "runs of each case")
	cases   = flag.String("cases", "bare,blackhole,file", "cases to run, comma-separated")
	cpuProf = flag.String("cpuprofile", "", "write a CPU profile of all runs to this file")
	maxAge  = flag.Duration("max-age", 0, "the sink's batch.max_age (0: the default, 1s); the last partial group waits this long")
	maxRecs = flag.Int("max-records", 0, "the sink's batch.max_records (0: the default, 10000): records per flush, so per file chunk for the file sink")
	linger  = flag.Duration("linger", 0, "the sink's batch linger (0: off, the default): flush the last partial group once the input has been idle this long")
	trFile  = flag.String("trace", "", "write an execution trace of all runs to this file (go tool trace)")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if *trFile != "" {
		f, err := os.Create(*trFile)
		if err != nil {
			log.Fatal(err)
		}
		if err := trace.Start(f); err != nil {
			log.Fatal(err)
		}
		defer trace.Stop()
	}
	topic := fmt.Sprintf("weir-bench-%d-%d-%d", *records, *size, *parts)
	if err := ensureTopic(ctx, topic); err != nil {
		log.Fatal(err)
	}
	type result struct{ total, written, commit []float64 }
	results := map[string]*result{}
	names := strings.Split(*cases, ",")
	for run := 1; run <= *runs; run++ {
		for _, c := range names {
			var m measure
			var err error
			switch c {
			case "bare":
				m, err = bare(ctx, topic)
			case "blackhole", "file":
				m, err = weir(ctx, topic, c, run)
			default:
				log.Printf("unknown case %q", c)
				return
			}
			if err != nil {
				log.Printf("%s run %d: %v", c, run, err)
				return
			}
			r := results[c]
			if r == nil {
				r = &result{}
				results[c] = r
			}
			r.total = append(r.total, float64(*records)/m.total.Seconds())
			if m.written > 0 {
				r.written = append(r.written, float64(*records)/m.written.Seconds())
			}
			r.commit = append(r.commit, m.commit.Seconds())
			fmt.Printf("run %d %-9s %9.0f rec/s  (%.2fs, last record written at %.2fs, group committed the end +%.2fs later)\n",
				run, c, r.total[len(r.total)-1], m.total.Seconds(), m.written.Seconds(), m.commit.Seconds())
		}
	}
	fmt.Printf("\n%d records of ~%d bytes, %d partitions, %d runs, max_age %v, max_records %d, linger %v; medians:\n", *records, *size, *parts, *runs, *maxAge, *maxRecs, *linger)
	b := results["bare"]
	for _, c := range names {
		r := results[c]
		line := fmt.Sprintf("%-9s %9.0f rec/s", c, median(r.total))
		if b != nil && c != "bare" {
			line += fmt.Sprintf("  weir/bare %.2f  final commit +%.2fs", median(r.total)/median(b.total), median(r.commit))
			if len(r.written) > 0 {
				line += fmt.Sprintf("  (all written, not yet flushed: %.0f rec/s, weir/bare %.2f)", median(r.written), median(r.written)/median(b.total))
			}
		}
		fmt.Println(line)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// measure is one run: from start to the last record, and from the last record
// to the group's commit of the end.
type measure struct{ total, written, commit time.Duration }

// ensureTopic creates topic with N records unless it already holds them.
func ensureTopic(ctx context.Context, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if ends, err := adm.ListEndOffsets(ctx, topic); err == nil && ends.Error() == nil {
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		if n == int64(*records) {
			log.Printf("reusing topic %s with %d records", topic, n)
			return nil
		}
		_, _ = adm.DeleteTopics(ctx, topic)
	}
	if resp, err := adm.CreateTopic(ctx, int32(*parts), 1, nil, topic); err != nil || resp.Err != nil {
		return fmt.Errorf("creating %s: %v %v", topic, err, resp.Err)
	}
	log.Printf("producing %d records into %s", *records, topic)
	pad := strings.Repeat("x", max(0, *size-45))
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for i := 0; i < *records; i++ {
		wg.Add(1)
		v := fmt.Appendf(nil, `{"id":%d,"region":"r%d","pad":"%s"}`, i, i%7, pad)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % *parts), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(&err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return *e
	}
	return nil
}

// bare reads every record with a plain consumer.
func bare(ctx context.Context, topic string) (measure, error) {
	start := time.Now()
	group := fmt.Sprintf("%s-bare-%d", topic, time.Now().UnixNano())
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(50<<20))
	if err != nil {
		return measure{}, err
	}
	defer cl.Close()
	n := 0
	for n < *records {
		fs := cl.PollRecords(ctx, 10000)
		if err := fs.Err0(); err != nil {
			return measure{}, err
		}
		fs.EachRecord(func(*kgo.Record) { n++ })
	}
	end := time.Now()
	return measure{total: end.Sub(start)}, nil
}

const weirYAML = `
sources:
  in:
    type: kafka
    brokers: [%q]
    group: %s
    topics: [%s]
sinks:
  out:
    type: %s
    inputs: [in]
%s
checkpoint:
  commit_interval: 1s
metrics:
  address: "off"
`

// weir runs the pipeline kafka → sink in this process.
func weir(ctx context.Context, topic, sink string, run int) (measure, error) {
	group := fmt.Sprintf("%s-%s-%d-%d", topic, sink, run, time.Now().UnixNano())
	opts := ""
	if sink == "file" {
		dir, err := os.MkdirTemp("", "weir-bench-kafka-")
		if err != nil {
			return measure{}, err
		}
		defer os.RemoveAll(dir)
		opts = fmt.Sprintf("    path: %s\n    format: ndjson\n    compression: none\n", filepath.Join(dir, "out"))
	}
	var batch []string
	if *maxAge > 0 {
		batch = append(batch, fmt.Sprintf("max_age: %s", *maxAge))
	}
	if *maxRecs > 0 {
		batch = append(batch, fmt.Sprintf("max_records: %d, max_bytes: 256MiB", *maxRecs))
	}
	if len(batch) > 0 {
		opts += "    batch: { " + strings.Join(batch, ", ") + " }\n"
	}
	spec, err := config.Parse("bench.yaml", fmt.Appendf(nil, weirYAML, *brokers, group, topic, sink, opts))
	if err != nil {
		return measure{}, err
	}
	spec.Sinks[0].Batch.Linger = *linger
	cs := &countingSink{Sink: spec.Sinks[0].Sink, want: int64(*records), done: make(chan struct{})}
	spec.Sinks[0].Sink = cs

	start := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- pipeline.Run(runCtx, spec, pipeline.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	}()
	select {
	case <-cs.done:
	case err := <-errc:
		return measure{}, fmt.Errorf("pipeline stopped: %v", err)
	}
	end := time.Now()
	m := measure{total: end.Sub(start), written: time.Unix(0, cs.lastIn.Load()).Sub(start)}

	// The group's commit of the end: polled, an external process.
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers))
	if err != nil {
		return m, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			var n int64
			offs.Each(func(o kadm.OffsetResponse) { n += o.At })
			if n == int64(*records) {
				break
			}
		}
		time.Sleep(10 * time.Millisecond) // polling the broker
	}
	m.commit = time.Since(end)
	cancel()
	return m, <-errc
}

// countingSink counts the records of every group its sink flushed, and closes
// done when want records are durable.
type countingSink struct {
	connector.Sink
	want    int64
	pending int64        // records written into the current group; sink goroutine only
	written int64        // records written, flushed or not; sink goroutine only
	lastIn  atomic.Int64 // UnixNano when the last of want records was written
	flushed atomic.Int64
	done    chan struct{}
	once    sync.Once
}

func (c *countingSink) Write(ctx context.Context, recs []record.Record) error {
	err := c.Sink.Write(ctx, recs)
	if err == nil {
		c.pending += int64(len(recs))
		c.written += int64(len(recs))
		if c.written >= c.want && c.lastIn.Load() == 0 {
			c.lastIn.Store(time.Now().UnixNano())
		}
	}
	return err
}

func (c *countingSink) Flush(ctx context.Context) error {
	err := c.Sink.Flush(ctx)
	if err == nil {
		if c.flushed.Add(c.pending) >= c.want {
			c.once.Do(func() { close(c.done) })
		}
	}
	c.pending = 0
	return err
}

func (c *countingSink) Abort(ctx context.Context) error {
	c.pending = 0
	return c.Sink.Abort(ctx)
}
