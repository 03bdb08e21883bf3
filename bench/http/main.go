// Command http benchmarks weir's HTTP source and sink end to end with the
// real binary, beside Benthos v4.60 doing the same work:
//
//   - in: a load of NDJSON records, POSTed by this command from 8
//     connections in requests of 500, into http_server → a file sink (weir:
//     answered once the records are fsynced; Benthos: http_server → file,
//     answered once its output took them);
//   - out: an NDJSON file → the http sink, requests of 500 records, 4 in
//     flight, to a receiver in this command (Benthos: file → http_client
//     with the same batching and max_in_flight).
//
// Beside them in the in case runs the bare server (bare.go): a plain
// net/http server doing the same durable work and nothing else, whose CPU
// per record is the floor a target must respect.
//
// It reports records/s, the server's or pipeline's CPU seconds (user+sys of
// its process, start and stop included), CPU µs a record, records per CPU
// second, peak RSS and (in) the chunk files written, as medians of several
// runs with their min–max, and the ratios weir/Benthos, bare/Benthos and
// weir/bare. Runs alternate between weir, the bare server and Benthos, so
// that a busy moment falls on all. Benthos is not in this repository: build
// it in a scratch module (docs/http.md), and give its binary with -benthos;
// without it only weir and the bare server run. Its configurations are in
// benthos/ beside this file.
//
//	go run ./bench/http -benthos /tmp/benthos-build/benthos
//	go run ./bench/http -records 1000000 -runs 7 -benthos ...
//	go run ./bench/http -case in -cpuprofile /tmp/prof   # go tool pprof /tmp/prof/weir-in-0.pprof
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weir-etl/weir/bench/internal/proc"
)

var (
	records = flag.Int("records", 400_000, "records of each run")
	runs    = flag.Int("runs", 5, "runs of each case; medians are reported")
	benthos = flag.String("benthos", "", "the Benthos v4.60 binary (built outside the repository); empty runs weir alone")
	binFlag = flag.String("bin", "", "weir binary (default: build ./cmd/weir)")
	only    = flag.String("case", "", "run only the case in or out")
	bare    = flag.Bool("bare", true, "run the bare server (bare.go) beside weir in the in case")
	cpuProf = flag.String("cpuprofile", "", "directory for a CPU profile of weir (weir run --cpuprofile) and of the bare server in each run of the in case, for go tool pprof")

	bareServe = flag.String("bare-serve", "", "serve as the bare server at this address and exit on SIGTERM (used by the command itself)")
	bareOut   = flag.String("bare-out", "", "the bare server's output directory")
	bareProf  = flag.String("bare-cpuprofile", "", "the bare server's CPU profile")
)

const clients = 8
const perRequest = 500

const weirIn = `
sources:
  in:
    type: http_server
    address: %[2]s
    paths: [/ingest]
sinks:
  out:
    type: file
    inputs: [in]
    path: %[1]s/out
    template: part
    batch: { max_age: 20ms }
metrics: { address: "off" }
`

const weirOut = `
sources:
  in:
    type: file
    paths: [%[1]s/in.ndjson]
    mode: once
    data_dir: %[1]s/state
sinks:
  out:
    type: http
    inputs: [in]
    url: http://%[2]s/ingest
    max_request_records: 500
    concurrency: 4
    connect_timeout: 10s
metrics: { address: "off" }
`

type sample struct {
	recs, wall, cpu, rss float64
	files                float64 // the in case: the chunk files written (each one fsync)
}

