// Command postgres benchmarks weir's PostgreSQL sink end to end with the real
// binary: NDJSON files → postgres, in insert mode (COPY, positions stored in
// the same transaction) and in upsert mode, against a bare Go loop that
// reads the same files, decodes each line and COPYs the same rows with pgx in
// groups of the same size, one transaction each. It reports rows/s, the ratio
// to the bare loop and weir's CPU seconds, as medians of several runs. Every
// run starts from an empty table and state; the server runs with fsync on.
//
//	bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"
//	go run ./bench/postgres                         # 1M records, 3 runs of each case
//	go run ./bench/postgres -runs 5 -group 20000
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var (
	records = flag.Int("records", 1_000_000, "input records")
	files   = flag.Int("files", 4, "input files (partitions)")
	group   = flag.Int("group", 10000, "rows per transaction (the sink's batch.max_records)")
	runs    = flag.Int("runs", 3, "runs of each case; medians are reported")
	binFlag = flag.String("bin", "", "weir binary (default: build ./cmd/weir)")
	only    = flag.String("case", "", "run only cases whose name contains this")
)

var ctx = context.Background()

const pipelineYAML = `
sources:
  in: { type: file, paths: [%[1]s/*.ndjson], format: ndjson, mode: once, data_dir: %[2]s/state }
sinks:
  db:
    type: postgres
    inputs: [in]
    url: %[3]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: bench
    mode: %[4]s
    key: [id]
    columns:
      - { name: id, type: bigint }
      - { name: usr, type: text, field: user }
      - { name: amount, type: numeric }
      - { name: ok, type: boolean }
      - { name: tag, type: text }
    batch: { max_records: %[5]d, max_age: 1s }
metrics: { address: "off" }
`

const tableDDL = `DROP TABLE IF EXISTS bench; DROP TABLE IF EXISTS weir_positions;
CREATE TABLE bench (id bigint PRIMARY KEY, usr text, amount numeric, ok boolean, tag text)`

type sample struct {
	wall, cpu time.Duration
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	base := os.Getenv("WEIR_POSTGRES_URL")
	if base == "" {
		log.Fatal(`WEIR_POSTGRES_URL is not set: bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"`)
	}
	dir, err := os.MkdirTemp("", "weir-bench-postgres-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := database(base)
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
	fmt.Printf("input: %d records, %d files, %.1f MB (%.0f bytes a record); %d rows per transaction\n",
		*records, *files, float64(size)/1e6, float64(size)/float64(*records), *group)

	type bcase struct {
		name string
		run  func() sample
	}
	cases := []bcase{
		{"bare pgx COPY loop", func() sample { return bare(db, in, false) }},
		{"bare COPY, rows in memory", func() sample { return bare(db, in, true) }},
		{"weir insert", func() sample { return weir(bin, db, dir, in, "insert") }},
		{"weir upsert", func() sample { return weir(bin, db, dir, in, "upsert") }},
	}
	med := map[string]sample{}
	fmt.Printf("\n%-26s %12s %8s %8s   %s\n", "case", "rows/s", "wall s", "CPU s", "runs")
	for _, c := range cases {
		if !strings.Contains(c.name, *only) {
			continue
		}
		var ss []sample
		for range *runs {
			reset(db)
			ss = append(ss, c.run())
			check(db)
		}
		m := median(ss)
		med[c.name] = m
		fmt.Printf("%-26s %12.0f %8.2f %8.2f   %s\n", c.name, float64(*records)/m.wall.Seconds(), m.wall.Seconds(), m.cpu.Seconds(), walls(ss))
	}
	for _, bn := range []string{"bare pgx COPY loop", "bare COPY, rows in memory"} {
		b, ok := med[bn]
		if !ok {
			continue
		}
		for _, n := range []string{"weir insert", "weir upsert"} {
			if w, ok := med[n]; ok {
				fmt.Printf("%s / %s throughput: %.2f\n", n, bn, b.wall.Seconds()/w.wall.Seconds())
			}
		}
	}
}

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

// database makes a fresh database for the benchmark and returns its URL.
func database(base string) string {
	c := connect(base)
	defer c.Close(ctx)
	for _, q := range []string{"DROP DATABASE IF EXISTS weir_bench WITH (FORCE)", "CREATE DATABASE weir_bench"} {
		if _, err := c.Exec(ctx, q); err != nil {
			log.Fatalf("%s: %v", q, err)
		}
	}
	i := strings.LastIndex(base, "/")
	return base[:i] + "/weir_bench"
}

func reset(db string) {
	c := connect(db)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, tableDDL); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
		log.Fatal(err)
	}
}

