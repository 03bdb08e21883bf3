//go:build integration

package s3

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/weir-etl/weir/internal/testkit/s3test"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var killSeed = flag.Uint64("s3kill.seed", 0, "seed of the kill schedules (0: derived from the clock)")

// The sink's pipeline: file → s3, parquet with zstd columns, groups small
// enough that kills land in every phase of a commit.
const sinkYAML = `
sources:
  in:
    type: file
    paths: [%[1]s/input/*.ndjson]
    format: ndjson
    mode: once
    data_dir: %[1]s/state
sinks:
  lake:
    type: s3
    inputs: [in]
    bucket: %[2]s
    endpoint: %[3]s
    prefix: out/
    format: parquet
    compression: zstd
    request_timeout: 30s
    batch: { max_records: 20000, max_age: 50ms }
checkpoint:
  commit_interval: 100ms
metrics: { address: "off" }
`

const sinkFiles = 4

// sinkScenario is one kill run of the sink: its input, bucket and kills.
type sinkScenario struct {
	t      *testing.T
	bin    string
	dir    string
	ep     string
	bucket string
	cl     *s3.Client
	lines  int // per file
	total  int64
	kills  int
}

func newSinkScenario(t *testing.T, bin string, lines int) *sinkScenario {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	sc := &sinkScenario{t: t, bin: bin, dir: t.TempDir(), ep: ep, cl: cl, bucket: s3test.Bucket(t, cl), lines: lines}
	in := filepath.Join(sc.dir, "input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	var line []byte
	for f := range sinkFiles {
		fd, err := os.Create(filepath.Join(in, fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		for i := range lines {
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(f*lines+i), 10)
			line = append(line, `,"pad":"0123456789abcdef0123456789abcdef"}`+"\n"...)
			w.Write(line)
			sc.total += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fd.Close()
	}
	writeFile(t, filepath.Join(sc.dir, "weir.yaml"), fmt.Sprintf(sinkYAML, sc.dir, sc.bucket, ep))
	return sc
}

// stored is the share of the input the sink's position objects cover.
func (sc *sinkScenario) stored() float64 {
	var covered int64
	for _, k := range s3test.Keys(sc.t, sc.cl, sc.bucket, "out/_weir/positions/") {
		var m struct{ End int64 }
		if json.Unmarshal(s3test.Get(sc.t, sc.cl, sc.bucket, k), &m) == nil {
			covered += m.End
		}
	}
	return float64(covered) / float64(sc.total)
}

// run starts weir, kills it after a random delay, and restarts it, until it
// was killed minKills times; after maxKills it is left to finish. The delay's
// bound follows the progress, so that the job is not done before the kills
// the test needs, whatever the machine's speed.
func (sc *sinkScenario) run(minKills, maxKills int) uint64 {
	t := sc.t
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("kill schedule seed %d (replay with -s3kill.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := filepath.Join(sc.dir, "weir.yaml")
	const minDelay, maxDelay = 150 * time.Millisecond, 3 * time.Second
	bound := 400 * time.Millisecond
	prevDone := 0.0
	deadline := time.Now().Add(8 * time.Minute)
	for start := 0; ; start++ {
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: not finished after %d starts", seed, start)
		}
		p := startWeir(t, sc.bin, cfg)
		began, before := time.Now(), prevDone
		var kill <-chan time.Time
		if sc.kills < maxKills {
			kill = time.After(minDelay + time.Duration(rng.Int64N(int64(bound-minDelay))))
		}
		select {
		case <-p.Done:
			if p.Err != nil {
				t.Fatalf("seed %d: weir exited with %v:\n%s", seed, p.Err, weirtest.Tail(p.Log, 30))
			}
			if sc.kills < minKills {
				t.Fatalf("seed %d: the pipeline finished after %d kills; the test needs %d", seed, sc.kills, minKills)
			}
			t.Logf("the final run:\n%s", weirtest.Tail(p.Log, 8))
			secretIn(t, p.Log)
			return seed
		case <-kill:
			p.Kill()
			sc.kills++
			done := sc.stored()
			t.Logf("kill %d: %.1f%% stored", sc.kills, 100*done)
			bound = weirtest.KillBound(bound, done, sc.kills, minKills, minDelay+50*time.Millisecond, maxDelay)
			// The kills still needed share what is left of the work, at the
			// pace of the last run (start included), so that a fast machine
			// does not finish the job before them.
			if need := minKills - sc.kills; need > 0 && done > before {
				left := time.Duration(float64(time.Since(began)) * (1 - done) / (done - before))
				bound = min(bound, max(minDelay+50*time.Millisecond, left/time.Duration(need+1)))
			}
			prevDone = done
		}
	}
}

// readBack reads the bucket with pyarrow's S3 filesystem and boto3, clients
// weir did not write: the ids of every parquet object outside _weir/, and
// the multipart uploads left in progress.
type readBack struct {
	Rows       int   `json:"rows"`
	Distinct   int   `json:"distinct"`
	Missing    int   `json:"missing"`
	Unexpected int   `json:"unexpected"`
	Objects    int   `json:"objects"`
	Uploads    int   `json:"uploads"`
	First      []int `json:"first_missing"`
}

const readBackPy = `
import os, sys, json, boto3, pyarrow.fs as fs, pyarrow.parquet as pq
bucket, n = sys.argv[1], int(sys.argv[2])
ep = os.environ["WEIR_S3_ENDPOINT"]
s3 = fs.S3FileSystem(endpoint_override=ep, scheme="http", region="us-east-1")
ids, objects = [], 0
for info in s3.get_file_info(fs.FileSelector(bucket + "/out", recursive=True)):
    if info.type != fs.FileType.File or "/_weir/" in info.path:
        continue
    objects += 1
    ids.extend(pq.read_table(info.path, filesystem=s3, columns=["id"]).column("id").to_pylist())
seen = set(ids)
missing = [i for i in range(n) if i not in seen]
cl = boto3.client("s3", endpoint_url=ep, region_name="us-east-1")
ups = cl.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
print(json.dumps({"rows": len(ids), "distinct": len(seen), "missing": len(missing), "first_missing": missing[:5],
  "unexpected": len([i for i in seen if i < 0 or i >= n]), "objects": objects, "uploads": len(ups)}))
`

func (sc *sinkScenario) readBack() readBack {
	var rb readBack
	python(sc.t, &rb, readBackPy, sc.bucket, strconv.Itoa(sinkFiles*sc.lines))
	return rb
}

// Exactly-once under SIGKILL: file → s3 (parquet, zstd), weir killed at
// random moments, then a clean run; every id is in the bucket exactly
// once, read by pyarrow, and no multipart upload is left (boto3).
func TestSinkKillExactlyOnce(t *testing.T) {
	// 4 × 200,000 lines: at 100,000 a file, a run killed at the least delay
	// (150 ms) already stored 15% of the input (three groups of 20,000) once
	// weir got faster (a poll batch's references added in one step, the file
	// source decoding in place), and the job was done after 7 kills.
	lines, minKills, maxKills := 200_000, 8, 12
	if full() {
		lines, minKills, maxKills = 1<<18, 20, 30 // 4 × 262,144 ≈ 1.05M lines
	}
	sc := newSinkScenario(t, bins.Build(t, ""), lines)
	seed := sc.run(minKills, maxKills)
	rb := sc.readBack()
	t.Logf("seed %d: %d kills; %d objects, %d rows, %d distinct, %d missing, %d unexpected, %d uploads left",
		seed, sc.kills, rb.Objects, rb.Rows, rb.Distinct, rb.Missing, rb.Unexpected, rb.Uploads)
	if rb.Missing != 0 || rb.Rows != rb.Distinct || rb.Unexpected != 0 || rb.Uploads != 0 {
		t.Fatalf("seed %d: %d missing (first %v), %d duplicates, %d unexpected, %d uploads left; want none",
			seed, rb.Missing, rb.First, rb.Rows-rb.Distinct, rb.Unexpected, rb.Uploads)
	}
}

// The sink built with unsafe_s3 never reads its positions back: it is only
// at-least-once, and the same checks must count its duplicates.
func TestSinkKillUnsafeVariantIsCaught(t *testing.T) {
	sc := newSinkScenario(t, bins.Build(t, "unsafe_s3"), 200_000)
	seed := sc.run(5, 5)
	rb := sc.readBack()
	t.Logf("seed %d: %d kills; %d rows, %d distinct, %d missing", seed, sc.kills, rb.Rows, rb.Distinct, rb.Missing)
	if rb.Missing != 0 {
		t.Fatalf("seed %d: %d ids missing: even the unsafe variant is at-least-once", seed, rb.Missing)
	}
	if rb.Rows == rb.Distinct {
		t.Fatalf("seed %d: the sink that forgets its positions wrote no duplicate over %d kills: the test cannot tell exactly-once from at-least-once", seed, sc.kills)
	}
}