func (s sample) rate() float64   { return s.recs / s.wall }
func (s sample) perCPU() float64 { return s.recs / s.cpu }

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *bareServe != "" {
		bareMain(*bareServe, *bareOut)
		return
	}
	root, err := os.MkdirTemp("", "weir-bench-http-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(root, "weir")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/weir")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatal(err)
		}
	}
	here := benchDir()
	body := payload()
	input := filepath.Join(root, "in.ndjson")
	if err := os.WriteFile(input, bytes.Join(body, nil), 0o644); err != nil {
		log.Fatal(err)
	}
	results := map[string][]sample{}
	for r := range *runs {
		for _, eng := range []string{"weir", "bare", "benthos"} {
			if eng == "benthos" && *benthos == "" || eng == "bare" && !*bare {
				continue
			}
			if *only == "" || *only == "in" {
				dir := filepath.Join(root, fmt.Sprintf("%s-in-%d", eng, r))
				results[eng+" in"] = append(results[eng+" in"], runIn(eng, bin, here, dir, body, r))
			}
			if eng != "bare" && (*only == "" || *only == "out") {
				dir := filepath.Join(root, fmt.Sprintf("%s-out-%d", eng, r))
				results[eng+" out"] = append(results[eng+" out"], runOut(eng, bin, here, dir, input))
			}
		}
	}
	fmt.Printf("%d records of %d bytes on average, medians of %d runs (min–max)\n", *records, len(bytes.Join(body, nil)) / *records, *runs)
	fmt.Printf("%-12s %22s %18s %20s %24s %16s %18s\n", "case", "records/s", "CPU s", "CPU µs a record", "records per CPU s", "peak RSS MiB", "files written")
	for _, c := range []string{"weir in", "bare in", "benthos in", "weir out", "benthos out"} {
		ss := results[c]
		if len(ss) == 0 {
			continue
		}
		files := "-"
		if strings.HasSuffix(c, " in") {
			files = stat(ss, func(s sample) float64 { return s.files }, "%.0f")
		}
		fmt.Printf("%-12s %22s %18s %20s %24s %16s %18s\n", c,
			stat(ss, sample.rate, "%.0f"), stat(ss, func(s sample) float64 { return s.cpu }, "%.2f"),
			stat(ss, func(s sample) float64 { return 1e6 * s.cpu / s.recs }, "%.2f"),
			stat(ss, sample.perCPU, "%.0f"), stat(ss, func(s sample) float64 { return s.rss }, "%.0f"), files)
	}
	ratio := func(what, a, b string) {
		x, y := results[a], results[b]
		if len(x) == 0 || len(y) == 0 {
			return
		}
		fmt.Printf("%s: records/s %.2f, records per CPU second %.2f\n", what,
			median(x, sample.rate)/median(y, sample.rate), median(x, sample.perCPU)/median(y, sample.perCPU))
	}
	ratio("in, weir/Benthos", "weir in", "benthos in")
	ratio("in, bare/Benthos", "bare in", "benthos in")
	ratio("in, weir/bare", "weir in", "bare in")
	ratio("out, weir/Benthos", "weir out", "benthos out")
}

func benchDir() string {
	if _, err := os.Stat("bench/http/benthos"); err == nil {
		return "bench/http"
	}
	log.Fatal("run from the module root: go run ./bench/http")
	return ""
}