func check(db string) {
	c := connect(db)
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM bench").Scan(&n); err != nil {
		log.Fatal(err)
	}
	if n != *records {
		log.Fatalf("the table holds %d rows, want %d", n, *records)
	}
}

// generate writes the input: about 100 bytes a record.
func generate(dir string) int64 {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	var total int64
	var line []byte
	for f := range *files {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%02d.ndjson", f)))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		for i := f; i < *records; i += *files {
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(i), 10)
			line = append(line, `,"user":"user-`...)
			line = strconv.AppendInt(line, int64(i%100000), 10)
			line = append(line, `","amount":`...)
			line = strconv.AppendInt(line, int64(i%99991), 10)
			line = append(line, `.25,"ok":true,"tag":"abcdefghijklmnopqrstuvwxyz0123456789"}`...)
			line = append(line, '\n')
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

// bare is the loop a Go programmer would write: read each file line by line,
// decode the line (numbers kept exact with json.Number), and COPY the rows
// with pgx in groups of -group rows, one transaction each. It stores no
// positions: it is the work weir does, less the bookkeeping that makes
// weir's output exactly-once. With inMemory, every row is decoded before
// the clock starts, and only the COPY loop is timed: the server's pace, an
// upper bound no pipeline that reads its input can reach.
func bare(db, in string, inMemory bool) sample {
	c := connect(db)
	defer c.Close(ctx)
	var all [][]any
	if inMemory {
		all = make([][]any, 0, *records)
		decodeFiles(in, func(r []any) { all = append(all, r) })
	}
	start := time.Now()
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	rows := make([][]any, 0, *group)
	flush := func() {
		if len(rows) == 0 {
			return
		}
		tx, err := c.Begin(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"bench"}, []string{"id", "usr", "amount", "ok", "tag"}, pgx.CopyFromRows(rows)); err != nil {
			log.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			log.Fatal(err)
		}
		rows = rows[:0]
	}
	add := func(r []any) {
		rows = append(rows, r)
		if len(rows) == *group {
			flush()
		}
	}
	if inMemory {
		for _, r := range all {
			add(r)
		}
	} else {
		decodeFiles(in, add)
	}
	flush()
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	return sample{wall: time.Since(start), cpu: cpu}
}

// decodeFiles reads the input files line by line and hands each line's row
// to add.
func decodeFiles(in string, add func([]any)) {
	paths, _ := filepath.Glob(filepath.Join(in, "*.ndjson"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			log.Fatal(err)
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			line := b[:i]
			b = b[i+1:]
			var r struct {
				ID     int64       `json:"id"`
				User   string      `json:"user"`
				Amount json.Number `json:"amount"`
				OK     bool        `json:"ok"`
				Tag    string      `json:"tag"`
			}
			d := json.NewDecoder(bytes.NewReader(line))
			d.UseNumber()
			if err := d.Decode(&r); err != nil {
				log.Fatal(err)
			}
			var amount pgtype.Numeric
			if err := amount.Scan(string(r.Amount)); err != nil {
				log.Fatal(err)
			}
			add([]any{r.ID, r.User, amount, r.OK, r.Tag})
		}
	}
}

// weir runs the binary once on a fresh state directory.
func weir(bin, db, dir, in, mode string) sample {
	run := filepath.Join(dir, "run")
	os.RemoveAll(run)
	cfg := filepath.Join(dir, "weir.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, pipelineYAML, in, run, db, mode, *group), 0o600); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-c", cfg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("weir: %v\n%s", err, stderr.String())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

func median(ss []sample) sample {
	pick := func(f func(sample) time.Duration) time.Duration {
		v := make([]time.Duration, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return sample{wall: pick(func(s sample) time.Duration { return s.wall }), cpu: pick(func(s sample) time.Duration { return s.cpu })}
}

func walls(ss []sample) string {
	var p []string
	for _, s := range ss {
		p = append(p, strconv.FormatFloat(s.wall.Seconds(), 'f', 2, 64)+"s")
	}
	return strings.Join(p, " ")
}
