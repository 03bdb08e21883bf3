//go:build integration

package postgres_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// forgetYAML is file → postgres in mode once, insert mode, no key: a record
// written twice is a second row. %[3]s and %[4]s name the source and the
// sink; %[5]s adds sink options.
const forgetYAML = `
sources:
  %[3]s:
    type: file
    paths: [%[1]s/input/*.ndjson]
    format: ndjson
    mode: once
    data_dir: %[1]s/state
sinks:
  %[4]s:
    type: postgres
    inputs: [%[3]s]
    url: %[2]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: ev
    create_table: true
    columns:
      - { name: id, type: bigint }
    batch: { max_records: 5000, max_age: 50ms }
%[5]s
checkpoint: { commit_interval: 100ms }
metrics: { address: "off" }
`

// forgetRun is one directory, database and pipeline for the tests below.
type forgetRun struct {
	t    *testing.T
	bin  string
	dir  string
	db   string
	src  string
	sink string
	opts string
	runs int
}

func newForgetRun(t *testing.T, files, lines int) *forgetRun {
	t.Helper()
	r := &forgetRun{t: t, bin: bins.Build(t, ""), dir: t.TempDir(), db: pgtest.Database(t), src: "in", sink: "db"}
	in := filepath.Join(r.dir, "input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	id := 0
	for f := range files {
		fd, err := os.Create(filepath.Join(in, fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(fd)
		for range lines {
			fmt.Fprintf(w, "{\"id\":%d}\n", id)
			id++
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fd.Close()
	}
	return r
}

// run runs the pipeline to its end (args are added to weir run) and fails
// the test unless it exits with 0.
func (r *forgetRun) run(args ...string) {
	r.t.Helper()
	r.runs++
	cfg := filepath.Join(r.dir, fmt.Sprintf("weir-%d.yaml", r.runs))
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(forgetYAML, r.dir, r.db, r.src, r.sink, r.opts)), 0o600); err != nil {
		r.t.Fatal(err)
	}
	logPath := filepath.Join(r.dir, fmt.Sprintf("run-%d.log", r.runs))
	f, err := os.Create(logPath)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(r.bin, append([]string{"run", "-c", cfg}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		r.t.Fatalf("run %d did not finish within 2 minutes:\n%s", r.runs, weirtest.Tail(logPath, 20))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) || err != nil {
		r.t.Fatalf("run %d: %v\n%s", r.runs, err, weirtest.Tail(logPath, 20))
	}
	passwordIn(r.t, logPath)
}

// rows returns the rows of ev and their distinct ids.
func (r *forgetRun) rows() (rows, distinct int64) {
	r.t.Helper()
	conn := pgtest.Connect(r.t, r.db)
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM ev`).Scan(&rows, &distinct); err != nil {
		r.t.Fatal(err)
	}
	return rows, distinct
}

// positionRows counts the sink's rows in weir_positions.
func (r *forgetRun) positionRows() int64 {
	r.t.Helper()
	conn := pgtest.Connect(r.t, r.db)
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM weir_positions`).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// The defect: the file source's data_dir deleted, the same pipeline
// run again. It wrote every row a second time (2,000,000 rows for 1,000,000
// ids) and weir_positions held two rows per file, because a file's
// partition name held the time it was first seen, which lived only in the
// lost state. Now the name is the file's own and the second run writes
// nothing: 0 duplicate rows, one positions row per file.
func TestLostStateWritesNothingTwice(t *testing.T) {
	t.Parallel()
	const files, lines = 4, 25000
	r := newForgetRun(t, files, lines)
	r.run()
	if rows, distinct := r.rows(); rows != files*lines || distinct != files*lines {
		t.Fatalf("first run: %d rows, %d distinct ids, want %d", rows, distinct, files*lines)
	}
	if err := os.RemoveAll(filepath.Join(r.dir, "state")); err != nil {
		t.Fatal(err)
	}
	r.run()
	rows, distinct := r.rows()
	if rows != files*lines || distinct != files*lines {
		t.Fatalf("after the state directory was deleted: %d rows for %d ids (%d duplicates), want %d", rows, distinct, rows-distinct, files*lines)
	}
	if n := r.positionRows(); n != files {
		t.Fatalf("weir_positions holds %d rows, want one per file (%d)", n, files)
	}
}

// What makes the sink forget its stored positions, as docs/postgres.md
// lists it, and what does not: each case runs the pipeline, makes one
// change, deletes the source's data_dir (so that the source reads every
// file again and only the sink's positions decide), runs it again, and
// counts the rows written twice.
func TestWhatForgetsPositions(t *testing.T) {
	t.Parallel()
	const files, lines = 2, 500
	for _, c := range []struct {
		name   string
		change func(r *forgetRun)
		args   []string // of the second run
		forget bool
	}{
		// Forgets: the positions are filed under pipeline, sink, source
		// and partition.
		{name: "the sink renamed", change: func(r *forgetRun) { r.sink = "db2" }, forget: true},
		{name: "the source renamed", change: func(r *forgetRun) { r.src = "in2" }, forget: true},
		{name: "pipeline set", change: func(r *forgetRun) { r.opts = "    pipeline: other" }, forget: true},
		{name: "the positions rows deleted", change: func(r *forgetRun) {
			conn := pgtest.Connect(r.t, r.db)
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "DELETE FROM weir_positions"); err != nil {
				r.t.Fatal(err)
			}
		}, forget: true},
		{name: "the files copied (new files)", change: func(r *forgetRun) {
			for f := range files {
				p := filepath.Join(r.dir, "input", fmt.Sprintf("part-%d.ndjson", f))
				b, err := os.ReadFile(p)
				if err != nil {
					r.t.Fatal(err)
				}
				if err := os.Remove(p); err != nil {
					r.t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					r.t.Fatal(err)
				}
			}
		}, forget: true},
		// Keeps.
		{name: "data_dir deleted"},
		{name: "reset-state", args: []string{"--reset-state", "in"}},
		{name: "the files renamed", change: func(r *forgetRun) {
			for f := range files {
				p := filepath.Join(r.dir, "input", fmt.Sprintf("part-%d.ndjson", f))
				if err := os.Rename(p, p+".old.ndjson"); err != nil {
					r.t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			r := newForgetRun(t, files, lines)
			r.run()
			if c.change != nil {
				c.change(r)
			}
			if c.args == nil {
				if err := os.RemoveAll(filepath.Join(r.dir, "state")); err != nil {
					t.Fatal(err)
				}
			}
			r.run(c.args...)
			rows, distinct := r.rows()
			if distinct != files*lines {
				t.Fatalf("%d distinct ids, want %d", distinct, files*lines)
			}
			want := int64(files * lines)
			if c.forget {
				want *= 2
			}
			if rows != want {
				t.Fatalf("%s: %d rows after the second run, want %d (forgets the positions: %v)", c.name, rows, want, c.forget)
			}
		})
	}
}
