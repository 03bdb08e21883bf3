//go:build integration

package http_test

import (
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

const pgYAML = `
sources:
  in:
    type: http_server
    address: %[2]s
    paths: [/ingest]
sinks:
  db:
    type: postgres
    inputs: [in]
    url: %[1]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: ev
    create_table: true
    columns:
      - { name: id, type: bigint }
    batch: { max_records: 1000, max_age: 20ms }
checkpoint:
  commit_interval: 100ms
metrics: { address: "off" }
`

// Guarantee: the exactly-once PostgreSQL sink, which skips records below
// the positions it stored per (source, partition name), takes every
// acknowledged record of every run of an HTTP source, although the
// source's positions start at 0 in each run: its partitions are named for
// the run.
func TestExactlyOnceSinkSeesEveryRun(t *testing.T) {
	missing := everyRun(t, weirtest.BuildTemp(t, ""), nil)
	if missing > 0 {
		t.Fatalf("%d acknowledged records are not in the table", missing)
	}
}

// The same check must catch a source whose partition names are the same in
// every run (built with -tags unsafe_stable_names): the sink skips the
// later runs' records as held.
func TestExactlyOnceSinkCatchesStableNames(t *testing.T) {
	missing := everyRun(t, weirtest.BuildTemp(t, "unsafe_stable_names"), []string{"WEIR_UNSAFE_STABLE_NAMES=1"})
	if missing == 0 {
		t.Fatal("every record arrived although the partition names were stable across runs: the check cannot catch the loss it is for")
	}
	t.Logf("with stable names the sink skipped %d acknowledged records as held", missing)
}

// everyRun runs weir three times (the second stopped by SIGKILL, the others
// by SIGTERM), posting 300 records to each in requests of 100 until they
// are answered 200, and returns how many acknowledged records are missing
// from the table.
func everyRun(t *testing.T, bin string, env []string) int {
	db := pgtest.Database(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	if err := os.WriteFile(filepath.Join(dir, "weir.yaml"), []byte(fmt.Sprintf(pgYAML, db, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "weir.log")
	tr := &nethttp.Transport{}
	defer tr.CloseIdleConnections()
	cl := &nethttp.Client{Transport: tr, Timeout: time.Minute}
	const perRun, perRequest = 300, 100
	for run := range 3 {
		cmd, exited := start(t, bin, dir, logPath, env)
		waitListening(t, addr, exited, logPath)
		for r := 0; r < perRun/perRequest; r++ {
			var body strings.Builder
			for i := range perRequest {
				fmt.Fprintf(&body, "{\"id\":%d}\n", run*perRun+r*perRequest+i)
			}
			deadline := time.Now().Add(time.Minute)
			for {
				resp, err := cl.Post("http://"+addr+"/ingest", "application/x-ndjson", strings.NewReader(body.String()))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("run %d: a request was not answered 200 within a minute (%v); log:\n%s", run, err, tail(logPath))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		sig := syscall.SIGTERM
		if run == 1 {
			sig = syscall.SIGKILL
		}
		cmd.Process.Signal(sig)
		err := <-exited
		if sig == syscall.SIGTERM && err != nil {
			t.Fatalf("run %d: weir exited with %v; log:\n%s", run, err, tail(logPath))
		}
	}
	conn := pgtest.Connect(t, db)
	rows, err := conn.Query(context.Background(), "SELECT id FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		seen[id]++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	missing := 0
	for id := range int64(3 * perRun) {
		switch n := seen[id]; {
		case n == 0:
			missing++
		case n > 1:
			t.Errorf("record %d is in the table %d times: every request was answered once, so the exactly-once sink must hold it once", id, n)
		}
	}
	return missing
}
