// Command file benchmarks weir end to end with the real binary: NDJSON files
// → filter(id % 2 == 0) → one or two file sinks, with the sinks'
// acknowledgements on and off, NDJSON files → map (rename one field) → a
// file sink, and orders → map (five computed fields: a concatenation,
// arithmetic, a conditional, a timestamp parse and format, a nested read)
// → a file sink; and beside each, the bare loop (bare.go): a hand-written Go
// program that does the same work with the same durability and nothing else;
// beside the filter, also that loop on three goroutines (barepipe.go), the
// cost of overlapping the stages by itself.
// It reports input records/s, MB/s, CPU seconds (user+sys of the process)
// and peak RSS, as medians of several runs with their min–max, and the
// ratios weir/bare. Runs alternate between cases and their bare loops, so
// that a busy moment of the machine falls on both. Every run starts from an
// empty state and output directory, persists its positions and fsyncs its
// output, as a real run does.
//
// The stall case runs weir in a child process of this command, file → filter
// → a file sink whose groups never become durable, and samples its RSS: the
// pipeline holds what its limits allow and no more however large the input.
//
//	go run ./bench/file                          # 2M records, 5 runs of each case
//	go run ./bench/file -runs 7 -records 4000000
//	go run ./bench/file -cpuprofile /tmp/prof    # one profile per case and per bare loop (bare-SHAPE.pprof), for go tool pprof
//	go run ./bench/file -records 10000000 -case stall -stall-for 20s
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weir-etl/weir/bench/internal/proc"
)

var (
	records    = flag.Int("records", 2_000_000, "input records")
	files      = flag.Int("files", 4, "input files (each is a partition; one partition is processed by one worker)")
	runs       = flag.Int("runs", 5, "runs of each case; medians are reported")
	binFlag    = flag.String("bin", "", "weir binary to run (default: build ./cmd/weir)")
	workDir    = flag.String("dir", "", "working directory (default: a temporary one, removed at the end)")
	cpuProfile = flag.String("cpuprofile", "", "directory for one CPU profile per case and per bare loop (from the first run)")
	only       = flag.String("case", "", "run only cases whose name contains this, or one of several separated by |; ^ at the start of one: whose name starts with it (\"stall\" runs only the stall case)")
	stallFor   = flag.Duration("stall-for", 10*time.Second, "how long the stall case runs")
	bareShape  = flag.String("bare", "", "run the bare loop of this shape (filter, filterp, map, map5, filter2) and exit (used by the command itself)")
	bareIn     = flag.String("bare-in", "", "the bare loop's input directory")
	bareOutDir = flag.String("bare-out", "", "the bare loop's output directory")
	bareProf   = flag.String("bare-cpuprofile", "", "write the bare loop's CPU profile here (used by the command itself with -cpuprofile)")
	stallChild = flag.String("stall-child", "", "run the stall case on this input directory and exit (used by the command itself)")
	benthos    = flag.String("benthos", "", "the Benthos v4.60 binary (built outside the repository): run its file → filter → file beside the filter cases")
)

// benthosYAML is Benthos doing the filter case: the input files line by
// line, the records with an odd id deleted, the rest to one file. Its file
// output does not fsync; weir's and the bare loop's do.
const benthosYAML = `
http: { enabled: false }
logger: { level: WARN }
metrics: { none: {} }
input:
  file:
    paths: [%[1]s/*.ndjson]
    scanner: { lines: {} }
pipeline:
  processors:
    - mapping: 'root = if this.id %% 2 != 0 { deleted() }'
output:
  file:
    path: %[2]s/benthos/out.ndjson
    codec: lines
`

const pipelineYAML = `
sources:
  in:
    type: file
    paths: [%[1]s/*.ndjson]
    format: ndjson
    mode: once
    data_dir: %[2]s/state%[5]s
transforms:
%[4]s
sinks:
%[3]s
metrics: { address: "off" }
`

// The transforms compared: a filter that keeps every other record, and a map
// that renames one field of every record (which must copy the others byte
// for byte).
const filterYAML = `  t:
    type: filter
    inputs: [in]
    condition: 'id % 2 == 0'`

