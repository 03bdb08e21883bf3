// Command iceberg benchmarks weir's Iceberg sink end to end with the real
// binary, against the file sink writing parquet on the same data in the same
// run: NDJSON files → iceberg (a SQL catalog on SQLite, and on PostgreSQL
// when WEIR_POSTGRES_URL is set; a local warehouse) and NDJSON files → file
// sink, format parquet. Both make each group durable (fsync) and write it
// as zstd parquet; the Iceberg sink also converts every value to its column
// type exactly, writes manifests and commits a snapshot with its positions.
// Runs alternate between the cases, so that a busy moment of the machine
// falls on all of them. It reports records/s, CPU seconds and CPU µs per
// record (user+sys of the process), as medians with their min–max, the
// ratio iceberg/parquet, and the sink's commit latency (from the start of a
// group's commit to the catalog's answer, data files included, as its run
// summary gives it).
//
//	go run ./bench/iceberg                       # 1M records, 5 runs of each case
//	go run ./bench/iceberg -runs 7 -group 200000
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	records = flag.Int("records", 1_000_000, "input records")
	files   = flag.Int("files", 4, "input files (partitions)")
	group   = flag.Int("group", 100_000, "records per group (batch.max_records): one snapshot, or one parquet chunk, each")
	runs    = flag.Int("runs", 5, "runs of each case; medians are reported")
	binFlag = flag.String("bin", "", "weir binary (default: build ./cmd/weir)")
	only    = flag.String("case", "", "run only cases whose name contains this")
)

const pipelineYAML = `
sources:
  in: { type: file, paths: [%[1]s/*.ndjson], format: ndjson, mode: once, data_dir: %[2]s/state }
sinks:
  out:
    inputs: [in]
%[3]s
    batch: { max_records: %[4]d, max_bytes: 512MiB, max_age: 10s }
metrics: { address: "off" }
`

const parquetSink = `    type: file
    path: %[1]s/out
    format: parquet
    compression: zstd`

const icebergSink = `    type: iceberg
    catalog: { type: sql, uri: %[2]q, password_env: WEIR_POSTGRES_PASSWORD, warehouse: %[1]s/warehouse }
    namespace: bench
    table: ev
    create_table: true
    cleanup_min_age: 0s
    properties: { write.parquet.compression-codec: zstd }
    columns:
      - { name: id, type: long, required: true }
      - { name: user, type: string }
      - { name: amount, type: "decimal(12,2)" }
      - { name: ok, type: boolean }
      - { name: ts, type: timestamptz }
      - { name: tag, type: string }`

type sample struct {
	wall, cpu time.Duration
	commitMS  float64 // the iceberg sink's mean commit latency
	maxMS     float64
}

type bcase struct {
	name    string
	sink    func(dir string) string
	samples []sample
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	dir, err := os.MkdirTemp("", "weir-bench-iceberg-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(dir, "weir")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/weir")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("building weir (run from the repository root): %v", err)
		}
	}
	in := filepath.Join(dir, "input")
	size := generate(in)
	fmt.Printf("input: %d records, %d files, %.1f MB (%.0f bytes a record); %d records per group\n",
		*records, *files, float64(size)/1e6, float64(size)/float64(*records), *group)

	cases := []*bcase{
		{name: "file sink, parquet", sink: func(d string) string { return fmt.Sprintf(parquetSink, d) }},
		{name: "iceberg, SQLite catalog", sink: func(d string) string {
			return fmt.Sprintf(icebergSink, d, "sqlite://"+d+"/catalog.db")
		}},
	}
	if base := os.Getenv("WEIR_POSTGRES_URL"); base != "" {
		db := database(base)
		cases = append(cases, &bcase{name: "iceberg, PostgreSQL catalog", sink: func(d string) string {
			resetCatalog(db)
			return fmt.Sprintf(icebergSink, d, db)
		}})
	}
	cases = slices.DeleteFunc(cases, func(c *bcase) bool { return !strings.Contains(c.name, *only) })
	for r := range *runs {
		for _, c := range cases {
			c.samples = append(c.samples, run(bin, filepath.Join(dir, fmt.Sprintf("run-%d", r)), in, c))
		}
	}
	fmt.Printf("\n%-28s %12s %8s %8s %10s %14s   %s\n", "case", "records/s", "wall s", "CPU s", "CPU µs/rec", "commit ms", "wall s of each run")
	med := map[string]sample{}
	for _, c := range cases {
		m := median(c.samples)
		med[c.name] = m
		commit := ""
		if m.commitMS > 0 {
			commit = fmt.Sprintf("%.0f (max %.0f)", m.commitMS, m.maxMS)
		}
		fmt.Printf("%-28s %12.0f %8.2f %8.2f %10.2f %14s   %s\n", c.name, float64(*records)/m.wall.Seconds(), m.wall.Seconds(), m.cpu.Seconds(),
			float64(m.cpu.Microseconds())/float64(*records), commit, walls(c.samples))
	}
	if p, ok := med["file sink, parquet"]; ok {
		for _, n := range []string{"iceberg, SQLite catalog", "iceberg, PostgreSQL catalog"} {
			if m, ok := med[n]; ok {
				fmt.Printf("%s / parquet file sink: throughput %.2f, CPU %.2f\n", n, p.wall.Seconds()/m.wall.Seconds(), m.cpu.Seconds()/p.cpu.Seconds())
			}
		}
	}
}

