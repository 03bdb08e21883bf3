//go:build integration

package postgres_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var killSeed = flag.Uint64("pgkill.seed", 0, "seed of the kill schedule (0: derived from the clock)")

const (
	killFiles        = 4
	killLinesPerFile = 1 << 19 // 4 × 524,288 ≈ 2.1M lines
	// Kills land uniformly between minKillDelay and a bound after each
	// start; a start (process, pool, table check) takes about 100 ms of it.
	// The bound follows the progress, so that the job is not done before
	// the kills the test needs, whatever the machine's speed: it shrinks
	// when the stored positions are ahead of the kills, and grows up to
	// maxKillDelay when they are behind.
	minKillDelay = 100 * time.Millisecond
	maxKillDelay = 1500 * time.Millisecond
)

// The pipeline under test: file → filter (drops ids divisible by 5) →
// postgres, in insert mode into a table without a key, so that a record
// written twice is a second row. Small groups make many transactions, so
// that kills land in every phase of one, and make the job long enough for
// 20 kills before it is done.
const killYAML = `
sources:
  in:
    type: file
    paths: [%[1]s/input/*.ndjson]
    format: ndjson
    mode: once
    data_dir: %[1]s/state
transforms:
  kept:
    type: filter
    inputs: [in]
    condition: 'id %% 5 != 0'
sinks:
  db:
    type: postgres
    inputs: [kept]
    url: %[2]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: ev
    create_table: true
    columns:
      - { name: id, type: bigint }
      - { name: pad, type: text }
    batch: { max_records: 2000, max_age: 20ms }
checkpoint:
  commit_interval: 100ms
metrics: { address: "off" }
`

const killKeepSQL = "g % 5 <> 0"

// killScenario is one kill run's directory, input and checks.
type killScenario struct {
	t     *testing.T
	bin   string
	dir   string
	db    string
	conn  *pgx.Conn
	env   []string
	ends  [killFiles][]int64 // end offset of every line, by file
	kills int
	start time.Time
	// verified[f] is how many lines of file f the checks found in the table.
	verified [killFiles]int
	losses   []string // stored positions found past rows the table lacks
}