// payload returns the records, one NDJSON line each, of about 120 bytes.
func payload() [][]byte {
	out := make([][]byte, *records)
	for i := range out {
		out[i] = fmt.Appendf(nil, "{\"id\":%d,\"user\":\"u%05d\",\"event\":\"page_view\",\"path\":\"/shop/item/%d\",\"amount\":%d.%02d,\"ok\":true}\n",
			i, i%100000, i%5000, i%1000, i%100)
	}
	return out
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func command(eng, bin, here, dir, cfgTemplate, benthosCfg, addr string) *exec.Cmd {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	cfg := filepath.Join(dir, "pipeline.yaml")
	var text string
	if eng == "weir" {
		text = fmt.Sprintf(cfgTemplate, dir, addr)
	} else {
		b, err := os.ReadFile(filepath.Join(here, "benthos", benthosCfg))
		if err != nil {
			log.Fatal(err)
		}
		text = strings.NewReplacer("$DIR", dir, "$ADDR", addr).Replace(string(b))
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		log.Fatal(err)
	}
	var cmd *exec.Cmd
	if eng == "weir" {
		cmd = exec.Command(bin, "run", "-c", cfg, "--log-level", "warn")
	} else {
		cmd = exec.Command(*benthos, "-c", cfg)
	}
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	return cmd
}

// bareCommand is the bare server (bare.go): this command run again.
func bareCommand(dir, addr string) *exec.Cmd {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(self, "-bare-serve", addr, "-bare-out", filepath.Join(dir, "out"))
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	return cmd
}

// usage returns the CPU seconds of the ended cmd and the peak RSS its
// sampler saw (proc.Peak says why not the rusage's maxrss).
func usage(cmd *exec.Cmd, peak *proc.Peak) (cpu, rssMiB float64) {
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return cpu, peak.Stop()
}

// runIn posts every record to a server and stops it once all are answered.
// Run r of weir writes a CPU profile under -cpuprofile, if given.
func runIn(eng, bin, here, dir string, body [][]byte, r int) sample {
	addr := freeAddr()
	var cmd *exec.Cmd
	if eng == "bare" {
		cmd = bareCommand(dir, addr)
	} else {
		cmd = command(eng, bin, here, dir, weirIn, "http_server_to_file.yaml", addr)
	}
	if eng != "benthos" && *cpuProf != "" {
		if err := os.MkdirAll(*cpuProf, 0o755); err != nil {
			log.Fatal(err)
		}
		opt := "--cpuprofile"
		if eng == "bare" {
			opt = "-bare-cpuprofile"
		}
		cmd.Args = append(cmd.Args, opt, filepath.Join(*cpuProf, fmt.Sprintf("%s-in-%d.pprof", eng, r)))
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	peak := proc.Watch(cmd.Process.Pid)
	url := "http://" + addr + "/ingest"
	waitUp(addr)
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range clients {
		wg.Go(func() {
			tr := &nethttp.Transport{MaxIdleConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			cl := &nethttp.Client{Transport: tr, Timeout: time.Minute}
			for {
				i := int(next.Add(perRequest)) - perRequest
				if i >= len(body) {
					return
				}
				req := bytes.Join(body[i:min(i+perRequest, len(body))], nil)
				for {
					resp, err := cl.Post(url, "application/x-ndjson", bytes.NewReader(req))
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 200 {
							break
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0).Seconds()
	peak.Sample()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	cpu, rss := usage(cmd, peak)
	n, files := countLines(filepath.Join(dir, "out"))
	if n < len(body) {
		log.Fatalf("%s in: %d records in the output, want %d", eng, n, len(body))
	}
	return sample{float64(len(body)), wall, cpu, rss, float64(files)}
}

// runOut runs a pipeline from the input file to a receiver in this process
// until it ends by itself (the input read and sent).
func runOut(eng, bin, here, dir, input string) sample {
	var got atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		sc := bufio.NewScanner(r.Body)
		n := 0
		for sc.Scan() {
			if len(sc.Bytes()) > 0 {
				n++
			}
		}
		got.Add(int64(n))
		w.WriteHeader(200)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.Link(input, filepath.Join(dir, "in.ndjson")); err != nil {
		log.Fatal(err)
	}
	cmd := command(eng, bin, here, dir, weirOut, "file_to_http_client.yaml", ln.Addr().String())
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	peak := proc.Watch(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		log.Fatalf("%s out: %v\n%s", eng, err, b)
	}
	wall := time.Since(t0).Seconds()
	cpu, rss := usage(cmd, peak)
	if n := got.Load(); n < int64(*records) {
		log.Fatalf("%s out: the receiver got %d records, want %d", eng, n, *records)
	}
	return sample{recs: float64(*records), wall: wall, cpu: cpu, rss: rss}
}

func waitUp(addr string) {
	for range 1000 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Fatalf("nothing listens on %s", addr)
}

// countLines returns the lines of the visible files under dir, and how
// many files hold them.
func countLines(dir string) (lines, files int) {
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.HasPrefix(fi.Name(), ".") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			lines += bytes.Count(b, []byte("\n"))
			files++
		}
		return nil
	})
	return lines, files
}

func median(ss []sample, f func(sample) float64) float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func stat(ss []sample, f func(sample) float64, format string) string {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return fmt.Sprintf(format+" ("+format+"–"+format+")", v[len(v)/2], v[0], v[len(v)-1])
}
