//go:build e2e

package crash_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
	bolt "go.etcd.io/bbolt"
)

var seedFlag = flag.Uint64("crash.seed", 0, "seed of the kill schedule (0: derived from the clock)")

const (
	inputFiles   = 4
	linesPerFile = 1 << 18 // 4 × 262,144 ≈ 1.05M lines
	// Kills land uniformly between these delays after each start.
	minKillDelay = 30 * time.Millisecond
	maxKillDelay = 200 * time.Millisecond
)

// The pipeline under test. The filter drops ids divisible by 5; flat_map
// turns each kept line into 1 + id%3 records, {"id":N,"items":k,...} for k
// in 0..id%3. Both are deterministic, so the test knows every expected
// output of every input line.
const pipelineYAML = `
sources:
  in:
    type: file
    paths: [%[1]s/input/*.ndjson]
    format: ndjson
    mode: once
    data_dir: %[1]s/state
transforms:
  kept:
    type: filter
    inputs: [in]
    condition: 'id %% 5 != 0'
  exploded:
    type: flat_map
    inputs: [kept]
    explode: items
sinks:
  a:
    type: file
    inputs: [exploded]
    path: %[1]s/out/a
    template: part
    batch: { max_records: 20000, max_age: 50ms }
  b:
    type: file
    inputs: [exploded]
    path: %[1]s/out/b
    template: '{{.Hour}}/part'
    batch: { max_records: 7000, max_age: 80ms }
checkpoint:
  commit_interval: 100ms
metrics: { address: "off" }
`

func keep(id int) bool   { return id%5 != 0 }
func fanOut(id int) int  { return 1 + id%3 }
func slot(id, k int) int { return id*3 + k }
func totalIDs() int      { return inputFiles * linesPerFile }

var sinkNames = []string{"a", "b"}

// scenario is one crash run's working directory and what the checker saw.
type scenario struct {
	t    *testing.T
	bin  string
	dir  string
	env  []string
	rng  *rand.Rand
	ends [inputFiles][]int64 // end offset of every line, by file
	keys map[string]int      // "dev:ino" of each input file → file index

	counts  map[string][]uint8         // by sink: copies seen of each output slot
	seen    map[string]map[string]bool // by sink: visible chunks already counted
	bound   map[string]int             // by sink: Σ over kills of visible-but-uncommitted outputs
	kills   int
	violate []string         // guarantee violations found
	left    map[string][]int // by sink: temporary chunk files present after each kill
}

func TestCrashKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: up to a minute")
	}
	bin := weirtest.BuildTemp(t, "")
	sc := newScenario(t, bin, nil)
	res := sc.run(10, 40)
	if len(sc.violate) > 0 {
		t.Fatalf("seed %d: %d violations of the guarantee, first: %s", res.seed, len(sc.violate), sc.violate[0])
	}
	if sc.kills < 10 {
		t.Fatalf("seed %d: the pipeline finished after %d kills; the test needs at least 10 (lower maxKillDelay)", res.seed, sc.kills)
	}
	// The final run's Open removed what the killed runs left, and its Close
	// its own lock file: no temporary chunk or lock file remains.
	for _, s := range sinkNames {
		left := sc.left[s]
		total, most := 0, 0
		for _, n := range left {
			total += n
			most = max(most, n)
		}
		removed, line := sc.removedAtEnd(s)
		t.Logf("sink %s: %d temporary chunk files left at the %d kills (at most %d at one, %d at the last); the final run removed %d: %q",
			s, total, len(left), most, left[len(left)-1], removed, line)
		if temps, locks := sc.hidden(s); len(temps)+len(locks) > 0 {
			t.Errorf("seed %d: sink %s: after the final run %d temporary chunk files and %d lock files remain, first %v %v",
				res.seed, s, len(temps), len(locks), temps[:min(len(temps), 1)], locks[:min(len(locks), 1)])
		}
		if removed != left[len(left)-1] {
			t.Errorf("seed %d: sink %s: the final run removed %d temporary files, but the last kill left %d", res.seed, s, removed, left[len(left)-1])
		}
	}
	for _, s := range sinkNames {
		dup := sc.duplicates(s)
		t.Logf("sink %s: %d duplicates observed, bound %d (outputs visible but uncommitted at the kills)", s, dup, sc.bound[s])
		if dup > sc.bound[s] {
			t.Errorf("seed %d: sink %s has %d duplicates, more than the %d that were visible but uncommitted at the kills", res.seed, s, dup, sc.bound[s])
		}
	}
}

