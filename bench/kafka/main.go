// Command kafka benchmarks weir's Kafka source against a real broker. It
// produces N records into a topic once (a later run with the same -records
// and -size reuses the topic), then measures, in turns, several runs each of:
//
//   - bare:      a plain franz-go consume loop reading every record, in a fresh
//     consumer group per run like weir (so both pay the same join), with no
//     commits;
//   - bare-file: the same loop writing every value and a newline to NDJSON
//     chunk files as weir's file sink does by default (a chunk per group of
//     the runtime's default size, written to a hidden file, fsynced, renamed,
//     directory fsynced), all on the polling goroutine: what a hand-written
//     consumer with weir's durability costs, without weir;
//   - blackhole: weir, in this process, kafka source (a fresh consumer group
//     per run) → blackhole sink, acknowledgements on;
//   - file:      weir, kafka source → file sink (NDJSON, fsync on flush);
//   - kafka:     weir, kafka source → kafka sink (a new topic per run, acks=all,
//     snappy); not among the default cases.
//
// A weir run is built from YAML by package config and run by pipeline.Run, as
// `weir run` does; a thin wrapper around the sink counts the records it
// wrote and those of every group it made durable.
//
// How a weir run ends is -end's choice:
//
//   - stop (the default): once the sink has been handed the N-th record the
//     run is stopped gracefully, as by SIGTERM: the sink flushes its last
//     group, the source commits. The run is over when pipeline.Run returned,
//     and the benchmark then checks that the group's committed offsets cover
//     all N records. This measures throughput with default settings and
//     includes weir's final flush and commit.
//   - idle: the pipeline keeps running until all N records are durable, which
//     for the last partial group takes the sink's batch.max_age (1s by
//     default, -max-age) or linger (-linger, off by default); the commit of
//     the end is awaited and reported separately. This measures a live
//     pipeline's latency to durability more than throughput.
//
// It reports records/s from the start of the run (client creation, group
// join) to the last record, as medians, and the ratio weir/bare. (A rate from
// the first record on would flatter the bare loop: its first poll returns
// only after the client has prefetched a large part of the topic.)
//
//	bash .ci/kafka.sh start
//	go run ./bench/kafka                         # 5M records of ~100 bytes, 3 runs each
//	go run ./bench/kafka -records 2000000 -runs 5
package main

import (
	"bufio"
	"context"
	"errors"
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
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"

	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/sink/kafka"
	_ "github.com/weir-etl/weir/source/kafka"
)

