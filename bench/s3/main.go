// Command s3 benchmarks weir's S3 connectors end to end with the real binary
// against an S3 server, beside bare programs doing the same transfer:
//
//   - file → s3: weir writing NDJSON objects, and parquet with zstd columns,
//     from NDJSON files, against boto3's upload_file of the same files (the
//     server's bare limit here: no parsing, no encoding, no positions);
//   - s3 → file: weir reading NDJSON objects into NDJSON chunk files,
//     against a bare aws-sdk-go-v2 loop that GETs each object and writes its
//     bytes to a file, fsynced at the end.
//
// Cases run interleaved, runs times each; it reports medians of records/s,
// MB/s of input, CPU seconds and CPU per record, and the ratios to the bare
// programs. Every run starts from an empty bucket prefix and state.
//
//	bash .ci/s3.sh start && eval "$(bash .ci/s3.sh env)"
//	go run ./bench/s3                  # 1M records, 3 runs of each case
//	go run ./bench/s3 -runs 5 -records 2000000
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

var (
	records = flag.Int("records", 1_000_000, "input records")
	files   = flag.Int("files", 4, "input files (partitions) for file → s3")
	objects = flag.Int("objects", 40, "objects for s3 → file")
	runs    = flag.Int("runs", 3, "runs of each case; medians are reported")
	binFlag = flag.String("bin", "", "weir binary (default: build ./cmd/weir)")
	only    = flag.String("case", "", "run only cases whose name contains this")
)

var ctx = context.Background()

const sinkYAML = `
sources:
  in: { type: file, paths: [%[1]s/*.ndjson], format: ndjson, mode: once, data_dir: %[2]s/state }
sinks:
  lake:
    type: s3
    inputs: [in]
    bucket: %[3]s
    endpoint: %[4]s
    prefix: %[5]s
    format: %[6]s
    compression: %[7]s
    batch: { max_records: 100000, max_bytes: 64MiB, max_age: 1s }
metrics: { address: "off" }
`

const sourceYAML = `
sources:
  in: { type: s3, bucket: %[3]s, endpoint: %[4]s, prefix: %[5]s, mode: once, data_dir: %[2]s/state }
sinks:
  out:
    type: file
    inputs: [in]
    path: %[2]s/out
    batch: { max_records: 100000, max_bytes: 64MiB, max_age: 1s }
metrics: { address: "off" }
`

type sample struct {
	wall, cpu time.Duration
}

type bcase struct {
	name string
	kind string // "sink" or "source": which bare program it is held against
	run  func(i int) sample
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	ep := os.Getenv("WEIR_S3_ENDPOINT")
	if ep == "" {
		log.Fatal(`WEIR_S3_ENDPOINT is not set: bash .ci/s3.sh start && eval "$(bash .ci/s3.sh env)"`)
	}
	dir, err := os.MkdirTemp("", "weir-bench-s3-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(dir, "weir")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/weir")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("building weir (run from the repository root): %v", err)
		}
	}
	cl := client(ep)
	bucket := fmt.Sprintf("weir-bench-%d", time.Now().UnixNano())
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		log.Fatalf("creating bucket: %v", err)
	}
	defer func() { empty(cl, bucket, ""); cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket}) }()

	in := filepath.Join(dir, "input")
	size := generate(in, *files)
	objDir := filepath.Join(dir, "objects")
	generate(objDir, *objects)
	upload(cl, bucket, "src/", objDir)
	fmt.Printf("input: %d records, %.1f MB (%.0f bytes a record); file → s3 from %d files, s3 → file from %d objects\n",
		*records, float64(size)/1e6, float64(size)/float64(*records), *files, *objects)

	weir := func(yaml, prefix, format, compression string) func(int) sample {
		return func(i int) sample {
			run := filepath.Join(dir, "run")
			os.RemoveAll(run)
			p := fmt.Sprintf("%s%d/", prefix, i)
			if yaml == sourceYAML {
				p = "src/" // the source reads the uploaded objects
			}
			cfg := filepath.Join(dir, "weir.yaml")
			if err := os.WriteFile(cfg, fmt.Appendf(nil, yaml, in, run, bucket, ep, p, format, compression), 0o600); err != nil {
				log.Fatal(err)
			}
			cmd := exec.Command(bin, "run", "-c", cfg)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				log.Fatalf("weir: %v\n%s", err, stderr.String())
			}
			wall := time.Since(start)
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if yaml == sinkYAML {
				empty(cl, bucket, p)
			}
			return sample{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
		}
	}
	cases := []bcase{
		{"boto3 upload_file", "sink", func(i int) sample { return boto3Upload(cl, bucket, fmt.Sprintf("boto/%d/", i), in) }},
		{"weir file → s3 ndjson", "sink", weir(sinkYAML, "nd/", "ndjson", "none")},
		{"weir file → s3 parquet zstd", "sink", weir(sinkYAML, "pq/", "parquet", "zstd")},
		{"bare GetObject loop", "source", func(int) sample { return bareGet(cl, bucket, "src/", filepath.Join(dir, "bare.ndjson")) }},
		{"weir s3 → file", "source", weir(sourceYAML, "", "", "")},
	}
	all := map[string][]sample{}
	for r := range *runs {
		for _, c := range cases {
			if strings.Contains(c.name, *only) {
				all[c.name] = append(all[c.name], c.run(r))
			}
		}
	}
	fmt.Printf("\n%-30s %12s %8s %8s %8s %10s   %s\n", "case", "records/s", "MB/s", "wall s", "CPU s", "CPU/rec", "runs")
	med := map[string]sample{}
	for _, c := range cases {
		ss := all[c.name]
		if len(ss) == 0 {
			continue
		}
		m := median(ss)
		med[c.name] = m
		fmt.Printf("%-30s %12.0f %8.1f %8.2f %8.2f %8.2fµs   %s\n", c.name, float64(*records)/m.wall.Seconds(), float64(size)/1e6/m.wall.Seconds(),
			m.wall.Seconds(), m.cpu.Seconds(), float64(m.cpu.Microseconds())/float64(*records), walls(ss))
	}
	for _, c := range cases {
		bare := map[string]string{"sink": "boto3 upload_file", "source": "bare GetObject loop"}[c.kind]
		b, ok1 := med[bare]
		w, ok2 := med[c.name]
		if ok1 && ok2 && c.name != bare {
			fmt.Printf("%s / %s throughput: %.2f\n", c.name, bare, b.wall.Seconds()/w.wall.Seconds())
		}
	}
}

