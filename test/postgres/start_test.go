//go:build integration

package postgres_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// startTrialsEnv sets how many trials TestMembersStartTogether runs (20,
// the check, by default: they take a few seconds).
const startTrialsEnv = "WEIR_PG_START_TRIALS"

const startYAML = `
sources:
  in:
    type: kafka
    brokers: [%[1]q]
    group: %[2]s
    topics: [%[3]s]
    session_timeout: 6s
    rebalance_timeout: 10s
sinks:
  db:
    type: postgres
    inputs: [in]
    url: %[4]s
    password_env: WEIR_POSTGRES_PASSWORD
    table: %[5]s
    positions_table: %[5]s_positions
    create_table: true
    columns:
      - { name: id, type: bigint }
    batch: { max_records: 100, max_age: 20ms }
checkpoint: { commit_interval: 200ms, shutdown_timeout: 15s }
metrics: { address: "127.0.0.1:0" } # its "metrics listening" line says the member runs
`

// The race: three members of one Kafka group, started at the same
// instant on a database without their table (and positions table). In 3 of
// 5 trials one exited with code 3 on
// `duplicate key value violates unique constraint "pg_type_typname_nsp_index"`
// or `relation already exists`. Each trial starts three real binaries that
// block reading their configuration from stdin, then gives it to all three
// at once, so that they create the tables within the same milliseconds;
// every member must run, the table must end with every record once, and
// each member must stop with exit code 0.
func TestMembersStartTogether(t *testing.T) {
	trials := 20
	if v := os.Getenv(startTrialsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of trials", startTrialsEnv, v)
		}
		trials = n
	}
	const parts, perPart = 3, 50
	bin := bins.Build(t, "")
	brokers := kafkatest.Brokers(t)
	db := pgtest.Database(t)
	conn := pgtest.Connect(t, db)
	cl := kafkatest.Client(t, brokers)
	topic := kafkatest.CreateTopic(ctx, t, cl, "pg-start", parts)
	produce(t, cl, topic, parts, perPart)
	dir := t.TempDir()
	began := time.Now()
	for trial := range trials {
		table := fmt.Sprintf("start_%d", trial)
		cfg := fmt.Appendf(nil, startYAML, brokers[0], fmt.Sprintf("weir-start-%s-%d", filepath.Base(topic), trial), topic, db, table)
		members := make([]*stdinProc, 3)
		for i := range members {
			members[i] = startFromStdin(t, bin, filepath.Join(dir, fmt.Sprintf("trial%d-%c.log", trial, 'a'+i)))
		}
		var wg sync.WaitGroup
		for _, m := range members { // at once
			wg.Add(1)
			go func() { defer wg.Done(); m.give(cfg) }()
		}
		wg.Wait()
		var n int64
		weirtest.WaitFor(t, fmt.Sprintf("trial %d: every record in %s", trial, table), time.Minute, func() bool {
			for _, m := range members {
				select {
				case <-m.done:
					t.Fatalf("trial %d: a member exited (%v) before the records were written:\n%s", trial, m.err, weirtest.Tail(m.log, 15))
				default:
				}
			}
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
				return false // not created yet
			}
			return n >= parts*perPart
		})
		// Every member runs (its signals caught, its pipeline open) before
		// the stop: the first to join may have written every record while
		// another was still starting, and a signal before a process catches
		// signals is its death, not a test of the start.
		for i, m := range members {
			weirtest.WaitRunning(t, fmt.Sprintf("trial %d: member %d", trial, i), m.log, 0)
		}
		for _, m := range members {
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, m := range members {
			select {
			case <-m.done:
			case <-time.After(time.Minute):
				t.Fatalf("trial %d: a member did not stop after SIGTERM", trial)
			}
			if m.err != nil {
				t.Fatalf("trial %d: a member exited with %v:\n%s", trial, m.err, weirtest.Tail(m.log, 15))
			}
		}
		var distinct int64
		if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM "+table).Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != parts*perPart || distinct != n {
			t.Fatalf("trial %d: %d rows, %d distinct, want %d once each", trial, n, distinct, parts*perPart)
		}
	}
	t.Logf("%d trials of three members started together, all ran and stopped with 0, in %v", trials, time.Since(began).Round(time.Second))
}

// stdinProc is a `weir run -c -` waiting for its configuration.
type stdinProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   string
	done  chan struct{}
	err   error
}

func startFromStdin(t *testing.T, bin, logPath string) *stdinProc {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-c", "-")
	cmd.Stdout, cmd.Stderr = f, f
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &stdinProc{cmd: cmd, stdin: in, log: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			p.err = err
		}
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// give writes the configuration and closes stdin: the process reads it to
// its end and starts.
func (p *stdinProc) give(cfg []byte) {
	_, _ = p.stdin.Write(cfg)
	_ = p.stdin.Close()
}