var (
	brokers  = flag.String("brokers", envOr("WEIR_KAFKA_BROKERS", "127.0.0.1:9092"), "broker address")
	records  = flag.Int("records", 5_000_000, "records to produce and read")
	size     = flag.Int("size", 100, "approximate record value size in bytes")
	parts    = flag.Int("partitions", 12, "partitions of the topic")
	runs     = flag.Int("runs", 3, "runs of each case")
	cases    = flag.String("cases", "bare,bare-file,blackhole,file", "cases to run, comma-separated")
	cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of all runs to this file")
	maxAge   = flag.Duration("max-age", 0, "the sink's batch.max_age (0: the default, 1s); the last partial group waits this long")
	maxRecs  = flag.Int("max-records", 0, "the sink's batch.max_records (0: the default): records per flush at most, so per file chunk for the file sink")
	linger   = flag.Duration("linger", 0, "the sink's batch linger (0: off, the default): flush the last partial group once the input has been idle this long")
	trFile   = flag.String("trace", "", "write an execution trace of all runs to this file (go tool trace)")
	pollRecs = flag.Int("max-poll-records", 0, "the source's max_poll_records (0: the default)")
	outDir   = flag.String("dir", os.TempDir(), "where the file sink writes (a fresh directory inside it per run)")
	endMode  = flag.String("end", "stop", "how a weir run ends: stop (gracefully, once the sink has every record) or idle (once the sink flushed every record on its own)")
	overlap  = flag.Int("overlap", 0, "the sink's batch.overlap (0: the default); -1 hides the sink's Seal so that it flushes synchronously")
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
	if *endMode != "stop" && *endMode != "idle" {
		log.Fatalf("-end %q: use stop or idle", *endMode)
	}
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
	type result struct{ total, written, commit, cpu, busy []float64 }
	results := map[string]*result{}
	names := strings.Split(*cases, ",")
	for run := 1; run <= *runs; run++ {
		for _, c := range names {
			var m measure
			var err error
			cpu0 := cpuTime()
			busy0, all0 := machineTicks()
			switch c {
			case "bare":
				m, err = bare(ctx, topic, nil)
			case "bare-file":
				m, err = bareFile(ctx, topic)
			case "blackhole", "file", "kafka":
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
			r.cpu = append(r.cpu, (cpuTime()-cpu0).Seconds()*1e6/float64(*records))
			if busy1, all1 := machineTicks(); all1 > all0 {
				r.busy = append(r.busy, float64(busy1-busy0)/float64(all1-all0))
			}
			fmt.Printf("run %d %-9s %9.0f rec/s  %.2f CPU µs/record  (%.2fs, last record written at %.2fs, group committed the end +%.2fs later)\n",
				run, c, r.total[len(r.total)-1], r.cpu[len(r.cpu)-1], m.total.Seconds(), m.written.Seconds(), m.commit.Seconds())
		}
	}
	fmt.Printf("\n%d records of ~%d bytes, %d partitions, %d runs, end %s, max_age %v, max_records %d, linger %v, overlap %d; medians:\n", *records, *size, *parts, *runs, *endMode, *maxAge, *maxRecs, *linger, *overlap)
	b, bf := results["bare"], results["bare-file"]
	for _, c := range names {
		r := results[c]
		line := fmt.Sprintf("%-9s %9.0f rec/s  %.2f CPU µs/record", c, median(r.total), median(r.cpu))
		if len(r.busy) > 0 {
			line += fmt.Sprintf("  machine %2.0f%% busy", 100*median(r.busy))
		}
		if c == "file" && bf != nil {
			line += fmt.Sprintf("  weir/bare-file %.2f", median(r.total)/median(bf.total))
		}
		if b != nil && c != "bare" {
			label := "weir"
			if c == "bare-file" {
				label = c
			}
			line += fmt.Sprintf("  %s/bare %.2f", label, median(r.total)/median(b.total))
			if *endMode == "idle" {
				line += fmt.Sprintf("  final commit +%.2fs", median(r.commit))
			}
			if len(r.written) > 0 {
				line += fmt.Sprintf("  (all written, not yet flushed: %.0f rec/s, weir/bare %.2f)", median(r.written), median(r.written)/median(b.total))
			}
		}
		fmt.Println(line)
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineTicks returns the machine's busy and total CPU time in clock ticks,
// from /proc/stat (zeros where it cannot be read): the broker, this process
// and anything else share the cores, and a run that keeps them all busy is
// bound by CPU, not by waiting.
func machineTicks() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		var n uint64
		fmt.Sscan(v, &n)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
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
		return fmt.Errorf("creating %s: %w", topic, kafkaclient.Explain(errors.Join(err, resp.Err)))
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
		return fmt.Errorf("producing into %s: %w", topic, kafkaclient.Explain(*e))
	}
	return nil
}

// bare reads every record with a plain consumer, handing each to each (if
// not nil).
func bare(ctx context.Context, topic string, each func(*kgo.Record) error) (measure, error) {
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
	var eerr error
	for n < *records {
		fs := cl.PollRecords(ctx, 10000)
		if err := fs.Err0(); err != nil {
			return measure{}, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if each != nil && eerr == nil {
				eerr = each(r)
			}
		})
		if eerr != nil {
			return measure{}, eerr
		}
	}
	end := time.Now()
	return measure{total: end.Sub(start)}, nil
}