var commitLine = regexp.MustCompile(`commits ([0-9.]+) ms on average \(most ([0-9.]+) ms\)`)

// run runs weir once over in with c's sink, from an empty state and output.
func run(bin, dir, in string, c *bcase) sample {
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	cfg := filepath.Join(dir, "weir.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, pipelineYAML, in, dir, c.sink(dir), *group), 0o600); err != nil {
		log.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("%s: %v\n%s", c.name, err, stderr.String())
	}
	s := sample{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if m := commitLine.FindStringSubmatch(stderr.String()); m != nil {
		s.commitMS, _ = strconv.ParseFloat(m[1], 64)
		s.maxMS, _ = strconv.ParseFloat(m[2], 64)
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("%d written", *records)) {
		log.Fatalf("%s: the run did not write every record:\n%s", c.name, stderr.String())
	}
	os.RemoveAll(dir)
	return s
}

func median(ss []sample) sample {
	sorted := func(f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return sample{
		wall:     time.Duration(sorted(func(s sample) float64 { return float64(s.wall) })),
		cpu:      time.Duration(sorted(func(s sample) float64 { return float64(s.cpu) })),
		commitMS: sorted(func(s sample) float64 { return s.commitMS }),
		maxMS:    sorted(func(s sample) float64 { return s.maxMS }),
	}
}

func walls(ss []sample) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%.2f", s.wall.Seconds()))
	}
	return strings.Join(parts, " ")
}

// generate writes the input: about 110 bytes a record.
func generate(dir string) int64 {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	var total int64
	var line []byte
	per := *records / *files
	for f := range *files {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%02d.ndjson", f)))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		n := per
		if f == *files-1 {
			n = *records - per*(*files-1)
		}
		for i := range n {
			id := f*per + i
			line = fmt.Appendf(line[:0], `{"id":%d,"user":"user-%d","amount":%d.%02d,"ok":%t,"ts":"2026-03-01T12:%02d:%02d.%06dZ","tag":"t%d"}`+"\n",
				id, id%9973, id%100000, id%100, id%2 == 0, id/60%60, id%60, id%1000000, id%17)
			w.Write(line)
			total += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			log.Fatal(err)
		}
		fd.Close()
	}
	return total
}

var ctx = context.Background()

func connect(url string) *pgx.Conn {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		log.Fatal(err)
	}
	cfg.Password = os.Getenv("WEIR_POSTGRES_PASSWORD")
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		log.Fatalf("connecting: %v", err)
	}
	return c
}

// database makes a fresh database for the catalog and returns its URL.
func database(base string) string {
	c := connect(base)
	defer c.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS weir_bench_iceberg WITH (FORCE)", "CREATE DATABASE weir_bench_iceberg"} {
		if _, err := c.Exec(ctx, q); err != nil {
			log.Fatalf("%s: %v", q, err)
		}
	}
	return base[:strings.LastIndex(base, "/")] + "/weir_bench_iceberg"
}

// resetCatalog forgets the tables of earlier runs (their files are gone).
func resetCatalog(db string) {
	c := connect(db)
	defer c.Close(ctx)
	_, _ = c.Exec(ctx, "DROP TABLE IF EXISTS iceberg_tables, iceberg_namespace_properties")
}