// The deliberately unsafe sink (build tag unsafe_ack, WEIR_UNSAFE_ACK=1)
// acknowledges a group before its chunks are renamed into view. The checker
// must see committed positions whose lines are not in the output.
func TestCrashUnsafeVariantIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	bin := weirtest.BuildTemp(t, "unsafe_ack")
	sc := newScenario(t, bin, []string{"WEIR_UNSAFE_ACK=1"})
	res := sc.run(3, 3)
	if len(sc.violate) == 0 {
		t.Fatalf("seed %d: the unsafe variant ran %d kills and the checker found nothing: the crash test cannot detect early acknowledgement", res.seed, sc.kills)
	}
	t.Logf("seed %d: caught as expected, %d violations, first: %s", res.seed, len(sc.violate), sc.violate[0])
}

func newScenario(t *testing.T, bin string, env []string) *scenario {
	sc := &scenario{t: t, bin: bin, dir: t.TempDir(), env: env, keys: map[string]int{},
		counts: map[string][]uint8{}, seen: map[string]map[string]bool{}, bound: map[string]int{},
		left: map[string][]int{}}
	for _, s := range sinkNames {
		sc.counts[s] = make([]uint8, slot(totalIDs(), 0))
		sc.seen[s] = map[string]bool{}
	}
	sc.generate()
	cfg := fmt.Sprintf(pipelineYAML, sc.dir)
	if err := os.WriteFile(filepath.Join(sc.dir, "weir.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return sc
}

// generate writes the input files and remembers where every line ends.
func (sc *scenario) generate() {
	in := filepath.Join(sc.dir, "input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		sc.t.Fatal(err)
	}
	var line []byte
	for f := range inputFiles {
		path := filepath.Join(in, fmt.Sprintf("part-%d.ndjson", f))
		fd, err := os.Create(path)
		if err != nil {
			sc.t.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		var off int64
		sc.ends[f] = make([]int64, linesPerFile)
		for i := range linesPerFile {
			id := f*linesPerFile + i
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(id), 10)
			line = append(line, `,"items":[`...)
			for k := range fanOut(id) {
				if k > 0 {
					line = append(line, ',')
				}
				line = strconv.AppendInt(line, int64(k), 10)
			}
			line = append(line, `],"pad":"0123456789abcdef"}`...)
			line = append(line, '\n')
			w.Write(line)
			off += int64(len(line))
			sc.ends[f][i] = off
		}
		if err := w.Flush(); err != nil {
			sc.t.Fatal(err)
		}
		fi, err := fd.Stat()
		if err != nil {
			sc.t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		sc.keys[fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))] = f //nolint:unconvert
		fd.Close()
	}
}

type result struct{ seed uint64 }

// run starts weir, kills it after a random delay, checks, and restarts, until
// it exits by itself having been killed at least minKills times (or maxKills
// kills were done, after which it is left to finish). Then it checks the end
// state.
func (sc *scenario) run(minKills, maxKills int) result {
	t := sc.t
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill schedule seed %d (replay with -crash.seed=%d)", seed, seed)
	sc.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	logPath := filepath.Join(sc.dir, "weir.log")
	deadline := time.Now().Add(4 * time.Minute)
	for start := 0; ; start++ {
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: not finished after %d starts", seed, start)
		}
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sc.bin, "run", "-c", filepath.Join(sc.dir, "weir.yaml"))
		cmd.Env = append(os.Environ(), sc.env...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var kill <-chan time.Time
		if sc.kills < maxKills {
			delay := minKillDelay + time.Duration(sc.rng.Int64N(int64(maxKillDelay-minKillDelay)))
			kill = time.After(delay)
		}
		select {
		case err := <-done:
			logf.Close()
			if err != nil {
				t.Fatalf("seed %d: weir exited with %v; log %s:\n%s", seed, err, logPath, tail(logPath))
			}
			sc.check("end")
			sc.checkEnd()
			t.Logf("finished after %d kills; %d violations", sc.kills, len(sc.violate))
			return result{seed}
		case <-kill:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			logf.Close()
			sc.kills++
			sc.check(fmt.Sprintf("kill %d", sc.kills))
			for _, s := range sinkNames {
				temps, _ := sc.hidden(s)
				sc.left[s] = append(sc.left[s], len(temps))
			}
		}
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// positions reads the committed position of every input file from the
// source's bbolt state store, read-only, with the process dead.
func (sc *scenario) positions() [inputFiles]int64 {
	var pos [inputFiles]int64
	path := filepath.Join(sc.dir, "state", "file-source-in.db")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return pos // killed before the store was created
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		sc.t.Fatalf("opening the state store: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("state"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if bytes.HasPrefix(k, []byte("#")) {
				return nil // the store's own bookkeeping (the scan time)
			}
			f, ok := sc.keys[string(k)]
			if !ok {
				return fmt.Errorf("state entry %s names no input file", k)
			}
			var e struct {
				Gen uint64 `json:"gen"`
				Pos int64  `json:"pos"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if e.Gen != 0 {
				return fmt.Errorf("file %d was taken for a new incarnation (gen %d)", f, e.Gen)
			}
			pos[f] = e.Pos
			return nil
		})
	})
	if err != nil {
		sc.t.Fatalf("reading the state store: %v", err)
	}
	return pos
}

// scan counts the outputs of every visible chunk not counted yet. A visible
// chunk is complete and never changes (it was renamed into place whole), so
// each is read once.
func (sc *scenario) scan(sink string) {
	root := filepath.Join(sc.dir, "out", sink)
	counts, seen := sc.counts[sink], sc.seen[sink]
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") || seen[p] {
			return err
		}
		seen[p] = true
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			sc.violate = append(sc.violate, fmt.Sprintf("visible chunk %s is torn (no final newline)", p))
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			id, k, ok := parseOut(b[:i])
			if !ok || id < 0 || id >= totalIDs() || !keep(id) || k < 0 || k >= fanOut(id) {
				sc.violate = append(sc.violate, fmt.Sprintf("%s holds an unexpected record %q", p, b[:i]))
			} else if c := &counts[slot(id, k)]; *c < 255 {
				*c++
			}
			b = b[i+1:]
		}
		return nil
	})
	if err != nil {
		sc.t.Fatalf("reading sink %s: %v", sink, err)
	}
}

// hidden lists sink s's temporary chunk files (".<chunk name>.tmp") and run
// lock files (".weir-<run id>.lock"), anywhere under its output directory.
func (sc *scenario) hidden(sink string) (temps, locks []string) {
	root := filepath.Join(sc.dir, "out", sink)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		switch n := d.Name(); {
		case strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".tmp"):
			temps = append(temps, p)
		case strings.HasPrefix(n, ".weir-") && strings.HasSuffix(n, ".lock"):
			locks = append(locks, p)
		}
		return nil
	})
	if err != nil {
		sc.t.Fatalf("listing sink %s: %v", sink, err)
	}
	return temps, locks
}

var removedRE = regexp.MustCompile(`(\d+) temporary files? of ended runs removed`)

// removedAtEnd reads, from the run summary of the final run, how many
// temporary files of ended runs sink s removed, and the summary's line about
// its output. Killed runs print no summary.
func (sc *scenario) removedAtEnd(sink string) (int, string) {
	b, err := os.ReadFile(filepath.Join(sc.dir, "weir.log"))
	if err != nil {
		sc.t.Fatal(err)
	}
	prefix := filepath.Join(sc.dir, "out", sink) + ": "
	var line string
	for l := range strings.Lines(string(b)) {
		if i := strings.Index(l, prefix); i >= 0 {
			line = strings.TrimSpace(l[i:])
		}
	}
	if line == "" {
		sc.t.Fatalf("no run summary names %s", prefix)
	}
	n := 0
	if m := removedRE.FindStringSubmatch(line); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	return n, line
}

// parseOut reads id and items from an output record, {"id":N,"items":k,...}
// in any key order.
func parseOut(b []byte) (id, k int, ok bool) {
	num := func(key string) (int, bool) {
		i := bytes.Index(b, []byte(`"`+key+`":`))
		if i < 0 {
			return 0, false
		}
		rest := b[i+len(key)+3:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(string(rest[:j]))
		return n, err == nil
	}
	id, ok1 := num("id")
	k, ok2 := num("items")
	return id, k, ok1 && ok2
}

// check is the invariant at a kill (or the end): every expected output of
// every line before a persisted position is visible in every sink. It also
// adds to each sink's duplicate bound the outputs that are visible although
// their line is not committed: those, and only those, can be written again.
func (sc *scenario) check(when string) {
	pos := sc.positions()
	for _, s := range sinkNames {
		sc.scan(s)
	}
	for f := range inputFiles {
		ends := sc.ends[f]
		committed := sort.Search(len(ends), func(i int) bool { return ends[i] > pos[f] })
		if pos[f] > 0 && ends[committed-1] != pos[f] {
			sc.violate = append(sc.violate, fmt.Sprintf("%s: file %d committed at %d, which is not a line boundary", when, f, pos[f]))
		}
		for _, s := range sinkNames {
			counts := sc.counts[s]
			missing, first := 0, -1
			for i := range linesPerFile {
				id := f*linesPerFile + i
				if !keep(id) {
					continue
				}
				for k := range fanOut(id) {
					visible := counts[slot(id, k)] > 0
					switch {
					case i < committed && !visible:
						if missing == 0 {
							first = id
						}
						missing++
					case i >= committed && visible && when != "end":
						sc.bound[s]++
					}
				}
			}
			if missing > 0 {
				sc.violate = append(sc.violate, fmt.Sprintf("%s: sink %s lacks %d outputs of lines before file %d's committed position %d (first: id %d)",
					when, s, missing, f, pos[f], first))
			}
		}
	}
	sc.t.Logf("%s: committed %v of %v lines", when, committedLines(sc, pos), linesPerFile)
}

func committedLines(sc *scenario, pos [inputFiles]int64) []int {
	out := make([]int, inputFiles)
	for f := range inputFiles {
		ends := sc.ends[f]
		out[f] = sort.Search(len(ends), func(i int) bool { return ends[i] > pos[f] })
	}
	return out
}

// checkEnd: after a clean exit every file is committed to its end and every
// expected output is in each sink at least once.
func (sc *scenario) checkEnd() {
	pos := sc.positions()
	for f := range inputFiles {
		if want := sc.ends[f][linesPerFile-1]; pos[f] != want {
			sc.violate = append(sc.violate, fmt.Sprintf("end: file %d committed at %d, want its size %d", f, pos[f], want))
		}
	}
	for _, s := range sinkNames {
		missing := 0
		for id := range totalIDs() {
			if !keep(id) {
				continue
			}
			for k := range fanOut(id) {
				if sc.counts[s][slot(id, k)] == 0 {
					missing++
				}
			}
		}
		if missing > 0 {
			sc.violate = append(sc.violate, fmt.Sprintf("end: sink %s lacks %d expected outputs", s, missing))
		}
	}
}

// duplicates counts the extra copies in sink s.
func (sc *scenario) duplicates(s string) int {
	n := 0
	for _, c := range sc.counts[s] {
		if c > 1 {
			n += int(c) - 1
		}
	}
	return n
}
