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

// bins holds the binaries built for the tests, one per set of build tags.
var bins weirtest.Binaries

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

func buildWeir(t *testing.T, tags string) string { return bins.Build(t, tags) }

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -eos.seed=%d)", s, s)
	return s
}

// proc is one running `weir run`.
type proc = weirtest.Proc

// startWeir runs `weir run -c cfg` with env added, its output appended to
// name.log beside cfg (proc's Name is name).
func startWeir(t *testing.T, bin, cfg, name string, env []string) *proc {
	t.Helper()
	return weirtest.Start(t, bin, filepath.Join(filepath.Dir(cfg), name+".log"), env, "run", "-c", cfg)
}

func tail(path string, n int) string { return weirtest.Tail(path, n) }

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