// bareFile is bare writing NDJSON chunks, each made durable and visible like a
// file sink's: hidden file, fsync, rename, directory fsync. A chunk ends where
// the runtime's default group would (pipeline.DefaultBatchMaxRecords records,
// or DefaultBatchMaxBytes counted as record.Record.Size counts them). The last
// partial chunk is completed after the loop.
func bareFile(ctx context.Context, topic string) (measure, error) {
	dir, err := os.MkdirTemp(*outDir, "weir-bench-kafka-bare-")
	if err != nil {
		return measure{}, err
	}
	defer os.RemoveAll(dir)
	chunkRecs, chunkBytes := pipeline.DefaultBatchMaxRecords, int64(pipeline.DefaultBatchMaxBytes)
	if *maxRecs > 0 {
		chunkRecs = *maxRecs
	}
	var (
		f        *os.File
		bw       = bufio.NewWriterSize(nil, 256<<10)
		n        int
		accBytes int64
		seq      int
	)
	finish := func() error {
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		final := filepath.Join(dir, fmt.Sprintf("part-%06d.ndjson", seq))
		if err := os.Rename(f.Name(), final); err != nil {
			return err
		}
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		f = nil
		return d.Sync()
	}
	start := time.Now()
	m, err := bare(ctx, topic, func(r *kgo.Record) error {
		if f == nil {
			seq++
			var err error
			if f, err = os.OpenFile(filepath.Join(dir, fmt.Sprintf(".part-%06d.tmp", seq)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
				return err
			}
			bw.Reset(f)
		}
		bw.Write(r.Value)
		bw.WriteByte('\n')
		n++
		accBytes += int64(len(r.Value) + len(r.Key) + 64)
		if n >= chunkRecs || accBytes >= chunkBytes {
			n, accBytes = 0, 0
			return finish()
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	if f != nil {
		if err := finish(); err != nil {
			return m, err
		}
	}
	m.total = time.Since(start)
	return m, nil
}

const weirYAML = `
sources:
  in:
    type: kafka
    brokers: [%q]
    group: %s
    topics: [%s]
%s
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
		dir, err := os.MkdirTemp(*outDir, "weir-bench-kafka-")
		if err != nil {
			return measure{}, err
		}
		defer os.RemoveAll(dir)
		opts = fmt.Sprintf("    path: %s\n    format: ndjson\n    compression: none\n", filepath.Join(dir, "out"))
	}
	if sink == "kafka" {
		out := fmt.Sprintf("%s-out-%d-%d", topic, run, time.Now().UnixNano())
		if err := createTopic(ctx, out); err != nil {
			return measure{}, err
		}
		defer deleteTopic(ctx, out)
		opts = fmt.Sprintf("    brokers: [%q]\n    topic: %s\n", *brokers, out)
	}
	var batch []string
	if *maxAge > 0 {
		batch = append(batch, fmt.Sprintf("max_age: %s", *maxAge))
	}
	if *maxRecs > 0 {
		batch = append(batch, fmt.Sprintf("max_records: %d", *maxRecs))
	}
	if *overlap > 0 {
		batch = append(batch, fmt.Sprintf("overlap: %d", *overlap))
	}
	if len(batch) > 0 {
		opts += "    batch: { " + strings.Join(batch, ", ") + " }\n"
	}
	srcOpts := ""
	if *pollRecs > 0 {
		srcOpts = fmt.Sprintf("    max_poll_records: %d", *pollRecs)
	}
	spec, err := config.Parse("bench.yaml", fmt.Appendf(nil, weirYAML, *brokers, group, topic, srcOpts, sink, opts))
	if err != nil {
		return measure{}, err
	}
	spec.Sinks[0].Batch.Linger = *linger
	cs := &countingSink{Sink: spec.Sinks[0].Sink, want: int64(*records), done: make(chan struct{}), all: make(chan struct{})}
	spec.Sinks[0].Sink = cs
	if sl, ok := cs.Sink.(connector.Sealer); ok && *overlap >= 0 {
		spec.Sinks[0].Sink = &countingSealer{countingSink: cs, sealer: sl}
	}

	start := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- pipeline.Run(runCtx, spec, pipeline.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	}()
	if *endMode == "stop" {
		select {
		case <-cs.all:
		case err := <-errc:
			return measure{}, fmt.Errorf("pipeline stopped: %v", err)
		}
		cancel()
		if err := <-errc; err != nil {
			return measure{}, fmt.Errorf("pipeline: %v", err)
		}
		m := measure{total: time.Since(start), written: time.Unix(0, cs.lastIn.Load()).Sub(start)}
		if n := cs.flushed.Load(); n < int64(*records) {
			return m, fmt.Errorf("%d records durable after the stop, want %d", n, *records)
		}
		if n, err := committed(ctx, group); err != nil || n != int64(*records) {
			return m, fmt.Errorf("committed offsets cover %d records after the stop, want %d (%v)", n, *records, err)
		}
		return m, nil
	}
	select {
	case <-cs.done:
	case err := <-errc:
		return measure{}, fmt.Errorf("pipeline stopped: %v", err)
	}
	end := time.Now()
	m := measure{total: end.Sub(start), written: time.Unix(0, cs.lastIn.Load()).Sub(start)}

	// The group's commit of the end: polled, as an external process would.
	for {
		if n, err := committed(ctx, group); err == nil && n == int64(*records) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the broker
	}
	m.commit = time.Since(end)
	cancel()
	return m, <-errc
}

// createTopic creates a topic for the kafka case to write, with -partitions
// partitions.
func createTopic(ctx context.Context, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(*parts), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	return kafkaclient.Explain(err)
}

// deleteTopic deletes a topic the kafka case wrote, ignoring errors.
func deleteTopic(ctx context.Context, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers))
	if err != nil {
		return
	}
	defer cl.Close()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topic)
}

// committed returns the sum of group's committed offsets.
func committed(ctx context.Context, group string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(*brokers))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return 0, err
	}
	var n int64
	offs.Each(func(o kadm.OffsetResponse) { n += o.At })
	return n, nil
}

// countingSink counts the records of every group its sink made durable, and
// closes all when the sink was handed want records, done when want records
// are durable.
type countingSink struct {
	connector.Sink
	want    int64
	pending int64        // records written into the current group; sink goroutine only
	written int64        // records written, flushed or not; sink goroutine only
	lastIn  atomic.Int64 // UnixNano when the last of want records was written
	flushed atomic.Int64
	all     chan struct{}
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
			close(c.all)
		}
	}
	return err
}

func (c *countingSink) Flush(ctx context.Context) error {
	err := c.Sink.Flush(ctx)
	if err == nil {
		c.durable(c.pending)
	}
	c.pending = 0
	return err
}

func (c *countingSink) durable(n int64) {
	if c.flushed.Add(n) >= c.want {
		c.once.Do(func() { close(c.done) })
	}
}

// countingSealer is countingSink for a sink that seals: a group's records
// count once its Persist succeeded.
type countingSealer struct {
	*countingSink
	sealer connector.Sealer
}

func (c *countingSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	g, err := c.sealer.Seal(ctx)
	if err != nil {
		return nil, err
	}
	n := c.pending
	c.pending = 0
	return &countedGroup{SealedGroup: g, c: c.countingSink, n: n}, nil
}

type countedGroup struct {
	connector.SealedGroup
	c *countingSink
	n int64
}

func (g *countedGroup) Persist(ctx context.Context) error {
	err := g.SealedGroup.Persist(ctx)
	if err == nil {
		g.c.durable(g.n)
	}
	return err
}

func (c *countingSink) Abort(ctx context.Context) error {
	c.pending = 0
	return c.Sink.Abort(ctx)
}
