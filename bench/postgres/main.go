// Command postgres benchmarks weir's PostgreSQL sink end to end with the real
// binary: NDJSON files → postgres, in insert mode (COPY, positions stored in
// the same transaction) and in upsert mode, against psql's \copy of the same
// rows (one COPY, one transaction: the server's pace with a client that does
// nothing per row) and a bare Go loop that reads the same files, decodes each
// line and COPYs the same rows with pgx in groups of the same size, one
// transaction each, and the least a client holding per-group positions can
// do (bareText: psql's input held in memory, COPYed in groups with a
// positions row each, on one or two connections). The cases take turns, run after run; it reports medians
// of rows/s, of the client's CPU per row, and of the CPU per row of the
// server backends that served it (sampled from /proc: the server must run on
// this machine), the ratios to psql and to the bare loop, and the load
// average. On a machine whose cores are all busy, the wall-clock ratio tends
// to the ratio of total CPU. Every run starts from an empty table and
// state; the server runs with fsync on.
//
//	bash .ci/postgres.sh start && eval "$(bash .ci/postgres.sh env)"
//	go run ./bench/postgres                         # 1M records, 3 runs of each case
//	go run ./bench/postgres -runs 5 -group 50000 -case 'psql,weir insert'
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
	group   = flag.Int("group", 0, "rows per transaction (the sink's batch.max_records; 0 leaves it to its default, which adapts, and gives the bare loop 10000)")
	bin2    = flag.String("bin2", "", "a second weir binary, run beside the first in insert mode (\"weir insert, bin2\"), to compare two versions")
	runs    = flag.Int("runs", 3, "runs of each case; medians are reported")
	binFlag = flag.String("bin", "", "weir binary (default: build ./cmd/weir)")
	only    = flag.String("case", "", "run only cases whose name contains one of these, comma-separated")
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
    batch: { %[5]smax_age: 1s }