const mapYAML = `  t:
    type: map
    inputs: [in]
    rename: { tag: label }`

// map5YAML is the realistic map of five computed fields: a concatenation,
// arithmetic, a conditional, a timestamp parse and format, a nested read
// (on the orders input, generateOrders).
const map5YAML = `  t:
    type: map
    inputs: [in]
    set:
      name: first + " " + last
      total: qty * price_cents
      tier: 'total > 3000 ? "gold" : "std"'
      day: format_time(parse_time(ts), "%Y-%m-%d")
      city: user.address.city`

const sinkYAML = `  out_%[1]s:
    type: file
    inputs: [t]
    path: %[2]s/out/%[1]s
    template: part
    acknowledgements: %[3]t
    exactly_once: %[4]t%[5]s
`

// The small-memory case's settings (docs/deploy.md, *A small weir*): what the
// source reads ahead and a group holds, bounded low, and the collector run
// at 30% of the heap's growth, for a peak RSS below Benthos' on the same
// workloads.
const (
	smallEnv        = "GOGC=30"
	smallSourceYAML = `
    max_in_flight_bytes: 1MiB
    batch_size: 500
    read_buffer_bytes: 64KiB`
	smallSinkYAML = `
    batch: { max_records: 1000 }`
)

type bcase struct {
	name  string
	sinks int
	acks  bool
	isMap bool // map instead of filter
	five  bool // with isMap: the five computed fields, on the orders input
	eos   bool // exactly_once on the sinks
	small bool // the small-memory settings
}

// shape names the bare loop that does c's work.
func (c bcase) shape() string {
	switch {
	case c.five:
		return "map5"
	case c.isMap:
		return "map"
	case c.sinks == 2:
		return "filter2"
	}
	return "filter"
}

