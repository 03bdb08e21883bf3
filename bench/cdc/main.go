// Command cdc benchmarks weir's PostgreSQL change data capture source against
// a real server (the one .ci/postgres.sh starts). It creates a database with a
// pgbench-like table, one logical replication slot per measured run, then
// commits N inserts in transactions of -txn rows, so that every slot holds
// the same changes; then it measures, in turns, several runs each of:
//
//   - recvlogical: pg_recvlogical with pgoutput, writing the raw stream to
//     /dev/null, until the WAL position after the load: the server's own
//     client, which decodes nothing;
//   - bare:        a plain pglogrepl loop: receive, parse each pgoutput
//     message with pglogrepl.Parse, count the inserts, confirm nothing;
//   - blackhole:   weir, postgres_cdc source (snapshot never) → blackhole
//     sink, acknowledgements on, built from YAML as `weir run` does;
//   - file:        weir, postgres_cdc → file sink (NDJSON, fsync on flush).
//
// A weir run ends once the sink was handed the N-th change: it is stopped
// gracefully (the last group flushes, the source commits), and the slot's
// confirmed position must then be past every change. Rates are changes/s
// from the start of a run (connection included) to its last change; the
// report gives medians and the ratios weir/recvlogical and weir/bare.
//
//	bash .ci/postgres.sh start
//	eval "$(bash .ci/postgres.sh env)"
//	go run ./bench/cdc                      # 200,000 changes, 3 runs each
//	go run ./bench/cdc -changes 500000 -runs 5
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"

	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/file"
	_ "github.com/weir-etl/weir/source/pgcdc"
)

var (
	changes = flag.Int("changes", 200000, "inserts to capture")
	perTxn  = flag.Int("txn", 10, "inserts per transaction")
	runs    = flag.Int("runs", 3, "runs of each case")
	cases   = flag.String("cases", "recvlogical,bare,blackhole,file", "comma-separated cases to run")
	outDir  = flag.String("out", os.TempDir(), "where the file case writes")
	cpuProf = flag.String("cpuprofile", "", "write a CPU profile of the weir runs to this file")
)

const table = `CREATE TABLE orders (id int8 PRIMARY KEY, customer text NOT NULL, amount numeric(12,2) NOT NULL, paid bool NOT NULL, at timestamptz NOT NULL);
CREATE PUBLICATION bench FOR TABLE orders;`

