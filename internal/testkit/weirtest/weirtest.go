// Package weirtest holds what the end-to-end tests (test/...) share to run
// the real weir binary: building it, starting and signalling it, collecting
// what it writes, waiting for what only its output shows.
package weirtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Build builds ./cmd/weir with the build tags given (comma-separated, or "")
// into dir and returns the binary's path. It fails t when the build fails.
func Build(t testing.TB, dir, tags string) string {
	t.Helper()
	bin, err := build(dir, tags)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildTemp builds ./cmd/weir into a temporary directory of t's.
func BuildTemp(t testing.TB, tags string) string {
	t.Helper()
	return Build(t, t.TempDir(), tags)
}

func build(dir, tags string) (string, error) {
	bin := filepath.Join(dir, "weir")
	if tags != "" {
		bin += "-" + strings.ReplaceAll(tags, ",", "-")
	}
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./cmd/weir")...)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &BuildError{Tags: tags, Err: err, Output: out}
	}
	return bin, nil
}

// BuildMain builds ./cmd/weir once for a TestMain, into a new temporary
// directory, and returns the binary and a function that removes it.
func BuildMain(tags string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "weir-e2e-")
	if err != nil {
		return "", nil, err
	}
	bin, err = build(dir, tags)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// Binaries builds the binary once per set of build tags for a package's
// tests, which share what it built: a kill loop and its unsafe variant
// need two binaries, not one per test. The zero value is ready; it is safe
// for concurrent use, and builds one at a time (go build keeps every core
// busy by itself). TestMain calls Remove after the tests.
type Binaries struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string // by build tags
}

// Build returns the binary built with tags (comma-separated, or ""),
// building it on the first call for them. It fails t when the build fails.
func (b *Binaries) Build(t testing.TB, tags string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if bin, ok := b.bins[tags]; ok {
		return bin
	}
	if b.dir == "" {
		d, err := os.MkdirTemp("", "weir-e2e-")
		if err != nil {
			t.Fatal(err)
		}
		b.dir = d
		b.bins = map[string]string{}
	}
	bin := Build(t, b.dir, tags)
	b.bins[tags] = bin
	return bin
}

// Remove removes the binaries built. A Build after it builds again.
func (b *Binaries) Remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
	b.dir, b.bins = "", nil
}

// BuildError is a failed build of the binary.
type BuildError struct {
	Tags   string
	Err    error
	Output []byte
}

func (e *BuildError) Error() string {
	return "weirtest: go build ./cmd/weir (tags " + e.Tags + "): " + e.Err.Error() + "\n" + string(e.Output)
}

// moduleRoot is the directory of the module: the nearest one above this
// file that holds go.mod (counting levels broke when the kit moved).
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// SyncBuffer collects what a process writes (its stderr) for a test that
// reads it while the process runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor polls cond until it holds, and fails t when d passes first. An
// external process is watched: there is nothing to synchronise with but what
// it shows.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitRunning waits until the weir process whose log is at logPath catches
// signals. weir run catches them before it builds a connector; the first line
// sure to come after that is the runtime's endpoints starting, before any sink
// opens. So the process must run with metrics on (an address such as
// 127.0.0.1:0): its "metrics listening" line, at or after
// byte from of the log (the log's size when the process started, for a log
// that earlier runs appended to), is the sign. A signal sent before a process
// catches signals is its death, not a test of a stop or a reload: a test
// that signals a process it has just started waits for this first (a busy
// machine can take seconds to start one).
func WaitRunning(t testing.TB, name, logPath string, from int64) {
	t.Helper()
	WaitFor(t, name+" running (its \"metrics listening\" line)", 2*time.Minute, func() bool {
		b, _ := os.ReadFile(logPath)
		if int64(len(b)) < from {
			return false
		}
		b = b[from:]
		return bytes.Contains(b, []byte(`msg="metrics listening"`)) || bytes.Contains(b, []byte(`"msg":"metrics listening"`))
	})
}

// Tail returns the last n lines of the file at path ("" when it cannot be
// read): a failure shows how the run ended without the whole log.
func Tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	return Last(string(b), n)
}

// Last returns the last n lines of s, without its final line end.
func Last(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