metrics: { address: "off" }
`

const tableDDL = `DROP TABLE IF EXISTS bench; DROP TABLE IF EXISTS weir_positions;
CREATE TABLE bench (id bigint PRIMARY KEY, usr text, amount numeric, ok boolean, tag text)`

// sample is one run: its wall time, the client's CPU time, and the CPU time
// of the server processes that served its connections.
type sample struct {
	wall, cpu, server time.Duration
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
	copyText(in, filepath.Join(dir, "rows.copy"))
	fmt.Printf("input: %d records, %d files, %.1f MB (%.0f bytes a record); batch.max_records %d (0: the default, adapted)\n",
		*records, *files, float64(size)/1e6, float64(size)/float64(*records), *group)

	type bcase struct {
		name string
		run  func() sample
	}
	cases := []bcase{
		{"bare pgx COPY loop", func() sample { return bare(db, in, false) }},
		{"bare COPY, rows in memory", func() sample { return bare(db, in, true) }},
		{"psql \\copy", func() sample { return psqlCopy(db, dir) }},
		{"bare text COPY, 1 conn", func() sample { return bareText(db, dir, 1) }},
		{"bare text COPY, 2 conns", func() sample { return bareText(db, dir, 2) }},
		{"weir insert", func() sample { return weir(bin, db, dir, in, "insert") }},
		{"weir upsert", func() sample { return weir(bin, db, dir, in, "upsert") }},
	}
	if *bin2 != "" {
		cases = append(cases, bcase{"weir insert, bin2", func() sample { return weir(*bin2, db, dir, in, "insert") }})
	}
	// The cases take turns, run after run, so that a change in the
	// machine's load falls on all of them alike.
	var chosen []bcase
	for _, c := range cases {
		if caseChosen(c.name) {
			chosen = append(chosen, c)
		}
	}
	all := map[string][]sample{}
	load0 := loadAvg()
	for range *runs {
		for _, c := range chosen {
			reset(db)
			stop := watchServer(db)
			sm := c.run()
			sm.server = stop()
			all[c.name] = append(all[c.name], sm)
			check(db)
		}
	}
	med := map[string]sample{}
	fmt.Printf("load average (1 min) %s before, %s after\n", load0, loadAvg())
	fmt.Printf("\n%-26s %10s %7s %9s %9s %9s   %s\n", "case", "rows/s", "wall s", "client", "server", "total", "runs (wall)")
	fmt.Printf("%-26s %10s %7s %9s %9s %9s\n", "", "", "", "CPU µs/r", "CPU µs/r", "CPU µs/r")
	us := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(*records) }
	for _, c := range chosen {
		ss := all[c.name]
		m := median(ss)
		med[c.name] = m
		fmt.Printf("%-26s %10.0f %7.2f %9.3f %9.3f %9.3f   %s\n", c.name, float64(*records)/m.wall.Seconds(), m.wall.Seconds(),
			us(m.cpu), us(m.server), us(m.cpu+m.server), walls(ss))
	}
	for _, bn := range []string{"bare pgx COPY loop", "bare COPY, rows in memory", "bare text COPY, 1 conn", "bare text COPY, 2 conns", "psql \\copy"} {
		b, ok := med[bn]
		if !ok {
			continue
		}
		for _, n := range []string{"weir insert", "weir upsert", "weir insert, bin2"} {
			if w, ok := med[n]; ok {
				fmt.Printf("%s / %s: throughput %.2f, total CPU %.2f\n", n, bn, b.wall.Seconds()/w.wall.Seconds(),
					(b.cpu+b.server).Seconds()/(w.cpu+w.server).Seconds())
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
	size := *group
	if size == 0 {
		size = 10000
	}
	rows := make([][]any, 0, size)
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
		if len(rows) == size {
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
	batch := ""
	if *group > 0 {
		batch = fmt.Sprintf("max_records: %d, ", *group)
	}
	if err := os.WriteFile(cfg, fmt.Appendf(nil, pipelineYAML, in, run, db, mode, batch), 0o600); err != nil {
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
	return sample{wall: pick(func(s sample) time.Duration { return s.wall }), cpu: pick(func(s sample) time.Duration { return s.cpu }),
		server: pick(func(s sample) time.Duration { return s.server })}
}

func walls(ss []sample) string {
	var p []string
	for _, s := range ss {
		p = append(p, strconv.FormatFloat(s.wall.Seconds(), 'f', 2, 64)+"s")
	}
	return strings.Join(p, " ")
}

// copyText writes the input's rows in COPY's text format to path, for psql.
func copyText(in, path string) {
	fd, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(fd, 1<<20)
	decodeFiles(in, func(r []any) {
		n := r[2].(pgtype.Numeric)
		v, _ := n.Value()
		fmt.Fprintf(w, "%d\t%s\t%s\t%t\t%s\n", r[0], r[1], v, r[3], r[4])
	})
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	fd.Close()
}

// bareText is the least a client holding per-group positions can do: psql's
// input, already in COPY's text format, is read into memory before the
// clock starts and cut into groups at line ends (-group rows, or 100,000,
// the most the sink's adapted groups reach); each group is one transaction
// of a COPY and an upsert of a positions row, as the sink's insert mode
// writes, on conns connections taking groups in turn (the sink overlaps two
// groups by default). Connecting is timed, as it is for psql and weir.
func bareText(db, dir string, conns int) sample {
	b, err := os.ReadFile(filepath.Join(dir, "rows.copy"))
	if err != nil {
		log.Fatal(err)
	}
	size := *group
	if size == 0 {
		size = 100_000
	}
	var groups [][]byte
	for len(b) > 0 {
		end, n := 0, 0
		for end < len(b) && n < size {
			i := bytes.IndexByte(b[end:], '\n')
			if i < 0 {
				end = len(b)
				break
			}
			end += i + 1
			n++
		}
		groups = append(groups, b[:end])
		b = b[end:]
	}
	setup := connect(db)
	if _, err := setup.Exec(ctx, `CREATE TABLE IF NOT EXISTS bare_positions (part text PRIMARY KEY, pos bigint NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	setup.Close(ctx)
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	work := make(chan int, len(groups))
	for i := range groups {
		work <- i
	}
	close(work)
	errs := make(chan error, conns)
	for range conns {
		go func() {
			c := connect(db)
			defer c.Close(ctx)
			for i := range work {
				tx, err := c.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				if _, err := c.PgConn().CopyFrom(ctx, bytes.NewReader(groups[i]), "COPY bench (id, usr, amount, ok, tag) FROM STDIN"); err != nil {
					errs <- err
					return
				}
				if _, err := tx.Exec(ctx, `INSERT INTO bare_positions VALUES ($1, $2) ON CONFLICT (part) DO UPDATE SET pos = GREATEST(bare_positions.pos, EXCLUDED.pos)`, "p", int64(i)); err != nil {
					errs <- err
					return
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			log.Fatalf("bare text COPY: %v", err)
		}
	}
	wall := time.Since(start)
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	return sample{wall: wall, cpu: cpu}
}

// psqlCopy loads the rows with psql's \copy, one COPY in one transaction:
// the server's pace with a client that does no work of its own per row.
func psqlCopy(db, dir string) sample {
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db,
		"-c", `\copy bench (id, usr, amount, ok, tag) FROM '`+filepath.Join(dir, "rows.copy")+`'`)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+os.Getenv("WEIR_POSTGRES_PASSWORD"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("psql: %v\n%s", err, stderr.String())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

func caseChosen(name string) bool {
	if *only == "" {
		return true
	}
	for _, w := range strings.Split(*only, ",") {
		if w != "" && strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// loadAvg is the machine's one-minute load average, from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// watchServer samples, every 50 ms until the returned function is called,
// the CPU time of the server's backends for the benchmark database (read
// from /proc: the server must run on this machine), and returns their sum
// at the last sample. The server's shared processes (WAL writer,
// checkpointer) are left out; the last 50 ms of a backend may be missed.
func watchServer(db string) func() time.Duration {
	c := connect(db)
	quit, done := make(chan struct{}), make(chan time.Duration)
	go func() {
		defer c.Close(ctx)
		seen := map[int]time.Duration{}
		sampleOnce := func() {
			rows, err := c.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
			if err != nil {
				return
			}
			pids, _ := pgx.CollectRows(rows, pgx.RowTo[int32])
			for _, p := range pids {
				if t, ok := procCPU(int(p)); ok && t > seen[int(p)] {
					seen[int(p)] = t
				}
			}
		}
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sampleOnce()
			case <-quit:
				var sum time.Duration
				for _, v := range seen {
					sum += v
				}
				done <- sum
				return
			}
		}
	}()
	return func() time.Duration { close(quit); return <-done }
}

// procCPU is the user and system time of process pid, from /proc/pid/stat.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(ut+st) * tick, true
}
