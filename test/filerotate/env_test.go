//go:build e2e

package filerotate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
	bolt "go.etcd.io/bbolt"
)

// bin is the weir binary, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	var cleanup func()
	var err error
	if bin, cleanup, err = weirtest.BuildMain(""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// The pipeline: the log directory's *.ndjson, followed, into one file sink.
// extra is added to the source's options, with $DIR standing for the test's
// directory.
const pipelineYAML = `
sources:
  in:
    type: file
    paths: [%[1]s/logs/*.ndjson]
    mode: %[3]s
    poll_interval: 50ms
    data_dir: %[1]s/state
%[2]s
sinks:
  out:
    type: file
    inputs: [in]
    path: %[1]s/out
    template: part
    batch: { max_records: 500, max_age: 50ms }
checkpoint: { commit_interval: 100ms }
metrics: { address: "off" }
`

// env is one test's directory: logs/ (input), out/ (the sink), state/.
type env struct {
	t   *testing.T
	dir string
	cfg string
	n   int   // weir runs started, to name their logs
	cur *weir // the run started last
}

func newEnv(t *testing.T, extra string) *env {
	t.Helper()
	return newEnvMode(t, "tail", extra)
}

// newEnvMode is newEnv with the source's mode (once or tail).
func newEnvMode(t *testing.T, mode, extra string) *env {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "weir.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(pipelineYAML, dir, strings.ReplaceAll(extra, "$DIR", dir), mode)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, dir: dir, cfg: cfg}
}

func (e *env) path(rel string) string { return filepath.Join(e.dir, rel) }

// line is the input line of id.
func line(id int) string { return fmt.Sprintf("{\"id\":%d,\"pad\":\"0123456789abcdef\"}\n", id) }

// appendLines appends the lines of ids [from, to) to path, creating it.
func (e *env) appendLines(rel string, from, to int) {
	e.t.Helper()
	var b strings.Builder
	for id := from; id < to; id++ {
		b.WriteString(line(id))
	}
	f, err := os.OpenFile(e.path(rel), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		e.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rename(from, to string) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(e.path(to)), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(e.path(from), e.path(to)); err != nil {
		e.t.Fatal(err)
	}
}

// copyTruncate rotates like logrotate's copytruncate: the file is copied to
// a new file, then truncated in place.
func (e *env) copyTruncate(from, to string) {
	e.t.Helper()
	src, err := os.Open(e.path(from))
	if err != nil {
		e.t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(e.path(to))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		e.t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Truncate(e.path(from), 0); err != nil {
		e.t.Fatal(err)
	}
}

// weir is one running `weir run`.
type weir struct {
	e    *env
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid once done is closed
	// stopping is set when the test signals the process: its exit is expected.
	stopping bool
}

func (e *env) start(args ...string) *weir {
	e.t.Helper()
	e.n++
	logPath := e.path(fmt.Sprintf("weir-%d.log", e.n))
	f, err := os.Create(logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"run", "-c", e.cfg}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	w := &weir{e: e, cmd: cmd, log: logPath, done: make(chan struct{})}
	e.cur = w
	go func() {
		w.err = cmd.Wait()
		f.Close()
		close(w.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = cmd.Process.Kill()
			<-w.done
		}
		if e.t.Failed() {
			b, _ := os.ReadFile(logPath)
			e.t.Logf("log of run %s:\n%s", filepath.Base(logPath), weirtest.Last(string(b), 30))
		} else if testing.Verbose() {
			b, _ := os.ReadFile(logPath)
			e.t.Logf("log of run %s:\n%s", filepath.Base(logPath), weirtest.Last(string(b), 30))
		}
	})
	return w
}

// stop sends sig and returns the exit code.
func (w *weir) stop(sig syscall.Signal) int {
	w.e.t.Helper()
	w.stopping = true
	_ = w.cmd.Process.Signal(sig)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		w.e.t.Fatalf("weir did not exit within 30s of %v", sig)
	}
	var ee *exec.ExitError
	switch {
	case w.err == nil:
		return 0
	case errors.As(w.err, &ee):
		return ee.ExitCode() // -1 when killed by a signal
	}
	w.e.t.Fatal(w.err)
	return 0
}

// wait waits for the run to exit by itself and returns its exit code.
func (w *weir) wait() int {
	w.e.t.Helper()
	select {
	case <-w.done:
	case <-time.After(60 * time.Second):
		w.e.t.Fatal("weir did not exit within 60s")
	}
	var ee *exec.ExitError
	switch {
	case w.err == nil:
		return 0
	case errors.As(w.err, &ee):
		return ee.ExitCode()
	}
	w.e.t.Fatal(w.err)
	return 0
}

// logText returns what the run logged so far.
func (w *weir) logText() string {
	b, _ := os.ReadFile(w.log)
	return string(b)
}

// waitLog waits until the run's log has a line holding every one of parts.
func (w *weir) waitLog(what string, parts ...string) {
	w.e.t.Helper()
	waitFor(w.e.t, what, func() bool {
		b, _ := os.ReadFile(w.log)
		for l := range strings.Lines(string(b)) {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// waitFor polls cond until it holds, failing the test after 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling an external process's output
	}
}

// output counts the ids in the sink's visible chunks.
func (e *env) output() map[int]int {
	e.t.Helper()
	ids := map[int]int{}
	err := filepath.WalkDir(e.path("out"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for l := range bytes.Lines(b) {
			var r struct{ ID *int }
			if err := json.Unmarshal(l, &r); err != nil || r.ID == nil {
				return fmt.Errorf("%s holds %q", p, l)
			}
			ids[*r.ID]++
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// missing lists the ids in [from, to) that are not in out.
func missing(out map[int]int, from, to int) []int {
	var m []int
	for id := from; id < to; id++ {
		if out[id] == 0 {
			m = append(m, id)
		}
	}
	return m
}

// waitOutput waits until every id in [from, to) is in the output.
func (e *env) waitOutput(from, to int) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := missing(e.output(), from, to)
		if len(m) == 0 {
			return
		}
		if w := e.cur; w != nil && !w.stopping {
			select {
			case <-w.done:
				e.t.Fatalf("weir exited (%v) while %d of the ids %d..%d were not in the output", w.err, len(m), from, to-1)
			default:
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d of the ids %d..%d never reached the output (first %d, last %d)", len(m), from, to-1, m[0], m[len(m)-1])
		}
		time.Sleep(20 * time.Millisecond) // polling an external process's output
	}
}

// stateEntry is the part of a state store entry the tests read.
type stateEntry struct {
	Path string `json:"path"`
	Pos  int64  `json:"pos"`
}

// state reads the source's state store (weir must not be running): the
// entries by key "dev:ino". Keys of the store's own bookkeeping (starting
// with '#') are left out.
func (e *env) state() map[string]stateEntry {
	e.t.Helper()
	db, err := bolt.Open(e.path("state/file-source-in.db"), 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	out := map[string]stateEntry{}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("state"))
		if b == nil {
			return errors.New("no state bucket")
		}
		return b.ForEach(func(k, v []byte) error {
			if bytes.HasPrefix(k, []byte("#")) {
				return nil
			}
			var se stateEntry
			if err := json.Unmarshal(v, &se); err != nil {
				return err
			}
			out[string(k)] = se
			return nil
		})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// keyOf returns the state store key of the file at rel.
func (e *env) keyOf(rel string) string {
	e.t.Helper()
	fi, err := os.Stat(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(st.Ino, 10) //nolint:unconvert
}

func (e *env) size(rel string) int64 {
	e.t.Helper()
	fi, err := os.Stat(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return fi.Size()
}

// onlyLive checks that the state store holds exactly the live file's entry,
// committed to its end: every rotated file was read to its end and forgotten.
func (e *env) onlyLive(live string) {
	e.t.Helper()
	st := e.state()
	k := e.keyOf(live)
	got, ok := st[k]
	if !ok || len(st) != 1 {
		e.t.Fatalf("state holds %v, want only %s (%s)", st, live, k)
	}
	if size := e.size(live); got.Pos != size {
		e.t.Fatalf("%s committed at %d, want its size %d", live, got.Pos, size)
	}
}
