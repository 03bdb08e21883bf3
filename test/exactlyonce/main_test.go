//go:build integration

package exactlyonce_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var (
	ctx      = context.Background()
	seedFlag = flag.Uint64("eos.seed", 0, "seed of the kill schedules (0: derived from the clock)")
	// full is set by WEIR_EOS_FULL=1: the sizes the issue names (1M lines,
	// 400k records, at least 20 SIGKILLs each); otherwise the shorter
	// versions CI runs.
	full = os.Getenv("WEIR_EOS_FULL") == "1"
)

// size returns the full value with WEIR_EOS_FULL=1, the short one otherwise.
func size(short, long int) int {
	if full {
		return long
	}
	return short
}

// binDir holds the binaries built for the tests, one per set of build tags.
var (
	binDir string
	binMu  sync.Mutex
	bins   = map[string]string{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	d, err := os.MkdirTemp("", "weir-test-exactlyonce-")
	if err != nil {
		panic(err)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

func buildWeir(t *testing.T, tags string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if bin, ok := bins[tags]; ok {
		return bin
	}
	bin := weirtest.Build(t, binDir, tags)
	bins[tags] = bin
	return bin
}

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -eos.seed=%d)", s, s)
	return s
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
		_ = cmd.Process.Signal(syscall.SIGCONT)
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop ends p with SIGTERM and returns its exit error, failing t if it does
// not end within a minute.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not stop within a minute of SIGTERM:\n%s", p.name, tail(p.log, 30))
	}
	return p.err
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// chunkCount is what the reader script found in a file sink's directory.
type chunkCount struct {
	Records, Distinct, Chunks, Duplicates, Missing, Unexpected int64
	FirstDuplicates                                            []int64 `json:"first_duplicates"`
	FirstMissing                                               []int64 `json:"first_missing"`
}

// readChunks runs testdata/read_chunks.py, the reader of docs/file-connectors.md,
// over dir, with the ids expected 0 <= id < n, id % mod != 0.
func readChunks(t *testing.T, dir string, n, mod int) chunkCount {
	t.Helper()
	out, err := exec.Command("python3", "testdata/read_chunks.py", dir, itoa(n), itoa(mod)).CombinedOutput()
	if err != nil {
		t.Fatalf("read_chunks.py %s: %v\n%s", dir, err, out)
	}
	var c chunkCount
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("read_chunks.py: %v: %s", err, out)
	}
	return c
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// hiddenFiles lists the files under dir that a reader does not count
// (names starting with a dot), outside the manifest.
func hiddenFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".weir-eos" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}
