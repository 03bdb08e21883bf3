//go:build integration

package exactlyonce_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// The pipeline: file (once) → filter (ids divisible by 5 dropped) →
// exactly-once file sink, gzip NDJSON under one directory per id % 3, small
// groups (many commits) and chunks (several per group). The source commits
// every 2 s, so a restart reads up to 2 s of input again: what the sink's
// stored positions already hold must be left out.
const fileYAML = `
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
sinks:
  files:
    type: file
    inputs: [kept]
    path: %[1]s/out
    template: '{{field "k"}}/part'
    compression: gzip
    exactly_once: true
    max_records: 1500
    batch: { max_records: 1000, max_age: 20ms }
checkpoint:
  commit_interval: 2s
metrics: { address: "off" }
`

// fileScenario is one kill loop over a file sink's directory.
type fileScenario struct {
	t     *testing.T
	bin   string
	dir   string
	env   []string
	n     int // ids 0..n-1 in the input
	kills int
	start time.Time
	// What a reader has seen so far: the visible chunks read (each once: a
	// visible chunk never changes) and the ids in them.
	read       map[string]bool
	seen       map[int64]int
	violations []string
}

func newFileScenario(t *testing.T, bin string, env []string, files, perFile int) *fileScenario {
	sc := &fileScenario{t: t, bin: bin, dir: t.TempDir(), env: env, n: files * perFile, read: map[string]bool{}, seen: map[int64]int{}}
	in := filepath.Join(sc.dir, "input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	var line []byte
	for f := range files {
		fd, err := os.Create(filepath.Join(in, fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		for i := range perFile {
			id := int64(f*perFile + i)
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, id, 10)
			line = append(line, `,"k":`...)
			line = strconv.AppendInt(line, id%3, 10)
			line = append(line, `,"pad":"0123456789abcdef0123456789abcdef"}`+"\n"...)
			w.Write(line)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fd.Close()
	}
	if err := os.WriteFile(filepath.Join(sc.dir, "weir.yaml"), fmt.Appendf(nil, fileYAML, sc.dir), 0o600); err != nil {
		t.Fatal(err)
	}
	return sc
}

// expected is how many records the filter keeps.
func (sc *fileScenario) expected() int { return sc.n - (sc.n+4)/5 }

// look reads the chunks that became visible since the last look, as a
// reader that polls the directory does, and notes every id it sees twice.
// It returns the share of the expected records seen.
func (sc *fileScenario) look(when string) float64 {
	out := filepath.Join(sc.dir, "out")
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != out && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".ndjson.gz") || sc.read[p] {
			return nil
		}
		sc.read[p] = true
		f, err := os.Open(p)
		if err != nil {
			sc.violations = append(sc.violations, fmt.Sprintf("%s: a visible chunk cannot be opened: %v", when, err))
			return nil
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			sc.violations = append(sc.violations, fmt.Sprintf("%s: visible chunk %s is not gzip: %v", when, p, err))
			return nil
		}
		s := bufio.NewScanner(gz)
		for s.Scan() {
			var rec struct{ ID int64 }
			if err := json.Unmarshal(s.Bytes(), &rec); err != nil {
				sc.violations = append(sc.violations, fmt.Sprintf("%s: visible chunk %s holds a line that is not a record: %q", when, p, s.Text()))
				return nil
			}
			if sc.seen[rec.ID]++; sc.seen[rec.ID] == 2 {
				sc.violations = append(sc.violations, fmt.Sprintf("%s: a reader sees id %d twice (the second time in %s)", when, rec.ID, p))
			}
		}
		if err := s.Err(); err != nil {
			sc.violations = append(sc.violations, fmt.Sprintf("%s: visible chunk %s is torn: %v", when, p, err))
		}
		return nil
	})
	return sc.seenShare()
}

// seenShare is the share of the expected records seen so far.
func (sc *fileScenario) seenShare() float64 {
	return float64(len(sc.seen)) / float64(sc.expected())
}