func client(ep string) *s3.Client {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		log.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint, o.UsePathStyle = aws.String(ep), true
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// generate writes the records into n NDJSON files: about 100 bytes a record.
func generate(dir string, n int) int64 {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	var total int64
	var line []byte
	for f := range n {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%03d.ndjson", f)))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		for i := f; i < *records; i += n {
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(i), 10)
			line = append(line, `,"user":"user-`...)
			line = strconv.AppendInt(line, int64(i%100000), 10)
			line = append(line, `","amount":`...)
			line = strconv.AppendInt(line, int64(i%99991), 10)
			line = append(line, `.25,"ok":true,"tag":"abcdefghijklmnopqrstuvwxyz0123456789"}`+"\n"...)
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

func upload(cl *s3.Client, bucket, prefix, dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			log.Fatal(err)
		}
		key := prefix + e.Name()
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(b)}); err != nil {
			log.Fatal(err)
		}
	}
}

func empty(cl *s3.Client, bucket, prefix string) {
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		var ids []types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		for _, id := range ids {
			cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: id.Key})
		}
	}
}

const boto3Py = `
import os, sys, time, resource, boto3
bucket, prefix, dir = sys.argv[1], sys.argv[2], sys.argv[3]
cl = boto3.client("s3", endpoint_url=os.environ["WEIR_S3_ENDPOINT"], region_name="us-east-1")
names = sorted(os.listdir(dir))
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.monotonic()
for n in names:
    cl.upload_file(os.path.join(dir, n), bucket, prefix + n)
wall = time.monotonic() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
`

// boto3Upload uploads the input files with boto3's upload_file (its
// multipart transfer, with its own threads) and times that alone, in the
// Python process.
func boto3Upload(cl *s3.Client, bucket, prefix, dir string) sample {
	out, err := exec.Command("python3", "-c", boto3Py, bucket, prefix, dir).Output()
	if err != nil {
		log.Fatalf("boto3 (pip install boto3): %v", err)
	}
	f := strings.Fields(string(out))
	wall, _ := strconv.ParseFloat(f[0], 64)
	cpu, _ := strconv.ParseFloat(f[1], 64)
	empty(cl, bucket, prefix)
	return sample{wall: time.Duration(wall * 1e9), cpu: time.Duration(cpu * 1e9)}
}

// bareGet is the loop a Go programmer would write: list the objects, GET
// each, copy its bytes to one output file, fsync it at the end. It keeps no
// positions and parses nothing.
func bareGet(cl *s3.Client, bucket, prefix, path string) sample {
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, o := range page.Contents {
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: o.Key})
			if err != nil {
				log.Fatal(err)
			}
			if _, err := io.Copy(w, out.Body); err != nil {
				log.Fatal(err)
			}
			out.Body.Close()
		}
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
	f.Close()
	wall := time.Since(start)
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	os.Remove(path)
	return sample{wall: wall, cpu: cpu}
}

func median(ss []sample) sample {
	pick := func(f func(sample) time.Duration) time.Duration {
		v := make([]time.Duration, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return sample{wall: pick(func(s sample) time.Duration { return s.wall }), cpu: pick(func(s sample) time.Duration { return s.cpu })}
}

func walls(ss []sample) string {
	var p []string
	for _, s := range ss {
		p = append(p, strconv.FormatFloat(s.wall.Seconds(), 'f', 2, 64)+"s")
	}
	return strings.Join(p, " ")
}
