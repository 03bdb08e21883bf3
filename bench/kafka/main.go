// Command kafka benchmarks weir's Kafka source against a real broker. It
// produces N records into a topic once (a later run with the same -records,
// -size and -partitions reuses the topic), then measures, in turns, several
// runs each of:
//
//   - bare:        a plain franz-go consume loop reading every record, in a
//     fresh consumer group per run like weir (so both pay the same join),
//     with no commits;
//   - bare-file:   the same loop writing every value and a newline to NDJSON
//     chunk files as weir's file sink does by default (a chunk per group of
//     the runtime's default size, written to a hidden file, fsynced, renamed,
//     directory fsynced), all on the polling goroutine: what a hand-written
//     consumer with weir's durability costs, without weir;
//   - blackhole:   weir, kafka source (a fresh consumer group per run) →
//     blackhole sink, acknowledgements on;
//   - file:        weir, kafka source → file sink (NDJSON, fsync on flush);
//   - file-linger: file with batch.linger set to -compare-linger (50ms), the
//     setting that flushed a backlog's tail early before sources said when
//     they caught up; compare it with file under -end idle;
//   - kafka:       weir, kafka source → kafka sink (a new topic per run,
//     acks=all, snappy); not among the default cases;
//   - kafka-eos, file-eos: kafka and file with exactly_once: true (the Kafka
//     sink with a positions topic and transactional ids of the run's own);
//     run them beside kafka and file, in one series, for the ratio;
//   - stall:       weir, kafka source → file sink whose groups never become
//     durable (Persist waits for ever): the pipeline holds what its limits
//     allow and no more, for -stall-for, while RSS is sampled; not among the
//     default cases.
//
// Every run is a child process of its own (this command started again), so
// that its CPU time (getrusage of the child) and peak RSS (its VmHWM,
// sampled: proc.Peak says why not the rusage's maxrss) are its own; the
// child also samples its RSS every 50 ms. A weir run is built from YAML by
// package config and run by pipeline.Run, as `weir run` does; a thin wrapper
// around the sink counts the records it wrote and those of every group it
// made durable.
//
// How a weir run ends is -end's choice:
//
//   - stop (the default): once the sink has been handed the N-th record the
//     run is stopped gracefully, as by SIGTERM: the sink flushes its last
//     group, the source commits. The run is over when pipeline.Run returned,
//     and the benchmark then checks that the group's committed offsets cover
//     all N records. This measures throughput with default settings and
//     includes weir's final flush and commit.
//   - idle: the pipeline keeps running until all N records are durable: the
//     last partial group is flushed when the source says it caught up (or at
//     batch.max_age, -max-age, or after -linger); the commit of the end is
//     awaited and reported separately. This measures a live pipeline's
//     latency to durability more than throughput.
//
// It reports records/s from the start of the run (client creation, group
// join) to the last record, CPU µs per record (user + sys of the child) and
// peak RSS, as medians with their min–max, and the ratios weir/bare. (A rate
// from the first record on would flatter the bare loop: its first poll
// returns only after the client has prefetched a large part of the topic.)
//
//	bash .ci/kafka.sh start
//	go run ./bench/kafka                         # 5M records of ~100 bytes, 3 runs each
//	go run ./bench/kafka -records 1000000 -runs 5 -end idle -cases bare,file,file-linger
//	go run ./bench/kafka -records 10000000 -runs 1 -cases stall -stall-for 20s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/weir-etl/weir/bench/internal/proc"
)