// run kills weir after a random delay, looks, and restarts it, until it has
// been killed minKills times and then exits by itself (after maxKills kills
// it is left to finish). It returns the final run's log.
func (sc *fileScenario) run(minKills, maxKills int) string {
	t := sc.t
	s := seed(t)
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	cfg := filepath.Join(sc.dir, "weir.yaml")
	sc.start = time.Now()
	// A start takes about 100 ms of the delay; the first bound is short so
	// that a quiet machine does not finish the short input in one run.
	const minDelay, maxDelay = 80 * time.Millisecond, 1500 * time.Millisecond
	bound := 300 * time.Millisecond
	deadline := time.Now().Add(5 * time.Minute)
	for start := 0; ; start++ {
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: not finished after %d starts", s, start)
		}
		p := startWeir(t, sc.bin, cfg, "weir", sc.env)
		var kill <-chan time.Time
		ahead := 2.0 // what a reader sees when this run is killed anyway
		if sc.kills < maxKills {
			kill = time.After(minDelay + time.Duration(rng.Int64N(int64(bound-minDelay))))
			// A quiet machine writes the short input in half a second,
			// start to end: a delay alone can let one run carry most of it.
			// So the reader looks while weir runs, and the run is killed as
			// soon as it sees this run's share of what is left (the kills
			// still needed share it, at a random half to all of the share).
			if need := minKills - sc.kills; need > 0 {
				seen := sc.seenShare()
				ahead = seen + (1-seen)/float64(need+1)*(0.5+rng.Float64()/2)
			}
		}
		if !sc.runUntilKill(p, kill, ahead) {
			if p.Err != nil {
				t.Fatalf("seed %d: weir exited with %v:\n%s", s, p.Err, tail(p.Log, 30))
			}
			if sc.kills < minKills {
				t.Fatalf("seed %d: the pipeline finished after %d kills; the test needs %d", s, sc.kills, minKills)
			}
			sc.look("end")
			return tail(p.Log, 8)
		}
		sc.kills++
		done := sc.look(fmt.Sprintf("kill %d", sc.kills))
		t.Logf("kill %d at %v: a reader sees %.1f%% of the records", sc.kills, time.Since(sc.start).Round(time.Millisecond), 100*done)
		bound = weirtest.KillBound(bound, done, sc.kills, minKills, minDelay+50*time.Millisecond, maxDelay)
	}
}

// runUntilKill looks at the output every 10 ms while p runs, and kills p
// when kill fires or the reader sees at least the share ahead of the
// expected records. It reports whether it killed p; false means p exited by
// itself.
func (sc *fileScenario) runUntilKill(p *proc, kill <-chan time.Time, ahead float64) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.Done:
			return false
		case <-kill:
			p.Kill()
			return true
		case <-tick.C:
			if sc.look("while weir runs") >= ahead {
				p.Kill()
				return true
			}
		}
	}
}

// File → filter → exactly-once file sink under SIGKILL: at least 20 kills
// at random moments over 1M lines (short in CI), then a clean run. A reader
// polling the directory never sees a record twice or a torn chunk, and the
// reader docs/file-connectors.md describes (testdata/read_chunks.py) finds
// every expected id exactly once at the end; nothing hidden is left.
func TestFileKillExactlyOnce(t *testing.T) {
	files, perFile := 4, size(75_000, 250_000)
	minKills := size(8, 20)
	sc := newFileScenario(t, buildWeir(t, ""), nil, files, perFile)
	final := sc.run(minKills, minKills+10)
	for _, v := range sc.violations {
		t.Error(v)
	}
	c := readChunks(t, filepath.Join(sc.dir, "out"), sc.n, 5)
	t.Logf("%d kills; the reader script: %+v; the final run:\n%s", sc.kills, c, final)
	if c.Missing != 0 || c.Duplicates != 0 || c.Unexpected != 0 || c.Records != int64(sc.expected()) {
		t.Fatalf("the reader script found %d records (%d expected): %d missing %v, %d duplicates %v, %d unexpected; want every id exactly once",
			c.Records, sc.expected(), c.Missing, c.FirstMissing, c.Duplicates, c.FirstDuplicates, c.Unexpected)
	}
	if h := hiddenFiles(t, filepath.Join(sc.dir, "out")); len(h) > 0 {
		t.Errorf("hidden files left after the clean run: %v", h)
	}
	if !strings.Contains(final, "exactly once") {
		t.Errorf("the final run's summary does not say the sink is exactly once:\n%s", final)
	}
}

// The file sink built with unsafe_eos renames its chunks into view before
// the manifest entry with their positions is written (and waits between the
// two): the same checks must find records twice.
func TestFileUnsafeVariantIsCaught(t *testing.T) {
	sc := newFileScenario(t, buildWeir(t, "unsafe_eos"), []string{"WEIR_UNSAFE_EOS=1", "WEIR_UNSAFE_EOS_PAUSE=100ms"}, 4, 20_000)
	sc.run(4, 4)
	c := readChunks(t, filepath.Join(sc.dir, "out"), sc.n, 5)
	t.Logf("%d kills; the reader script: %+v; %d violations seen while polling", sc.kills, c, len(sc.violations))
	if c.Missing != 0 {
		t.Fatalf("%d records missing: even the unsafe variant is at-least-once", c.Missing)
	}
	if c.Duplicates == 0 || len(sc.violations) == 0 {
		t.Fatalf("the unsafe variant wrote %d duplicates (%d seen while polling) over %d kills: the test cannot tell exactly-once from at-least-once", c.Duplicates, len(sc.violations), sc.kills)
	}
}