type sample struct {
	wall, cpu time.Duration
	rssMB     float64
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *bareShape != "" {
		bareMain(*bareShape, *bareIn, *bareOutDir, *bareProf)
		return
	}
	if *stallChild != "" {
		stallMain(*stallChild)
		return
	}
	dir := *workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "weir-bench-file-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	in := filepath.Join(dir, "input")
	inBytes := generate(in, *records, *files)
	fmt.Printf("input: %d records, %d files, %.1f MB (%.0f bytes a record); filter keeps %d, map all\n",
		*records, *files, float64(inBytes)/1e6, float64(inBytes)/float64(*records), (*records+1)/2)
	if *only == "stall" {
		runStall(dir, in)
		return
	}
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(dir, "weir")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/weir")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("building weir (run from the repository root): %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}

	// The exactly-once case runs right after the at-least-once one it is
	// compared with, in every round.
	all := []bcase{
		{name: "1 sink, acks on", sinks: 1, acks: true},
		{name: "1 sink, exactly once", sinks: 1, acks: true, eos: true},
		{name: "map, 1 sink, acks on", sinks: 1, acks: true, isMap: true},
		{name: "map5, 1 sink, acks on", sinks: 1, acks: true, isMap: true, five: true},
		{name: "1 sink, acks off", sinks: 1},
		{name: "2 sinks, acks on", sinks: 2, acks: true},
		{name: "2 sinks, acks off", sinks: 2},
		{name: "1 sink, small memory", sinks: 1, acks: true, small: true},
		{name: "map, 1 sink, small memory", sinks: 1, acks: true, isMap: true, small: true},
		{name: "2 sinks, small memory", sinks: 2, acks: true, small: true},
	}
	var cases []bcase
	for _, c := range all {
		if caseChosen(c.name) {
			cases = append(cases, c)
		}
	}
	in5 := filepath.Join(dir, "input5")
	for _, c := range cases {
		if c.five {
			generateOrders(in5, *records, *files)
			break
		}
	}
	inputOf := func(c bcase) string {
		if c.five {
			return in5
		}
		return in
	}
	weirs := map[string][]sample{}
	bares := map[string][]sample{}
	var benthosRuns []sample
	load0 := loadAvg()
	for r := range *runs {
		done := map[string]bool{}
		for _, c := range cases {
			prof := ""
			if *cpuProfile != "" && r == 0 {
				os.MkdirAll(*cpuProfile, 0o755)
				prof = filepath.Join(*cpuProfile, strings.NewReplacer(" ", "", ",", "-").Replace(c.name)+".pprof")
			}
			weirs[c.name] = append(weirs[c.name], runCase(bin, dir, inputOf(c), c, prof))
			if sh := c.shape(); !done[sh] {
				done[sh] = true
				shapes := []string{sh}
				if sh == "filter" {
					shapes = append(shapes, "filterp") // and pipelined
				}
				for _, sh := range shapes {
					bprof := ""
					if prof != "" {
						bprof = filepath.Join(*cpuProfile, "bare-"+sh+".pprof")
					}
					bares[sh] = append(bares[sh], runBare(self, dir, inputOf(c), sh, bprof))
				}
				if sh == "filter" && *benthos != "" {
					benthosRuns = append(benthosRuns, runBenthos(dir, in))
				}
			}
		}
	}
	fmt.Printf("\nload average (1 min): %s before the runs, %s after (%d cores)\n", load0, loadAvg(), runtime.NumCPU())
	us := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(*records) }
	fmt.Printf("CPU µs per input record, weir and its bare loop:\n")
	for _, c := range cases {
		m, b := median(weirs[c.name]), median(bares[c.shape()])
		fmt.Printf("  %-22s weir %.3f  bare %.3f  weir/bare %.2f   RSS MB weir %.1f bare %.1f\n", c.name, us(m.cpu), us(b.cpu), m.cpu.Seconds()/b.cpu.Seconds(), m.rssMB, b.rssMB)
	}
	if ss := bares["filterp"]; len(ss) > 0 {
		p, b := median(ss), median(bares["filter"])
		fmt.Printf("  %-22s CPU %.3f µs/record, %.2f of the bare loop's, %.0f records/s (the filter's bare loop on three goroutines, as weir splits it)\n",
			"bare filter, pipelined", us(p.cpu), p.cpu.Seconds()/b.cpu.Seconds(), float64(*records)/p.wall.Seconds())
		for _, c := range cases {
			if c.shape() == "filter" {
				m := median(weirs[c.name])
				fmt.Printf("  %-22s weir/pipelined bare: CPU %.2f\n", c.name, m.cpu.Seconds()/p.cpu.Seconds())
			}
		}
	}
	if len(benthosRuns) > 0 {
		b := median(benthosRuns)
		fmt.Printf("  %-22s %10.0f records/s, CPU %.3f µs/record, RSS %.1f MB (%s; its output is not fsynced)\n", "Benthos filter", float64(*records)/b.wall.Seconds(), us(b.cpu), b.rssMB, walls(benthosRuns))
	}

	fmt.Printf("\nmedians of %d runs (min–max of the wall time); weir/bare: throughput, and CPU bare/weir\n", *runs)
	fmt.Printf("%-22s %10s %7s %7s %7s %6s  %-13s %9s %7s %9s %10s\n", "case", "records/s", "MB/s", "wall s", "CPU s", "RSS MB", "(wall min–max)", "bare rec/s", "bare CPU", "weir/bare", "CPU b/w")
	for _, c := range cases {
		m := median(weirs[c.name])
		b := median(bares[c.shape()])
		sec := m.wall.Seconds()
		fmt.Printf("%-22s %10.0f %7.1f %7.2f %7.2f %6.1f  %-13s %9.0f %7.2f %9.2f %10.2f\n", c.name, float64(*records)/sec, float64(inBytes)/1e6/sec,
			sec, m.cpu.Seconds(), m.rssMB, walls(weirs[c.name]), float64(*records)/b.wall.Seconds(), b.cpu.Seconds(),
			b.wall.Seconds()/sec, b.cpu.Seconds()/m.cpu.Seconds())
	}
	for _, sh := range []string{"filter", "filterp", "map", "map5", "filter2"} {
		if ss := bares[sh]; len(ss) > 0 {
			b := median(ss)
			fmt.Printf("bare %-8s %10.0f records/s, %.2f CPU s, %.1f MB RSS  (%s)\n", sh, float64(*records)/b.wall.Seconds(), b.cpu.Seconds(), b.rssMB, walls(ss))
		}
	}
	if f, ok1 := weirs["1 sink, acks on"]; ok1 {
		if m, ok2 := weirs["map, 1 sink, acks on"]; ok2 {
			fmt.Printf("map/filter: throughput ratio %.3f, CPU ratio %.3f (the map writes twice the records)\n",
				median(f).wall.Seconds()/median(m).wall.Seconds(), median(m).cpu.Seconds()/median(f).cpu.Seconds())
		}
	}
	if alo, ok1 := weirs["1 sink, acks on"]; ok1 {
		if eos, ok2 := weirs["1 sink, exactly once"]; ok2 {
			a, e := median(alo), median(eos)
			fmt.Printf("exactly once / at-least-once: throughput ratio %.3f, CPU per record %.3f µs against %.3f µs (ratio %.3f)\n",
				a.wall.Seconds()/e.wall.Seconds(), e.cpu.Seconds()*1e6/float64(*records), a.cpu.Seconds()*1e6/float64(*records), e.cpu.Seconds()/a.cpu.Seconds())
		}
	}
	for _, n := range []int{1, 2} {
		on, ok1 := weirs[fmt.Sprintf("%d sink%s, acks on", n, plural(n))]
		off, ok2 := weirs[fmt.Sprintf("%d sink%s, acks off", n, plural(n))]
		if ok1 && ok2 {
			fmt.Printf("%d sink%s: acks on/off throughput ratio %.3f, CPU ratio %.3f\n", n, plural(n),
				median(off).wall.Seconds()/median(on).wall.Seconds(), median(on).cpu.Seconds()/median(off).cpu.Seconds())
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// walls formats the min–max of the wall times.
func walls(ss []sample) string {
	lo, hi := ss[0].wall, ss[0].wall
	for _, s := range ss {
		lo, hi = min(lo, s.wall), max(hi, s.wall)
	}
	return fmt.Sprintf("%.2f–%.2fs", lo.Seconds(), hi.Seconds())
}

// median takes the median of each measure on its own.
func median(ss []sample) sample {
	pick := func(f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return sample{
		wall:  time.Duration(pick(func(s sample) float64 { return float64(s.wall) })),
		cpu:   time.Duration(pick(func(s sample) float64 { return float64(s.cpu) })),
		rssMB: pick(func(s sample) float64 { return s.rssMB }),
	}
}

// measured runs cmd and measures it.
func measured(what string, cmd *exec.Cmd) sample {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatalf("%s: %v", what, err)
	}
	peak := proc.Watch(cmd.Process.Pid)
	err := cmd.Wait()
	wall := time.Since(start)
	rss := peak.Stop()
	if err != nil {
		log.Fatalf("%s: %v\n%s", what, err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rssMB: rss}
}

// runBenthos runs Benthos's filter once, from an empty output directory,
// checks its output, and measures it.
func runBenthos(dir, in string) sample {
	out := filepath.Join(dir, "benthos")
	os.RemoveAll(out)
	cfg := filepath.Join(dir, "benthos.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, benthosYAML, in, dir), 0o600); err != nil {
		log.Fatal(err)
	}
	s := measured("benthos", exec.Command(*benthos, "-c", cfg))
	if got, want := countLines(out), (*records+1)/2; got != want {
		log.Fatalf("benthos: its output holds %d records, want %d", got, want)
	}
	return s
}

// caseChosen reports whether -case selects the case of this name.
func caseChosen(name string) bool {
	for _, w := range strings.Split(*only, "|") {
		if p, ok := strings.CutPrefix(w, "^"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// loadAvg is the machine's one-minute load average, from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// runBare runs the bare loop of shape once, from an empty output directory,
// checks its output, and measures it.
func runBare(self, dir, in, shape, prof string) sample {
	out := filepath.Join(dir, "bare")
	os.RemoveAll(out)
	args := []string{"-bare", shape, "-bare-in", in, "-bare-out", out}
	if prof != "" {
		args = append(args, "-bare-cpuprofile", prof)
	}
	s := measured("bare "+shape, exec.Command(self, args...))
	want, sinks := (*records+1)/2, 1
	switch shape {
	case "map", "map5":
		want = *records
	case "filter2":
		sinks = 2
	}
	for i := range sinks {
		if got := countLines(filepath.Join(out, string(rune('a'+i)))); got != want {
			log.Fatalf("bare %s: sink %c holds %d records, want %d", shape, 'a'+i, got, want)
		}
	}
	return s
}

// generate writes n records of about 60 bytes across k files and returns the
// bytes written. Ids are dense, so the filter keeps every other record.
func generate(dir string, n, k int) int64 {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	var total int64
	var line []byte
	for f := range k {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%02d.ndjson", f)))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		for i := f; i < n; i += k {
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(i), 10)
			line = append(line, `,"user":"u`...)
			line = strconv.AppendInt(line, int64(i%100000), 10)
			line = append(line, `","amount":`...)
			line = strconv.AppendInt(line, int64(i%9973), 10)
			line = append(line, `,"ok":true,"tag":"ab"}`...)
			line = append(line, '\n')
			w.Write(line)
			total += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			log.Fatal(err)
		}
		fd.Close()
	}
	return total
}

// generateOrders writes n records of about 170 bytes across k files, with
// what the five computed fields read.
func generateOrders(dir string, n, k int) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	for f := range k {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%02d.ndjson", f)))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		for i := f; i < n; i += k {
			fmt.Fprintf(w, `{"id":%d,"first":"Ann","last":"Lee","qty":%d,"price_cents":1250,"ts":"2026-02-%02dT19:27:17Z","user":{"address":{"city":"Lyon","zip":"69001"},"age":33}}`+"\n",
				i, 1+i%5, 1+i%28)
		}
		if err := w.Flush(); err != nil {
			log.Fatal(err)
		}
		fd.Close()
	}
}

// runCase runs weir once on fresh state and output, checks the output, and
// measures it.
func runCase(bin, dir, in string, c bcase, prof string) sample {
	run := filepath.Join(dir, "run")
	os.RemoveAll(run)
	srcExtra, sinkExtra := "", ""
	if c.small {
		srcExtra, sinkExtra = smallSourceYAML, smallSinkYAML
	}
	var sinks strings.Builder
	for i := range c.sinks {
		fmt.Fprintf(&sinks, sinkYAML, string(rune('a'+i)), run, c.acks, c.eos, sinkExtra)
	}
	cfgPath := filepath.Join(dir, "weir.yaml")
	tr := filterYAML
	switch {
	case c.five:
		tr = map5YAML
	case c.isMap:
		tr = mapYAML
	}
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, pipelineYAML, in, run, sinks.String(), tr, srcExtra), 0o644); err != nil {
		log.Fatal(err)
	}
	args := []string{"run", "-c", cfgPath}
	if prof != "" {
		args = append(args, "--cpuprofile", prof)
	}
	cmd := exec.Command(bin, args...)
	if c.small {
		cmd.Env = append(os.Environ(), smallEnv)
	}
	s := measured(c.name+": weir", cmd)
	want := (*records + 1) / 2
	if c.isMap {
		want = *records
	}
	for i := range c.sinks {
		if got := countLines(filepath.Join(run, "out", string(rune('a'+i)))); got != want {
			log.Fatalf("%s: sink %c holds %d records, want %d", c.name, 'a'+i, got, want)
		}
	}
	return s
}

// countLines counts the lines of the chunks a reader counts: files, and
// directories below dir, whose names do not start with a dot (an
// exactly-once sink keeps its manifest in .weir-eos).
func countLines(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		// Read in pieces: this process's RSS is what a child started after
		// it inherits as its peak, so it must stay small.
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, 256<<10)
		for {
			k, err := f.Read(buf)
			n += bytes.Count(buf[:k], []byte{'\n'})
			if err != nil {
				return nil
			}
		}
	})
	return n
}
