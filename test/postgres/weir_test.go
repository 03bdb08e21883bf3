//go:build integration

package postgres_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var ctx = context.Background()

// binDir holds the binaries built for the tests, one per set of build tags:
// the tests share them.
var (
	binDir string
	bins   = map[string]string{}
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "weir-test-postgres-")
	if err != nil {
		panic(err)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// buildWeir builds cmd/weir with the given build tags, once per set of tags,
// and returns the binary's path.
func buildWeir(t *testing.T, tags string) string {
	t.Helper()
	if bin, ok := bins[tags]; ok {
		return bin
	}
	bin := weirtest.Build(t, binDir, tags)
	bins[tags] = bin
	return bin
}

// proc is one running `weir run`.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	from int64 // the log's size when the process started (earlier runs appended to it)
	done chan struct{}
	err  error // valid once done is closed
}

func startWeir(t *testing.T, bin, cfg, name string, env []string) *proc {
	t.Helper()
	logPath := filepath.Join(filepath.Dir(cfg), name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, from: st.Size(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
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

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// passwordIn fails the test if a log holds the server's password.
func passwordIn(t *testing.T, logs ...string) {
	t.Helper()
	pw := os.Getenv("WEIR_POSTGRES_PASSWORD")
	if pw == "" {
		return
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), pw) {
			t.Errorf("the password shows in %s", l)
		}
	}
}

// tally is what a table of ids holds against the ids expected.
type tally struct {
	rows, distinct, missing, unexpected int64
}

func (c tally) duplicates() int64 { return c.rows - c.distinct }

// count compares table's id column with the ids 0..n-1 that keep accepts
// (expressed in SQL as keepSQL over g).
func count(t *testing.T, conn *pgx.Conn, table string, n int, keepSQL string) tally {
	t.Helper()
	var c tally
	err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM `+table).Scan(&c.rows, &c.distinct)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(0, $1::bigint - 1) AS g
		WHERE (`+keepSQL+`) AND NOT EXISTS (SELECT 1 FROM `+table+` e WHERE e.id = g)`, n).Scan(&c.missing)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FROM `+table+` AS e, LATERAL (SELECT e.id AS g) AS x
		WHERE e.id < 0 OR e.id >= $1 OR NOT (`+keepSQL+`)`, n).Scan(&c.unexpected)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
