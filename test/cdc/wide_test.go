//go:build integration

package cdc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/weir-etl/weir/internal/testkit/pgcdctest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// wideEnv sets TestWideRowsMemory's cases, as ROWSxBYTES[,ROWSxBYTES], and
// wideSinkEnv its sink (file, the default, which fsyncs and so holds the
// pipeline back; or blackhole). CI runs a smaller case than the issue's,
// which writes 1.5 GB of WAL:
//
//	WEIR_CDC_WIDE=1500x1048576,3000x102400 go test -tags integration -run Wide -v ./test/cdc/
const (
	wideEnv     = "WEIR_CDC_WIDE"
	wideSinkEnv = "WEIR_CDC_WIDE_SINK"
)

// maxWideRSS is the target: the 1,500 rows of 1 MiB in one
// transaction took 1.58 GB.
const maxWideRSS = 300 << 20

const wideYAML = `
sources:
  cdc:
    type: postgres_cdc
    url: %[1]s
    password_env: WEIR_POSTGRES_PASSWORD
    slot: %[2]s
    publication: weir_wide
    create_publication: true
    tables: [wide]
    snapshot: %[4]s
    data_dir: %[5]s/state
    status_interval: 200ms
    heartbeat_interval: 0s
sinks:
  out:
%[3]s
metrics: { address: "off" }
`

var wideSinks = map[string]string{
	"file":      "    type: file\n    inputs: [cdc]\n    path: %s/out\n    template: part",
	"blackhole": "    type: blackhole\n    inputs: [cdc]",
}

// The memory defect: batches were cut by count only (2,000 changes),
// so one transaction of wide rows was held whole while the pipeline waited,
// and max_in_flight_bytes did not stop one batch growing. Batches are now
// cut by bytes (max_batch_bytes, at most an eighth of max_in_flight_bytes).
// One transaction of ROWS rows of BYTES each streams through the real
// binary; its peak RSS (the kernel's maxrss of the child) must stay under
// 300 MB. The figures are logged.
func TestWideRowsMemory(t *testing.T) {
	spec := os.Getenv(wideEnv)
	if spec == "" {
		spec = "400x1048576"
	}
	sink := os.Getenv(wideSinkEnv)
	if sink == "" {
		sink = "file"
	}
	if _, ok := wideSinks[sink]; !ok {
		t.Fatalf("%s=%q: want file or blackhole", wideSinkEnv, sink)
	}
	bin := weirtest.Build(t, t.TempDir(), "")
	for _, c := range strings.Split(spec, ",") {
		rs, bs, ok := strings.Cut(c, "x")
		rows, err1 := strconv.Atoi(rs)
		size, err2 := strconv.Atoi(bs)
		if !ok || err1 != nil || err2 != nil || rows < 1 || size < 32 {
			t.Fatalf("%s=%q: want ROWSxBYTES, comma-separated", wideEnv, spec)
		}
		for _, snapshot := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/snapshot=%v", c, sink, snapshot), func(t *testing.T) { wideCase(t, bin, sink, rows, size, snapshot) })
		}
	}
}

// wideCase streams one transaction of rows rows of size bytes, or with
// snapshot reads them in the initial snapshot (whose chunks were cut at
// snapshot_chunk_rows alone), and checks the peak RSS.
func wideCase(t *testing.T, bin, sink string, rows, size int, snapshot bool) {
	db := pgcdctest.NewDB(t)
	// EXTERNAL: out of line, uncompressed, so that the WAL is the size of
	// the data and the server spends no time compressing it.
	db.Exec(`CREATE TABLE wide (id int8 PRIMARY KEY, pad text); ALTER TABLE wide ALTER COLUMN pad SET STORAGE EXTERNAL`)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "weir.yaml")
	sinkYAML := wideSinks[sink]
	if strings.Contains(sinkYAML, "%s") {
		sinkYAML = fmt.Sprintf(sinkYAML, dir)
	}
	mode := "never"
	if snapshot {
		mode = "initial"
	}
	if err := os.WriteFile(cfg, fmt.Appendf(nil, wideYAML, db.URL, db.Name, sinkYAML, mode, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	insert := func() {
		db.Exec(`INSERT INTO wide SELECT g, repeat(md5(g::text), $1) FROM generate_series(1, $2) AS g`, size/32, rows)
	}
	var began time.Time
	var p *weirtest.Proc
	if snapshot {
		insert()
		began = time.Now()
		p = weirtest.Start(t, bin, filepath.Join(dir, "weir.log"), nil, "run", "-c", cfg)
		pgcdctest.Poll(t, 10*time.Minute, "the snapshot complete", func() bool {
			if !p.Running() {
				t.Fatalf("weir exited: %v\n%s", p.Err, weirtest.Tail(p.Log, 20))
			}
			b, _ := os.ReadFile(p.Log)
			return strings.Contains(string(b), "pgcdc: snapshot complete")
		})
	} else {
		p = weirtest.Start(t, bin, filepath.Join(dir, "weir.log"), nil, "run", "-c", cfg)
		pgcdctest.Poll(t, time.Minute, "the slot streamed", func() bool { return db.Slot(db.Name).Active })
		began = time.Now()
		insert()
		var end pglogrepl.LSN
		if err := db.Conn.QueryRow(bg(), `SELECT pg_current_wal_lsn()`).Scan(&end); err != nil {
			t.Fatal(err)
		}
		pgcdctest.Poll(t, 10*time.Minute, "the transaction delivered and confirmed", func() bool {
			if !p.Running() {
				t.Fatalf("weir exited: %v\n%s", p.Err, weirtest.Tail(p.Log, 20))
			}
			return db.Slot(db.Name).Confirmed >= uint64(end)
		})
	}
	took := time.Since(began)
	if err := p.Stop(t, time.Minute); err != nil {
		t.Fatalf("weir: %v\n%s", err, weirtest.Tail(p.Log, 20))
	}
	ru, ok := p.Cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage")
	}
	rss := ru.Maxrss << 10 // KiB on Linux
	log := weirtest.Tail(p.Log, 8)
	if !strings.Contains(log, fmt.Sprintf("%d records read", rows)) {
		t.Fatalf("the summary does not count %d records:\n%s", rows, log)
	}
	how := "streamed in one transaction"
	if snapshot {
		how = "read in the snapshot"
	}
	t.Logf("%s sink, %d rows of %d bytes %s: peak RSS %.0f MB, %v to deliver, CPU %.1fs user %.1fs sys",
		sink, rows, size, how, float64(rss)/1e6, took.Round(100*time.Millisecond),
		time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds())
	if rss > maxWideRSS {
		t.Fatalf("peak RSS %.0f MB, want under %d MB", float64(rss)/1e6, maxWideRSS>>20)
	}
}