var (
	brokers  = flag.String("brokers", envOr("WEIR_KAFKA_BROKERS", "127.0.0.1:9092"), "broker address")
	records  = flag.Int("records", 5_000_000, "records to produce and read")
	size     = flag.Int("size", 100, "approximate record value size in bytes")
	parts    = flag.Int("partitions", 12, "partitions of the topic")
	runs     = flag.Int("runs", 3, "runs of each case")
	cases    = flag.String("cases", "bare,bare-file,blackhole,file", "cases to run, comma-separated (also file-linger, kafka, kafka-eos, file-eos, stall)")
	cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of each run to <this>-<case>-<run>.pprof")
	memProf  = flag.String("memprofile", "", "write a heap profile of each run, taken at its largest heap sampled, to <this>-<case>-<run>.pprof")
	maxAge   = flag.Duration("max-age", 0, "the sink's batch.max_age (0: the default, 1s); the last partial group waits at most this long")
	maxRecs  = flag.Int("max-records", 0, "the sink's batch.max_records (0: the default): records per flush at most, so per file chunk for the file sink")
	linger   = flag.Duration("linger", 0, "the sink's batch linger (0: off, the default): flush the last partial group once the input has been idle this long")
	cmpLing  = flag.Duration("compare-linger", 50*time.Millisecond, "the linger of the file-linger case")
	trFile   = flag.String("trace", "", "write an execution trace of each run to <this>-<case>-<run>.trace (go tool trace)")
	pollRecs = flag.Int("max-poll-records", 0, "the source's max_poll_records (0: the default)")
	inFlight = flag.Int64("max-in-flight-bytes", 0, "the source's max_in_flight_bytes (0: the default)")
	outDir   = flag.String("dir", os.TempDir(), "where the file sink writes (a fresh directory inside it per run)")
	endMode  = flag.String("end", "stop", "how a weir run ends: stop (gracefully, once the sink has every record) or idle (once the sink flushed every record on its own)")
	overlap  = flag.Int("overlap", 0, "the sink's batch.overlap (0: the default); -1 hides the sink's Seal so that it flushes synchronously")
	stallFor = flag.Duration("stall-for", 10*time.Second, "how long the stall case runs with its sink stalled")
	child    = flag.String("child", "", "run this one case in this process and print its measure (used by the command itself)")
	childRun = flag.Int("run", 0, "the run number of -child")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// measure is one run, as the child reports it: from start to the last
// record, to the moment the sink was handed it, from the last record to the
// group's commit of the end; the RSS samples (MB, every 50 ms); and, for the
// stall case, the records the sink was handed.
type measure struct {
	Total, Written, Commit time.Duration
	RSS                    []float64
	Records                int64
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *endMode != "stop" && *endMode != "idle" {
		log.Fatalf("-end %q: use stop or idle", *endMode)
	}
	if *child != "" {
		runChild(*child, *childRun)
		return
	}
	ctx := context.Background()
	topic := topicName()
	if err := ensureTopic(ctx, topic); err != nil {
		log.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	type result struct{ total, written, commit, cpu, busy, rss []float64 }
	results := map[string]*result{}
	names := strings.Split(*cases, ",")
	for run := 1; run <= *runs; run++ {
		for _, c := range names {
			busy0, all0 := machineTicks()
			m, cpu, peak, err := spawn(self, c, run)
			if err != nil {
				log.Fatalf("%s run %d: %v", c, run, err)
			}
			r := results[c]
			if r == nil {
				r = &result{}
				results[c] = r
			}
			if c == "stall" {
				reportStall(run, m, peak)
				continue
			}
			r.total = append(r.total, float64(*records)/m.Total.Seconds())
			if m.Written > 0 {
				r.written = append(r.written, float64(*records)/m.Written.Seconds())
			}
			r.commit = append(r.commit, m.Commit.Seconds())
			r.cpu = append(r.cpu, cpu.Seconds()*1e6/float64(*records))
			r.rss = append(r.rss, peak)
			if busy1, all1 := machineTicks(); all1 > all0 {
				r.busy = append(r.busy, float64(busy1-busy0)/float64(all1-all0))
			}
			fmt.Printf("run %d %-11s %9.0f rec/s  %.2f CPU µs/record  peak RSS %5.0f MB  (%.2fs, last record written at %.2fs, group committed the end +%.2fs later)\n",
				run, c, r.total[len(r.total)-1], r.cpu[len(r.cpu)-1], peak, m.Total.Seconds(), m.Written.Seconds(), m.Commit.Seconds())
		}
	}
	fmt.Printf("\n%d records of ~%d bytes, %d partitions, %d runs, end %s, max_age %v, max_records %d, linger %v, overlap %d; medians (min–max):\n",
		*records, *size, *parts, *runs, *endMode, *maxAge, *maxRecs, *linger, *overlap)
	b, bf, fl := results["bare"], results["bare-file"], results["file-linger"]
	for _, c := range names {
		r := results[c]
		if c == "stall" || r == nil {
			continue
		}
		line := fmt.Sprintf("%-11s %9.0f rec/s (%s)  %.2f CPU µs/record (%s)  peak RSS %.0f MB (%s)", c,
			median(r.total), spread(r.total, "%.2fM", 1e-6), median(r.cpu), spread(r.cpu, "%.2f", 1), median(r.rss), spread(r.rss, "%.0f", 1))
		if len(r.busy) > 0 {
			line += fmt.Sprintf("  machine %2.0f%% busy", 100*median(r.busy))
		}
		if c == "file" && bf != nil {
			line += fmt.Sprintf("  weir/bare-file %.2f", median(r.total)/median(bf.total))
		}
		if c == "file" && fl != nil {
			line += fmt.Sprintf("  file/file-linger %.2f", median(r.total)/median(fl.total))
		}
		if alo := results[strings.TrimSuffix(c, "-eos")]; strings.HasSuffix(c, "-eos") && alo != nil {
			line += fmt.Sprintf("  exactly-once/at-least-once %.2f, CPU per record %.2f", median(r.total)/median(alo.total), median(r.cpu)/median(alo.cpu))
		}
		if b != nil && c != "bare" {
			label := "weir"
			if strings.HasPrefix(c, "bare") {
				label = c
			}
			line += fmt.Sprintf("  %s/bare %.2f, CPU bare/%s %.2f", label, median(r.total)/median(b.total), label, median(b.cpu)/median(r.cpu))
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

// spawn runs case c in a child process and returns its measure, its CPU
// time and its peak RSS in MB.
func spawn(self, c string, run int) (measure, time.Duration, float64, error) {
	args := append(slices.Clone(os.Args[1:]), "-child", c, "-run", fmt.Sprint(run))
	cmd := exec.Command(self, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		return measure{}, 0, 0, fmt.Errorf("child: %v", err)
	}
	peak := proc.Watch(cmd.Process.Pid)
	err := cmd.Wait()
	rss := peak.Stop()
	if err != nil {
		return measure{}, 0, 0, fmt.Errorf("child: %v", err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var m measure
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		return measure{}, 0, 0, fmt.Errorf("child's answer %q: %v", out.String(), err)
	}
	return m, cpu, rss, nil
}

// reportStall prints how RSS moved while the sink was stalled: per second,
// the largest sample.
func reportStall(run int, m measure, peak float64) {
	fmt.Printf("run %d stall: the sink was handed %d records before it stalled for good; peak RSS %.0f MB; RSS by second (MB):", run, m.Records, peak)
	per := int(time.Second / rssEvery)
	for i := 0; i < len(m.RSS); i += per {
		fmt.Printf(" %.0f", slices.Max(m.RSS[i:min(i+per, len(m.RSS))]))
	}
	fmt.Println()
}

// machineTicks returns the machine's busy and total CPU time in clock ticks,
// from /proc/stat (zeros where it cannot be read): the broker, weir and
// anything else share the cores, and a run that keeps them all busy is bound
// by CPU, not by waiting.
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
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// spread formats the min–max of xs, each scaled and formatted with f.
func spread(xs []float64, f string, scale float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf(f+"–"+f, slices.Min(xs)*scale, slices.Max(xs)*scale)
}

func topicName() string { return fmt.Sprintf("weir-bench-%d-%d-%d", *records, *size, *parts) }
