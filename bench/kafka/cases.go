package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
	"github.com/weir-etl/weir/pipeline"

	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/sink/kafka"
	_ "github.com/weir-etl/weir/source/kafka"
)

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
	return measure{Total: end.Sub(start)}, nil
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
	m.Total = time.Since(start)
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

// weir runs the pipeline kafka → sink in this process; c is the case.
func weir(ctx context.Context, topic, c string, run int) (measure, error) {
	group := fmt.Sprintf("%s-%s-%d-%d", topic, c, run, time.Now().UnixNano())
	sink := c
	switch c {
	case "file-linger", "stall", "file-eos":
		sink = "file"
	case "kafka-eos":
		sink = "kafka"
	}
	eos := strings.HasSuffix(c, "-eos")
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
		if eos {
			// A positions topic and transactional ids of the run's own.
			opts += fmt.Sprintf("    positions_topic: %s-positions\n    transactional_id: %s-txn\n", out, out)
			defer deleteTopic(ctx, out+"-positions")
		}
	}
	if eos {
		opts += "    exactly_once: true\n"
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
	var srcOpts []string
	if *pollRecs > 0 {
		srcOpts = append(srcOpts, fmt.Sprintf("    max_poll_records: %d", *pollRecs))
	}
	if *inFlight > 0 {
		srcOpts = append(srcOpts, fmt.Sprintf("    max_in_flight_bytes: %d", *inFlight))
	}
	spec, err := config.Parse("bench.yaml", fmt.Appendf(nil, weirYAML, *brokers, group, topic, strings.Join(srcOpts, "\n"), sink, opts))
	if err != nil {
		return measure{}, err
	}
	spec.Sinks[0].Batch.Linger = *linger
	if c == "file-linger" {
		spec.Sinks[0].Batch.Linger = *cmpLing
	}
	cs := &countingSink{Sink: spec.Sinks[0].Sink, want: int64(*records), stall: c == "stall", done: make(chan struct{}), all: make(chan struct{})}
	spec.Sinks[0].Sink = cs
	if sl, ok := cs.Sink.(connector.Sealer); ok && *overlap >= 0 {
		spec.Sinks[0].Sink = &countingSealer{countingSink: cs, sealer: sl}
		if k, ok := cs.Sink.(connector.PositionKeeper); ok {
			// The runtime must see an exactly-once sink as one.
			spec.Sinks[0].Sink = &countingKeeper{countingSealer: spec.Sinks[0].Sink.(*countingSealer), keeper: k}
		}
	}

	start := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- pipeline.Run(runCtx, spec, pipeline.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	}()
	if c == "stall" {
		select {
		case <-time.After(*stallFor):
		case err := <-errc:
			return measure{}, fmt.Errorf("pipeline stopped: %v", err)
		}
		return measure{Total: time.Since(start), Records: cs.written.Load()}, nil
	}
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
		m := measure{Total: time.Since(start), Written: time.Unix(0, cs.lastIn.Load()).Sub(start)}
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
	m := measure{Total: end.Sub(start), Written: time.Unix(0, cs.lastIn.Load()).Sub(start)}

	// The group's commit of the end: polled, as an external process would.
	for {
		if n, err := committed(ctx, group); err == nil && n == int64(*records) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the broker
	}
	m.Commit = time.Since(end)
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