func newKillScenario(t *testing.T, bin string, env []string) *killScenario {
	db := pgtest.Database(t)
	sc := &killScenario{t: t, bin: bin, dir: t.TempDir(), db: db, conn: pgtest.Connect(t, db), env: env}
	sc.generate()
	// The checks look rows up by id at every kill.
	if _, err := sc.conn.Exec(ctx, `CREATE TABLE ev (id bigint, pad text); CREATE INDEX ev_id ON ev (id)`); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(killYAML, sc.dir, db)
	if err := os.WriteFile(filepath.Join(sc.dir, "weir.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return sc
}

func (sc *killScenario) generate() {
	in := filepath.Join(sc.dir, "input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		sc.t.Fatal(err)
	}
	var line []byte
	for f := range killFiles {
		fd, err := os.Create(filepath.Join(in, fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			sc.t.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		var off int64
		sc.ends[f] = make([]int64, killLinesPerFile)
		for i := range killLinesPerFile {
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(f*killLinesPerFile+i), 10)
			line = append(line, `,"pad":"0123456789abcdef0123456789abcdef"}`+"\n"...)
			w.Write(line)
			off += int64(len(line))
			sc.ends[f][i] = off
		}
		if err := w.Flush(); err != nil {
			sc.t.Fatal(err)
		}
		fd.Close()
	}
}

// run starts weir, kills it after a random delay, checks, and restarts, until
// it has been killed minKills times and then exits by itself (after maxKills
// kills it is left to finish). It returns the seed.
func (sc *killScenario) run(minKills, maxKills int) uint64 {
	t := sc.t
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill schedule seed %d (replay with -pgkill.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := filepath.Join(sc.dir, "weir.yaml")
	sc.start = time.Now()
	bound := 600 * time.Millisecond
	deadline := time.Now().Add(3 * time.Minute)
	for start := 0; ; start++ {
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: not finished after %d starts", seed, start)
		}
		p := startWeir(t, sc.bin, cfg, "weir", sc.env)
		var kill <-chan time.Time
		if sc.kills < maxKills {
			kill = time.After(minKillDelay + time.Duration(rng.Int64N(int64(bound-minKillDelay))))
		}
		select {
		case <-p.Done:
			if p.Err != nil {
				t.Fatalf("seed %d: weir exited with %v:\n%s", seed, p.Err, weirtest.Tail(p.Log, 30))
			}
			if sc.kills < minKills {
				t.Fatalf("seed %d: the pipeline finished after %d kills; the test needs %d (lower maxKillDelay)", seed, sc.kills, minKills)
			}
			t.Logf("the final run:\n%s", weirtest.Tail(p.Log, 12))
			sc.check("end")
			passwordIn(t, p.Log)
			return seed
		case <-kill:
			p.Kill()
			sc.kills++
			done := sc.check(fmt.Sprintf("kill %d", sc.kills))
			bound = weirtest.KillBound(bound, done, sc.kills, minKills, minKillDelay+50*time.Millisecond, maxKillDelay)
		}
	}
}

// partInode reads the inode from a file partition's name
// (`<inode>@<birth time>#<hash>`, or `<device>:<inode>#<hash>` where the
// filesystem has no birth times; docs/file-connectors.md).
var partInode = regexp.MustCompile(`^(?:\d+:)?(\d+)[@#]`)

// fileOf returns the input file a partition name is the name of.
func (sc *killScenario) fileOf(part string) (int, bool) {
	m := partInode.FindStringSubmatch(part)
	if m == nil {
		return 0, false
	}
	ino, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	for f := range killFiles {
		fi, err := os.Stat(filepath.Join(sc.dir, "input", fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			sc.t.Fatal(err)
		}
		if fi.Sys().(*syscall.Stat_t).Ino == ino {
			return f, true
		}
	}
	return 0, false
}

// check is the invariant at a kill: a stored position is never past a row
// the table lacks. The runtime skips, after a restart, every record below the
// stored position; a position past a missing row would lose it for good.
// It returns the share of the input the stored positions cover.
func (sc *killScenario) check(when string) (done float64) {
	defer func(t0 time.Time) {
		sc.t.Logf("%s at %v: %.1f%% stored, checked in %v", when, time.Since(sc.start).Round(time.Millisecond), 100*done, time.Since(t0).Round(time.Millisecond))
	}(time.Now())
	rows, err := sc.conn.Query(ctx, `SELECT partition, position FROM weir_positions WHERE sink = 'db'`)
	if err != nil {
		if pg, ok := errors.AsType[*pgconn.PgError](err); ok && pg.Code == "42P01" {
			// Killed before the positions table was made, or the unsafe
			// sink, which makes none: the rows written say how far the run
			// got, so that the kill schedule keeps up with it.
			var n int64
			if err := sc.conn.QueryRow(ctx, `SELECT count(*) FROM ev`).Scan(&n); err != nil {
				return 0
			}
			return min(1, float64(n)/float64(killFiles*killLinesPerFile*4/5))
		}
		sc.t.Fatalf("%s: reading positions: %v", when, err)
	}
	var stored [killFiles]int64
	for rows.Next() {
		var part string
		var pos int64
		if err := rows.Scan(&part, &pos); err != nil {
			sc.t.Fatal(err)
		}
		f, ok := sc.fileOf(part)
		if !ok {
			sc.t.Fatalf("positions row for partition %q names no input file", part)
		}
		stored[f] = pos
	}
	if err := rows.Err(); err != nil {
		sc.t.Fatal(err)
	}
	var total, covered int64
	for f := range killFiles {
		total += sc.ends[f][killLinesPerFile-1]
		covered += stored[f]
	}
	done = float64(covered) / float64(total)
	for f := range killFiles {
		// Lines before the stored position: those ending at or before it.
		// Rows are never removed, so only lines past the last check need a look.
		n := sort.Search(killLinesPerFile, func(i int) bool { return sc.ends[f][i] > stored[f] })
		if n <= sc.verified[f] {
			continue
		}
		lo := int64(f * killLinesPerFile)
		var missing int64
		err := sc.conn.QueryRow(ctx, `SELECT count(*) FROM generate_series($1::bigint, $2::bigint - 1) AS g
			WHERE g % 5 <> 0 AND NOT EXISTS (SELECT 1 FROM ev WHERE ev.id = g)`, lo+int64(sc.verified[f]), lo+int64(n)).Scan(&missing)
		sc.verified[f] = n
		if err != nil {
			sc.t.Fatal(err)
		}
		if missing > 0 {
			sc.losses = append(sc.losses, fmt.Sprintf("%s: file %d: the stored position %d covers %d lines, %d of whose rows are missing",
				when, f, stored[f], n, missing))
		}
	}
	return done
}

func (sc *killScenario) tally() tally {
	return count(sc.t, sc.conn, "ev", killFiles*killLinesPerFile, killKeepSQL)
}

// Exactly-once under SIGKILL: about 2M lines, at least 20 kills at random
// moments, then a clean run; the table holds every expected row exactly once.
func TestKillExactlyOnce(t *testing.T) {
	sc := newKillScenario(t, bins.Build(t, ""), nil)
	seed := sc.run(20, 30)
	c := sc.tally()
	t.Logf("seed %d: %d kills; %d rows, %d distinct, %d missing, %d unexpected", seed, sc.kills, c.rows, c.distinct, c.missing, c.unexpected)
	for _, l := range sc.losses {
		t.Errorf("seed %d: %s", seed, l)
	}
	if c.missing != 0 || c.duplicates() != 0 || c.unexpected != 0 {
		t.Fatalf("seed %d: %d missing, %d duplicates, %d unexpected rows; want 0, 0, 0", seed, c.missing, c.duplicates(), c.unexpected)
	}
}

// The sink built with unsafe_positions stores no positions: it is only
// at-least-once, and the same checks must count its duplicates.
func TestKillUnsafeVariantIsCaught(t *testing.T) {
	sc := newKillScenario(t, bins.Build(t, "unsafe_positions"), []string{"WEIR_UNSAFE_POSITIONS=1"})
	seed := sc.run(6, 6)
	c := sc.tally()
	t.Logf("seed %d: %d kills; %d rows, %d distinct, %d missing", seed, sc.kills, c.rows, c.distinct, c.missing)
	if c.missing != 0 {
		t.Fatalf("seed %d: %d rows missing: even the unsafe variant is at-least-once", seed, c.missing)
	}
	if c.duplicates() == 0 {
		t.Fatalf("seed %d: the sink without positions wrote no duplicate over %d kills: the test cannot tell exactly-once from at-least-once", seed, sc.kills)
	}
}
