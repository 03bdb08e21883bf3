//go:build integration

package cdc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// proc is one running `weir run`.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid once done is closed
}

func startWeir(t *testing.T, bin, cfg, logPath string, env []string) *proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: logPath, done: make(chan struct{})}
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

func (p *proc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends the process with SIGTERM (a graceful shutdown) and returns its error.
func (p *proc) stop(t *testing.T, within time.Duration) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		t.Fatalf("weir did not stop within %v after SIGTERM", within)
		return nil
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func lastLines(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// change is one output record, the fields the checkers read.
type change struct {
	Op     string `json:"op"`
	LSN    string `json:"lsn"`
	Table  string `json:"table"`
	Before *row   `json:"before"`
	After  *row   `json:"after"`
}

type row struct {
	ID  int64 `json:"id"`
	Txn int64 `json:"txn"`
	V   int64 `json:"v"`
}

// outputReader reads the file sink's visible chunks, each once: a visible
// chunk never changes (the sink renames it into view when it is complete).
type outputReader struct {
	dir  string
	seen map[string]bool
}

func newOutputReader(dir string) *outputReader {
	return &outputReader{dir: dir, seen: map[string]bool{}}
}

// next returns the records of the chunks that became visible since the
// last call.
func (o *outputReader) next(t *testing.T) []change {
	t.Helper()
	var out []change
	err := filepath.WalkDir(o.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") || !strings.HasSuffix(d.Name(), ".ndjson") || o.seen[path] {
			return nil
		}
		o.seen[path] = true
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var c change
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatalf("%s: %v: %s", path, err, sc.Text())
			}
			out = append(out, c)
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatalf("reading the output: %v", err)
	}
	return out
}

func parseLSN(t *testing.T, s string) uint64 {
	t.Helper()
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatalf("LSN %q: %v", s, err)
	}
	return uint64(l)
}

func bg() context.Context { return context.Background() }
