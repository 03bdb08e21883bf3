package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/config"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
	"github.com/weir-etl/weir/pipeline"
	"go.uber.org/goleak"
)

// reloadConfig is a file source in tail mode, a map that tags each record
// with the configuration's version, and a file sink.
func reloadConfig(dir string, version int) string {
	return fmt.Sprintf(`
sources:
  in:
    type: file
    paths: [%[1]s/in/*.log]
    mode: tail
    data_dir: %[1]s/state
    poll_interval: 5ms
    batch_size: 50
transforms:
  tag: { type: map, inputs: [in], set: { v: '%[2]d' } }
sinks:
  out:
    type: file
    inputs: [tag]
    path: %[1]s/out
    batch: { max_records: 100, max_age: 10ms }
checkpoint: { commit_interval: 10ms, max_in_flight_batches: 4 }
metrics: { address: "off" }
`, dir, version)
}

// written reads every record the file sink made visible: n and the version
// that tagged it.
func written(t *testing.T, dir string) []struct{ N, V int64 } {
	t.Helper()
	var out []struct{ N, V int64 }
	files, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*.ndjson"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var r struct{ N, V int64 }
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %q: %v", f, sc.Text(), err)
			}
			out = append(out, r)
		}
		fh.Close()
	}
	return out
}

// Guarantee: a reload under load loses nothing. A configuration with a
// problem is refused, with the problem logged, and the running one goes
// on; a valid one is started from the committed positions once the
// running one stopped (stop, drain, commit): every line written before,
// during and after the reload is in the output, duplicates are at most
// what the source may have in flight (max_in_flight_batches × batch_size),
// records read after the reload carry the new configuration's tag, and no
// goroutine is left behind.
func TestReloadUnderLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "weir.yaml")
	writeFile(t, cfg, reloadConfig(dir, 1))
	log, err := os.OpenFile(filepath.Join(dir, "in", "a.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	n := 0
	appendLines := func(k int) {
		var b strings.Builder
		for range k {
			fmt.Fprintf(&b, "{\"n\":%d}\n", n)
			n++
		}
		if _, err := log.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
	}
	waitWritten := func(want int) []struct{ N, V int64 } {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := written(t, dir)
			seen := map[int64]bool{}
			for _, r := range got {
				seen[r.N] = true
			}
			if len(seen) >= want {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d lines written", len(seen), want)
			}
			time.Sleep(5 * time.Millisecond) // polling the sink's output
		}
	}
	appendLines(2000)

	reloads := make(chan bool, 4)
	sigs, code, stderr := make(chan os.Signal, 1), make(chan int, 1), &syncBuffer{}
	c := &command{stdout: &syncBuffer{}, stderr: stderr, signals: sigs, reloaded: func(ok bool) { reloads <- ok }}
	go func() { code <- c.main([]string{"run", "-c", cfg}) }()
	waitWritten(500)

	// A broken configuration is refused; the pipeline goes on.
	writeFile(t, cfg, strings.Replace(reloadConfig(dir, 2), "batch_size: 50", "batch_size: lots", 1))
	sigs <- syscall.SIGHUP
	if ok := <-reloads; ok {
		t.Fatal("a broken configuration was taken")
	}
	appendLines(1000)
	waitWritten(2500)

	// A valid one, while lines keep coming.
	var wg sync.WaitGroup
	stopWriting := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stopWriting:
				return
			default:
			}
			appendLines(20)
			time.Sleep(time.Millisecond) // a steady writer, not a synchronisation
		}
	})
	writeFile(t, cfg, reloadConfig(dir, 2))
	sigs <- syscall.SIGHUP
	if ok := <-reloads; !ok {
		t.Fatalf("a valid configuration was refused:\n%s", stderr)
	}
	close(stopWriting)
	wg.Wait()
	appendLines(500)
	total := n
	got := waitWritten(total)
	sigs <- syscall.SIGTERM
	if c := <-code; c != ExitOK {
		t.Fatalf("exit %d\n%s", c, stderr)
	}

	count := map[int64]int{}
	for _, r := range got {
		count[r.N]++
	}
	dups := len(got) - len(count)
	for i := range int64(total) {
		if count[i] == 0 {
			t.Errorf("line %d lost", i)
		}
	}
	if bound := 4 * 50; dups > bound {
		t.Errorf("%d duplicates, more than the %d that can be in flight", dups, bound)
	}
	t.Logf("%d lines, %d records written, %d duplicates", total, len(got), dups)
	var first, last int64 = -1, -1
	for _, r := range got {
		if r.N == 0 {
			first = r.V
		}
		if r.N == int64(total-1) {
			last = r.V
		}
	}
	if first != 1 || last != 2 {
		t.Errorf("the first line is tagged %d and the last %d; want 1 and 2", first, last)
	}
	for _, w := range []string{"reload refused: the new configuration has problems; still running the current one",
		`sources.in.batch_size: \"lots\" is not a whole number`, "reload: the new configuration is valid",
		"reload: the previous configuration stopped"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// Guarantee: a reload hands on exactly the Kafka sources whose settings
// did not change; a file source is always stopped and started.
func TestReloadKeepsUnchangedSources(t *testing.T) {
	const base = `
sources:
  orders:
    type: kafka
    brokers: [127.0.0.1:9092]
    group: g
    topics: [orders]
  audit:
    type: kafka
    brokers: [127.0.0.1:9092]
    group: g2
    topics: [audit]
  files:
    type: file
    paths: [/tmp/in/*.log]
    data_dir: /tmp/state
transforms:
  tag: { type: map, inputs: [orders, audit, files], set: { v: '1' } }
sinks:
  out: { type: stdout, inputs: [tag] }
`
	parse := func(y string) *pipeline.Spec {
		t.Helper()
		sp, err := config.ParseWith("weir.yaml", []byte(y), config.Options{Offline: true})
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	running := parse(base)
	for _, tc := range []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"nothing changed", func(s string) string { return s }, []string{"orders", "audit"}},
		{"a transform changed", func(s string) string { return strings.Replace(s, "v: '1'", "v: '2'", 1) }, []string{"orders", "audit"}},
		{"an option of one source", func(s string) string { return strings.Replace(s, "topics: [audit]", "topics: [audit, more]", 1) }, []string{"orders"}},
		{"an option set to its default", func(s string) string {
			return strings.Replace(s, "group: g\n", "group: g\n    max_poll_records: 10000\n", 1)
		}, []string{"orders", "audit"}},
		{"an in-flight limit", func(s string) string {
			return strings.Replace(s, "group: g2\n", "group: g2\n    max_in_flight_batches: 3\n", 1)
		}, []string{"orders"}},
		{"a source renamed", func(s string) string { return strings.ReplaceAll(s, "orders", "sales") }, []string{"audit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pipeline.UnchangedSources(running, parse(tc.edit(base)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}

// Guarantee: the summary after reloads counts every run, not the last
// one: records read and written since the process started.
func TestSummaryCountsEveryRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "weir.yaml")
	writeFile(t, cfg, reloadConfig(dir, 0))
	in := filepath.Join(dir, "in", "a.log")
	n := 0
	appendLines := func(k int) {
		var b strings.Builder
		for range k {
			fmt.Fprintf(&b, "{\"n\":%d}\n", n)
			n++
		}
		fh, err := os.OpenFile(in, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	reloads := make(chan bool, 4)
	sigs, code, stderr := make(chan os.Signal, 1), make(chan int, 1), &syncBuffer{}
	c := &command{stdout: &syncBuffer{}, stderr: stderr, signals: sigs, reloaded: func(ok bool) { reloads <- ok }}
	go func() { code <- c.main([]string{"run", "-c", cfg}) }()
	waitAll := func() {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			seen := map[int64]bool{}
			for _, r := range written(t, dir) {
				seen[r.N] = true
			}
			if len(seen) == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d lines written", len(seen), n)
			}
			time.Sleep(5 * time.Millisecond) // polling the sink's output
		}
	}
	const runs = 20
	for i := 1; i <= runs; i++ {
		appendLines(300)
		waitAll() // each run reads some of the input
		writeFile(t, cfg, reloadConfig(dir, i))
		sigs <- syscall.SIGHUP
		if ok := <-reloads; !ok {
			t.Fatalf("reload %d refused:\n%s", i, stderr)
		}
	}
	appendLines(300)
	waitAll()
	sigs <- syscall.SIGTERM
	if c := <-code; c != ExitOK {
		t.Fatalf("exit %d\n%s", c, stderr)
	}
	got := len(written(t, dir))
	t.Logf("%d lines, %d records written; the summary:\n%s", n, got, weirtest.Last(stderr.String(), 5))
	for _, want := range []string{fmt.Sprintf("%d records read", got), fmt.Sprintf("%d written", got)} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("after %d reloads the summary lacks %q (%d lines in, %d records written):\n%s", runs, want, n, got, weirtest.Last(stderr.String(), 6))
		}
	}
}
