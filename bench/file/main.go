// Command file benchmarks weir end to end with the real binary: NDJSON files
// → filter(id % 2 == 0) → one or two file sinks, with the sinks'
// acknowledgements on and off, and NDJSON files → map (rename one field) →
// a file sink, and reports input records/s, MB/s, CPU seconds (user+sys of
// the weir process) and peak RSS, as medians of several runs. Every run starts from an empty state and output directory, persists
// its positions and fsyncs its output, as a real run does.
//
//	go run ./bench/file                          # 2M records, 3 runs of each case
//	go run ./bench/file -runs 5 -records 4000000
//	go run ./bench/file -cpuprofile /tmp/prof    # one profile per case, for go tool pprof
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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	records    = flag.Int("records", 2_000_000, "input records")
	files      = flag.Int("files", 4, "input files (each is a partition; one partition is processed by one worker)")
	runs       = flag.Int("runs", 3, "runs of each case; medians are reported")
	binFlag    = flag.String("bin", "", "weir binary to run (default: build ./cmd/weir)")
	workDir    = flag.String("dir", "", "working directory (default: a temporary one, removed at the end)")
	cpuProfile = flag.String("cpuprofile", "", "directory for one CPU profile per case (from the first run)")
	only       = flag.String("case", "", "run only cases whose name contains this")
)

const config = `
sources:
  in:
    type: file
    paths: [%[1]s/*.ndjson]
    format: ndjson
    mode: once
    data_dir: %[2]s/state
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

const sinkYAML = `  out_%[1]s:
    type: file
    inputs: [t]
    path: %[2]s/out/%[1]s
    template: part
    acknowledgements: %[3]t
`

type bcase struct {
	name  string
	sinks int
	acks  bool
	isMap bool // map instead of filter
}

type sample struct {
	wall, cpu time.Duration
	rssMB     float64
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	dir := *workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "weir-bench-file-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		dir = d
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
	in := filepath.Join(dir, "input")
	inBytes := generate(in, *records, *files)
	fmt.Printf("input: %d records, %d files, %.1f MB (%.0f bytes a record); filter keeps %d, map all\n",
		*records, *files, float64(inBytes)/1e6, float64(inBytes)/float64(*records), (*records+1)/2)

	cases := []bcase{
		{"1 sink, acks on", 1, true, false}, {"map, 1 sink, acks on", 1, true, true},
		{"1 sink, acks off", 1, false, false}, {"2 sinks, acks on", 2, true, false}, {"2 sinks, acks off", 2, false, false},
	}
	med := map[string]sample{}
	fmt.Printf("\n%-22s %12s %8s %8s %9s %9s\n", "case", "records/s", "MB/s", "wall s", "CPU s", "RSS MB")
	for _, c := range cases {
		if !strings.Contains(c.name, *only) {
			continue
		}
		var ss []sample
		for r := range *runs {
			prof := ""
			if *cpuProfile != "" && r == 0 {
				os.MkdirAll(*cpuProfile, 0o755)
				prof = filepath.Join(*cpuProfile, strings.NewReplacer(" ", "", ",", "-").Replace(c.name)+".pprof")
			}
			ss = append(ss, runCase(bin, dir, in, c, prof))
		}
		m := median(ss)
		med[c.name] = m
		sec := m.wall.Seconds()
		fmt.Printf("%-22s %12.0f %8.1f %8.2f %9.2f %9.1f   (runs: %s)\n", c.name, float64(*records)/sec, float64(inBytes)/1e6/sec,
			sec, m.cpu.Seconds(), m.rssMB, walls(ss))
	}
	if f, ok1 := med["1 sink, acks on"]; ok1 {
		if m, ok2 := med["map, 1 sink, acks on"]; ok2 {
			fmt.Printf("map/filter: throughput ratio %.3f, CPU ratio %.3f (the map writes twice the records)\n",
				f.wall.Seconds()/m.wall.Seconds(), m.cpu.Seconds()/f.cpu.Seconds())
		}
	}
	for _, n := range []int{1, 2} {
		on, ok1 := med[fmt.Sprintf("%d sink%s, acks on", n, plural(n))]
		off, ok2 := med[fmt.Sprintf("%d sink%s, acks off", n, plural(n))]
		if ok1 && ok2 {
			fmt.Printf("%d sink%s: acks on/off throughput ratio %.3f, CPU ratio %.3f\n", n, plural(n),
				off.wall.Seconds()/on.wall.Seconds(), on.cpu.Seconds()/off.cpu.Seconds())
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func walls(ss []sample) string {
	var p []string
	for _, s := range ss {
		p = append(p, strconv.FormatFloat(s.wall.Seconds(), 'f', 2, 64)+"s")
	}
	return strings.Join(p, " ")
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

// runCase runs weir once on fresh state and output, checks the output, and
// measures it.
func runCase(bin, dir, in string, c bcase, prof string) sample {
	run := filepath.Join(dir, "run")
	os.RemoveAll(run)
	var sinks strings.Builder
	for i := range c.sinks {
		fmt.Fprintf(&sinks, sinkYAML, string(rune('a'+i)), run, c.acks)
	}
	cfgPath := filepath.Join(dir, "weir.yaml")
	tr := filterYAML
	if c.isMap {
		tr = mapYAML
	}
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, config, in, run, sinks.String(), tr), 0o644); err != nil {
		log.Fatal(err)
	}
	args := []string{"run", "-c", cfgPath}
	if prof != "" {
		args = append(args, "--cpuprofile", prof)
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		log.Fatalf("%s: weir: %v\n%s", c.name, err, stderr.String())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	want := (*records + 1) / 2
	if c.isMap {
		want = *records
	}
	for i := range c.sinks {
		if got := countLines(filepath.Join(run, "out", string(rune('a'+i)))); got != want {
			log.Fatalf("%s: sink %c holds %d records, want %d", c.name, 'a'+i, got, want)
		}
	}
	return sample{wall: wall, cpu: cpu, rssMB: float64(ru.Maxrss) / 1024} // Linux: maxrss in KiB
}

func countLines(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n += bytes.Count(b, []byte{'\n'})
		return nil
	})
	return n
}