func main() {
	// must panics; the deferred cleanup below (slots, database) runs, and
	// then this reports the error.
	defer func() {
		if r := recover(); r != nil {
			log.Fatal(r)
		}
	}()
	flag.Parse()
	base := os.Getenv("WEIR_POSTGRES_URL")
	if base == "" {
		log.Fatal("WEIR_POSTGRES_URL is not set: bash .ci/postgres.sh start; eval \"$(bash .ci/postgres.sh env)\"")
	}
	ctx := context.Background()
	admin := connect(ctx, base)
	var b [4]byte
	_, _ = rand.Read(b[:])
	db := "weir_bench_" + hex.EncodeToString(b[:])
	must(exec1(ctx, admin, "CREATE DATABASE "+db))
	u, _ := url.Parse(base)
	u.Path = "/" + db
	dbURL := u.String()
	defer func() {
		// Slots one by one: one still active (a walsender on its way out)
		// must not keep the others.
		for range 200 {
			_, _ = admin.Exec(ctx, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`, db)
			rows, err := admin.Query(ctx, `SELECT slot_name FROM pg_replication_slots WHERE database = $1`, db)
			if err != nil {
				break
			}
			left, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			if len(left) == 0 {
				break
			}
			for _, s := range left {
				_, _ = admin.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			log.Printf("dropping database %s: %v", db, err)
		}
	}()
	conn := connect(ctx, dbURL)
	must(exec1(ctx, conn, table))

	names := slices.DeleteFunc(strings.Split(*cases, ","), func(s string) bool { return s == "" })
	slots := map[string][]string{}
	for _, c := range names {
		for r := range *runs {
			s := fmt.Sprintf("%s_%s_%d", db, c, r)
			must(exec1(ctx, conn, fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, s)))
			slots[c] = append(slots[c], s)
		}
	}
	start := time.Now()
	must(exec1(ctx, conn, `SET synchronous_commit = off`))
	must(exec1(ctx, conn, fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
			INSERT INTO orders SELECT g, 'customer-' || (g %% 1000), (g %% 100000) / 100.0, g %% 3 = 0, timestamptz '2026-01-01' + g * interval '1 second'
			FROM generate_series(t * %d, least((t + 1) * %d, %d) - 1) g;
			COMMIT;
		END LOOP; END $$`, (*changes-1) / *perTxn, *perTxn, *perTxn, *changes)))
	var end pglogrepl.LSN
	must(conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()`).Scan(&end))
	fmt.Printf("loaded %d inserts in transactions of %d in %.1fs; %d slots; WAL end %s\n", *changes, *perTxn, time.Since(start).Seconds(), len(names)**runs, end)

	rates := map[string][]float64{}
	for r := range *runs {
		for _, c := range names {
			slot := slots[c][r]
			var d time.Duration
			var err error
			switch c {
			case "recvlogical":
				d, err = recvlogical(ctx, dbURL, slot, end)
			case "bare":
				d, err = bare(ctx, dbURL, slot, end)
			case "blackhole", "file":
				d, err = weir(ctx, dbURL, slot, c)
			default:
				panic(fmt.Sprintf("unknown case %q", c))
			}
			if err != nil {
				panic(fmt.Sprintf("%s run %d: %v", c, r+1, err))
			}
			rate := float64(*changes) / d.Seconds()
			rates[c] = append(rates[c], rate)
			fmt.Printf("run %d %-12s %8.0f changes/s (%.2fs)\n", r+1, c, rate, d.Seconds())
		}
	}
	fmt.Println("medians:")
	for _, c := range names {
		fmt.Printf("  %-12s %8.0f changes/s  %v\n", c, median(rates[c]), round(rates[c]))
	}
	for _, w := range []string{"blackhole", "file"} {
		for _, b := range []string{"recvlogical", "bare"} {
			if len(rates[w]) > 0 && len(rates[b]) > 0 {
				fmt.Printf("  %s / %s = %.2f\n", w, b, median(rates[w])/median(rates[b]))
			}
		}
	}
}

// recvlogical runs pg_recvlogical on slot until the WAL end of the load.
func recvlogical(ctx context.Context, dbURL, slot string, end pglogrepl.LSN) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "pg_recvlogical", "-d", dbURL, "--slot", slot, "--start", "--endpos", end.String(),
		"-o", "proto_version=1", "-o", "publication_names=bench", "-f", "/dev/null", "--no-loop")
	cmd.Env = append(os.Environ(), "PGPASSWORD="+os.Getenv("WEIR_POSTGRES_PASSWORD"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pg_recvlogical: %v: %s", err, out)
	}
	return time.Since(start), nil
}

// bare reads slot with pglogrepl until it has seen every insert.
func bare(ctx context.Context, dbURL, slot string, _ pglogrepl.LSN) (time.Duration, error) {
	start := time.Now()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return 0, err
	}
	cfg.Password = os.Getenv("WEIR_POSTGRES_PASSWORD")
	cfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	if err := pglogrepl.StartReplication(ctx, conn, slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names 'bench'"}}); err != nil {
		return 0, err
	}
	inserts := 0
	for inserts < *changes {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			return 0, err
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok || len(cd.Data) == 0 || cd.Data[0] != pglogrepl.XLogDataByteID {
			if er, ok := msg.(*pgproto3.ErrorResponse); ok {
				return 0, pgconn.ErrorResponseToPgError(er)
			}
			continue
		}
		xld, err := pglogrepl.ParseXLogData(cd.Data[1:])
		if err != nil {
			return 0, err
		}
		m, err := pglogrepl.Parse(xld.WALData)
		if err != nil {
			return 0, err
		}
		if _, ok := m.(*pglogrepl.InsertMessage); ok {
			inserts++
		}
	}
	return time.Since(start), nil
}

const weirYAML = `
sources:
  cdc:
    type: postgres_cdc
    url: %s
    password_env: WEIR_POSTGRES_PASSWORD
    slot: %s
    publication: bench
    snapshot: never
    heartbeat_interval: 0s
sinks:
  out:
    type: %s
    inputs: [cdc]
%s`

// weir runs the pipeline postgres_cdc → sink until the sink was handed every
// change, stops it gracefully, and checks that the slot confirmed them all.
func weir(ctx context.Context, dbURL, slot, sink string) (time.Duration, error) {
	opts := ""
	if sink == "file" {
		dir, err := os.MkdirTemp(*outDir, "weir-bench-cdc-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		opts = fmt.Sprintf("    path: %s/out\n    format: ndjson\n", dir)
	}
	spec, err := config.Parse("bench.yaml", fmt.Appendf(nil, weirYAML, dbURL, slot, sink, opts))
	if err != nil {
		return 0, err
	}
	spec.Metrics.Address = "off"
	cs := &countingSink{Sink: spec.Sinks[0].Sink, want: int64(*changes), all: make(chan struct{})}
	spec.Sinks[0].Sink = cs
	if sl, ok := cs.Sink.(connector.Sealer); ok {
		spec.Sinks[0].Sink = &countingSealer{countingSink: cs, sealer: sl}
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- pipeline.Run(runCtx, spec, pipeline.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	}()
	select {
	case <-cs.all:
	case err := <-errc:
		return 0, fmt.Errorf("pipeline stopped: %v", err)
	}
	d := time.Unix(0, cs.lastIn.Load()).Sub(start)
	cancel()
	if err := <-errc; err != nil {
		return 0, fmt.Errorf("pipeline: %v", err)
	}
	// Every change durable and the slot past the last one.
	conn := connect(ctx, dbURL)
	defer conn.Close(ctx)
	for { // the walsender leaves shortly after the connection closed
		var active bool
		if err := conn.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active); err != nil || !active {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var pending int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', 'bench')`, slot).Scan(&pending)
	if err != nil {
		return 0, err
	}
	if pending != 0 {
		return 0, fmt.Errorf("the slot still holds %d unconfirmed messages after a graceful stop", pending)
	}
	return d, nil
}

// countingSink closes all when the sink was handed want records.
type countingSink struct {
	connector.Sink
	want    int64
	written int64
	lastIn  atomic.Int64
	all     chan struct{}
	once    sync.Once
}

func (c *countingSink) Write(ctx context.Context, recs []record.Record) error {
	err := c.Sink.Write(ctx, recs)
	if err == nil {
		c.written += int64(len(recs))
		if c.written >= c.want {
			c.once.Do(func() {
				c.lastIn.Store(time.Now().UnixNano())
				close(c.all)
			})
		}
	}
	return err
}

type countingSealer struct {
	*countingSink
	sealer connector.Sealer
}

func (c *countingSealer) Seal(ctx context.Context) (connector.SealedGroup, error) {
	return c.sealer.Seal(ctx)
}

func connect(ctx context.Context, u string) *pgx.Conn {
	cfg, err := pgx.ParseConfig(u)
	must(err)
	cfg.Password = os.Getenv("WEIR_POSTGRES_PASSWORD")
	conn, err := pgx.ConnectConfig(ctx, cfg)
	must(err)
	return conn
}

func exec1(ctx context.Context, conn *pgx.Conn, sql string) error {
	_, err := conn.Exec(ctx, sql)
	return err
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func round(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}
