//go:build integration

package s3_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/s3test"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
	s3sink "github.com/weir-etl/weir/sink/s3"
)

func newSink(t *testing.T, endpoint, bucket string, mutate func(*s3sink.Config)) *s3sink.Sink {
	t.Helper()
	c := s3sink.NewConfig()
	c.Bucket, c.Endpoint, c.Prefix = bucket, endpoint, "out/"
	c.RequestTimeout = 10 * time.Second
	if mutate != nil {
		mutate(c)
	}
	s, err := s3sink.New("out", c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// data returns the visible objects' lines under out/, _weir/ aside, in key
// order.
func data(t *testing.T, ep, bucket string) [][]byte {
	t.Helper()
	cl := s3test.Client(t, ep)
	var out [][]byte
	for _, k := range s3test.Keys(t, cl, bucket, "out/") {
		if strings.HasPrefix(k, "out/_weir/") {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(s3test.Get(t, cl, bucket, k)))
		for sc.Scan() {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	return out
}

// The sink passes the shared suite against a real server.
func TestConformance(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	buckets := map[connector.Sink]string{}
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			b := s3test.Bucket(t, cl)
			s := newSink(t, ep, b, nil)
			buckets[s] = b
			return s
		},
		Count:   func(t *testing.T, s connector.Sink) int { return len(data(t, ep, buckets[s])) },
		Written: func(t *testing.T, s connector.Sink) [][]byte { return data(t, ep, buckets[s]) },
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			s2 := newSink(t, ep, buckets[s], nil)
			buckets[s2] = buckets[s]
			return s2
		},
		Unwritable: func() record.Record { return record.New([]byte("{\"a\":1}\n{\"b\":2}")) },
	})
}

// An object larger than a part goes up in several parts and reads back
// whole; the uploads a crashed run left under the prefix are aborted at
// the next Open, and nothing is left in progress at the end.
func TestMultipartAndOrphans(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	orphan := s3test.StartUpload(t, cl, bucket, "out/part-p_0-0123456789abcdef-0000000001-000.ndjson")
	other := s3test.StartUpload(t, cl, bucket, "out/someone-elses.bin")
	ctx := context.Background()
	s := newSink(t, ep, bucket, func(c *s3sink.Config) { c.PartBytes = 5 << 20 })
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if ups := s3test.Uploads(t, cl, bucket, "out/"); len(ups) != 1 || ups[0] != other {
		t.Fatalf("uploads after Open: %v, want only %v (the sink's orphan %v aborted, another program's kept)", ups, other, orphan)
	}
	pad := strings.Repeat("x", 1000)
	var recs []record.Record
	for i := range 12000 { // about 12 MB: three parts
		r := record.New(fmt.Appendf(nil, `{"i":%d,"pad":%q}`, i, pad))
		r.Origin = record.Origin{Source: "src", Partition: "p/0", Offset: int64(i)}
		recs = append(recs, r)
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	s.GroupPositions([]connector.GroupPosition{{Source: "src", Partition: "p/0", Position: 12000}})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := data(t, ep, bucket)
	if len(got) != 12000 {
		t.Fatalf("%d records read back, want 12000", len(got))
	}
	for i, l := range got {
		if want := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad); string(l) != want {
			t.Fatalf("record %d read back as %.60s", i, l)
		}
	}
	var man struct {
		Objects []struct{ Parts []json.RawMessage }
	}
	var posKey string
	for _, k := range s3test.Keys(t, cl, bucket, "out/_weir/positions/") {
		posKey = k
	}
	if err := json.Unmarshal(s3test.Get(t, cl, bucket, posKey), &man); err != nil || len(man.Objects) != 1 || len(man.Objects[0].Parts) < 2 {
		t.Fatalf("position object %s: %+v (%v), want one object of several parts", posKey, man, err)
	}
	s2 := newSink(t, ep, bucket, nil)
	if err := s2.Open(ctx); err != nil {
		t.Fatal(err)
	}
	pos, err := s2.StoredPositions(ctx, "src", []string{"p/0", "p/1"})
	if err != nil || len(pos) != 1 || pos["p/0"] != 12000 {
		t.Fatalf("stored positions %v (%v), want p/0 at 12000", pos, err)
	}
	s2.Close(ctx)
}

// Parquet objects (zstd columns) read back by pyarrow through its own S3
// filesystem, a reader weir did not write: every value as written.
func TestParquetReadByPyarrow(t *testing.T) {
	ep := s3test.Endpoint(t)
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import pyarrow.fs, pyarrow.parquet").Run()
	}
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_PYARROW") != "" {
			t.Fatalf("pyarrow is required (WEIR_REQUIRE_PYARROW is set): %v", err)
		}
		t.Skip("pyarrow is not installed")
	}
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	ctx := context.Background()
	s := newSink(t, ep, bucket, func(c *s3sink.Config) {
		c.Format, c.Compression, c.Template = "parquet", "zstd", "dt={{.Date}}/part"
		c.TemplateTime, c.TemplateTimeField = "field", "ts"
	})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var recs []record.Record
	for i, v := range []string{
		`{"id":9007199254740993,"ts":"2026-02-01T10:00:00Z","amount":1.5,"name":"a"}`,
		`{"id":2,"ts":"2026-02-02T10:00:00Z","amount":2.25,"name":"b"}`,
	} {
		r := record.New([]byte(v))
		r.Origin = record.Origin{Source: "src", Partition: "p/0", Offset: int64(i)}
		recs = append(recs, r)
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	s.GroupPositions([]connector.GroupPosition{{Source: "src", Partition: "p/0", Position: 2}})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	script := `
import os, sys, json, pyarrow.fs as fs, pyarrow.parquet as pq
s3 = fs.S3FileSystem(endpoint_override=os.environ["WEIR_S3_ENDPOINT"], scheme="http", region="us-east-1")
rows = []
for info in s3.get_file_info(fs.FileSelector(sys.argv[1] + "/out", recursive=True)):
    if info.type != fs.FileType.File or "/_weir/" in info.path:
        continue
    t = pq.read_table(info.path, filesystem=s3)
    for r in t.to_pylist():
        r["ts"] = r["ts"].isoformat()
        rows.append([info.path.split("/")[2], r])
rows.sort(key=lambda x: x[0])
print(json.dumps(rows, sort_keys=True))
`
	out, err := exec.Command(py, "-c", script, bucket).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	want := `[["dt=2026-02-01", {"amount": 1.5, "id": 9007199254740993, "name": "a", "ts": "2026-02-01T10:00:00+00:00"}], ["dt=2026-02-02", {"amount": 2.25, "id": 2, "name": "b", "ts": "2026-02-02T10:00:00+00:00"}]]`
	if strings.TrimSpace(string(out)) != want {
		t.Fatalf("pyarrow read\n%s\nwant\n%s", out, want)
	}
}
