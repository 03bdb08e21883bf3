//go:build integration

package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/s3test"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	s3src "github.com/weir-etl/weir/source/s3"
)

func newSource(t *testing.T, endpoint, bucket string, mutate func(*s3src.Config)) *s3src.Source {
	t.Helper()
	c := s3src.NewConfig()
	c.Bucket, c.Endpoint, c.Prefix = bucket, endpoint, "in/"
	c.DataDir = filepath.Join(t.TempDir(), "state")
	c.RequestTimeout = 10 * time.Second
	if mutate != nil {
		mutate(c)
	}
	s, err := s3src.New("in", c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The source passes the shared suite against a real server.
func TestConformance(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	var data bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&data, "{\"n\":%d}\n", i)
	}
	s3test.Put(t, cl, bucket, "in/a.ndjson", data.Bytes())
	dirs := t.TempDir()
	conformance.TestSource(t, conformance.SourceHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Source {
			return newSource(t, ep, bucket, func(c *s3src.Config) {
				c.DataDir = filepath.Join(dirs, strings.ReplaceAll(t.Name(), "/", "_"))
				c.BatchSize = 5
				c.Mode, c.ScanInterval = "watch", 100*time.Millisecond
			})
		},
	})
}

// collect runs the source once through the runtime into a memory sink and
// returns what it wrote, in order.
func collect(t *testing.T, src connector.Source) []string {
	t.Helper()
	mem := &conformance.MemSink{}
	sp := &pipeline.Spec{
		Sources:    []pipeline.SourceSpec{{Name: "in", Source: src}},
		Sinks:      []pipeline.SinkSpec{{Name: "out", Inputs: []string{"in"}, Sink: mem}},
		Checkpoint: pipeline.CheckpointSettings{CommitInterval: 10 * time.Millisecond},
		Metrics:    pipeline.MetricsSettings{Address: "off"},
	}
	if err := pipeline.Run(context.Background(), sp, pipeline.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range mem.Values() {
		out = append(out, string(v))
	}
	return out
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zs(b []byte) []byte {
	w, _ := zstd.NewWriter(nil)
	return w.EncodeAll(b, nil)
}

// Objects of every line format and compression are read in key order,
// each record exactly as written.
func TestFormats(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	for _, tc := range []struct {
		format string
		key    string
		body   []byte
		want   string
	}{
		{"ndjson", "a.ndjson", []byte("{\"a\":1}\n\n{\"b\":1.50}\r\n{\"c\":2}"), `{"a":1} {"b":1.50} {"c":2}`},
		{"ndjson", "a.ndjson.gz", gz([]byte("{\"a\":1}\n{\"b\":2}\n")), `{"a":1} {"b":2}`},
		{"ndjson", "a.ndjson.zst", zs([]byte("{\"a\":1}\n{\"b\":2}\n")), `{"a":1} {"b":2}`},
		{"lines", "a.txt", []byte("x y\nz\n"), `x y z`},
		{"csv", "a.csv", []byte("\xEF\xBB\xBFid,name\n1,\"a,\"\"b\"\"\nc\"\n2,d\n"), `{"id":"1","name":"a,\"b\"\nc"} {"id":"2","name":"d"}`},
		{"csv", "a.csv.gz", gz([]byte("id,name\n1,a\n")), `{"id":"1","name":"a"}`},
	} {
		t.Run(tc.key, func(t *testing.T) {
			bucket := s3test.Bucket(t, cl)
			s3test.Put(t, cl, bucket, "in/"+tc.key, tc.body)
			got := collect(t, newSource(t, ep, bucket, func(c *s3src.Config) { c.Format = tc.format }))
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("read %q, want %s", got, tc.want)
			}
		})
	}
}

// Objects are read in key order; a second run reads nothing again; a new
// object after the watermark is read by the next run.
func TestKeyOrderAndWatermark(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	for _, k := range []string{"c", "a", "b"} {
		s3test.Put(t, cl, bucket, "in/"+k+".ndjson", []byte(fmt.Sprintf("{\"k\":%q}\n", k)))
	}
	s3test.Put(t, cl, bucket, "other/x.ndjson", []byte("{\"k\":\"x\"}\n"))
	dir := t.TempDir()
	mk := func() *s3src.Source {
		return newSource(t, ep, bucket, func(c *s3src.Config) { c.DataDir = dir })
	}
	// Polled in key order, whatever the order of their writes.
	h := kafkatest.NewHost()
	src := mk()
	ctx := context.Background()
	if err := src.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	var polled []string
	for {
		var b connector.Batch
		err := src.Poll(ctx, &b)
		if errors.Is(err, connector.ErrEndOfInput) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			polled = append(polled, string(r.Bytes()))
		}
	}
	src.Close(ctx)
	if got := strings.Join(polled, " "); got != `{"k":"a"} {"k":"b"} {"k":"c"}` {
		t.Fatalf("polled %s, want key order", got)
	}
	got := collect(t, mk())
	slices.Sort(got)
	if strings.Join(got, " ") != `{"k":"a"} {"k":"b"} {"k":"c"}` {
		t.Fatalf("first run read %s", got)
	}
	if got := collect(t, mk()); len(got) != 0 {
		t.Fatalf("second run read %q again", got)
	}
	s3test.Put(t, cl, bucket, "in/d.ndjson", []byte("{\"k\":\"d\"}\n"))
	if got := strings.Join(collect(t, mk()), " "); got != `{"k":"d"}` {
		t.Fatalf("third run read %s, want only the new object", got)
	}
}

// after_read: delete removes an object once its records are committed, and
// move: puts it under another prefix; neither before.
func TestAfterRead(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	for _, mode := range []string{"delete", "move:done/"} {
		t.Run(mode, func(t *testing.T) {
			bucket := s3test.Bucket(t, cl)
			s3test.Put(t, cl, bucket, "in/a.ndjson", []byte("{\"a\":1}\n"))
			s3test.Put(t, cl, bucket, "in/b.ndjson", []byte("{\"b\":1}\n"))
			dir := t.TempDir()
			got := collect(t, newSource(t, ep, bucket, func(c *s3src.Config) { c.AfterRead, c.DataDir = mode, dir }))
			if len(got) != 2 {
				t.Fatalf("read %q", got)
			}
			if keys := s3test.Keys(t, cl, bucket, "in/"); len(keys) != 0 {
				t.Fatalf("left under in/: %q", keys)
			}
			if mode != "delete" {
				if keys := strings.Join(s3test.Keys(t, cl, bucket, "done/"), " "); keys != "done/a.ndjson done/b.ndjson" {
					t.Fatalf("under done/: %q", keys)
				}
			}
			// An object dropped again under a used key is read: the inbox
			// holds only what is to be read.
			s3test.Put(t, cl, bucket, "in/a.ndjson", []byte("{\"a\":2}\n"))
			if got := strings.Join(collect(t, newSource(t, ep, bucket, func(c *s3src.Config) { c.AfterRead, c.DataDir = mode, dir })), " "); got != `{"a":2}` {
				t.Fatalf("the new object under a used key: read %q", got)
			}
		})
	}
}

// unreadHost is a test Host that records what the source reports unread.
type unreadHost struct {
	*kafkatest.Host
	mu     sync.Mutex
	unread map[string]int64
}

func (h *unreadHost) Unread(reason string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unread[reason] += n
}

// An object replaced while it is read is reported (a warning and its bytes
// counted unread), not merged: what comes after the replacement is neither
// the old version's rest nor the new version's.
func TestReplacedWhileRead(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	var old, repl bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&old, "{\"old\":%d}\n", i)
		fmt.Fprintf(&repl, "{\"new\":%d}\n", i)
	}
	s3test.Put(t, cl, bucket, "in/a.ndjson", old.Bytes())
	src := newSource(t, ep, bucket, func(c *s3src.Config) { c.ReadBytes, c.BatchSize, c.Prefetch = 4096, 10, 1 })
	h := &unreadHost{Host: kafkatest.NewHost(), unread: map[string]int64{}}
	h.Source = src
	ctx := context.Background()
	if err := src.Open(ctx, h); err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	var got []string
	poll := func() error {
		var b connector.Batch
		err := src.Poll(ctx, &b)
		for _, r := range b.Records {
			got = append(got, string(r.Bytes()))
		}
		return err
	}
	if err := poll(); err != nil {
		t.Fatal(err)
	}
	s3test.Put(t, cl, bucket, "in/a.ndjson", repl.Bytes())
	for {
		err := poll()
		if errors.Is(err, connector.ErrEndOfInput) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) >= 5000 || len(got) == 0 {
		t.Fatalf("read %d records, want some of the old version only", len(got))
	}
	for i, v := range got {
		if v != fmt.Sprintf(`{"old":%d}`, i) {
			t.Fatalf("record %d is %s: a mix of two versions", i, v)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unread["replaced"] == 0 {
		t.Fatalf("nothing reported unread for the replaced object: %v", h.unread)
	}
}

// Parquet objects written by pyarrow, a writer weir did not write, are read
// row by row, each row a JSON object of the file's columns in its order:
// integers exact, dates and timestamps as strings, decimals as literals.
func TestParquetFromPyarrow(t *testing.T) {
	ep := s3test.Endpoint(t)
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import pyarrow.parquet").Run()
	}
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_PYARROW") != "" {
			t.Fatalf("pyarrow is required (WEIR_REQUIRE_PYARROW is set): %v", err)
		}
		t.Skip("pyarrow is not installed")
	}
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	file := filepath.Join(t.TempDir(), "a.parquet")
	script := `
import sys, datetime, decimal, pyarrow as pa, pyarrow.parquet as pq
t = pa.table({
  "id": pa.array([9007199254740993, 2, None], pa.int64()),
  "name": pa.array(["a", "b\"c", "d"]),
  "ok": pa.array([True, False, True]),
  "amount": pa.array([1.5, 0.1, 2.0]),
  "price": pa.array([decimal.Decimal("12.30"), decimal.Decimal("-0.05"), decimal.Decimal("7.00")], pa.decimal128(9, 2)),
  "day": pa.array([datetime.date(2026, 2, 1)] * 3),
  "at": pa.array([datetime.datetime(2026, 2, 1, 19, 27, 17, 250000, tzinfo=datetime.timezone.utc)] * 3, pa.timestamp("us", tz="UTC")),
})
pq.write_table(t, sys.argv[1], compression="zstd", row_group_size=2)
`
	if out, err := exec.Command(py, "-c", script, file).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s3test.Put(t, cl, bucket, "in/a.parquet", b)
	got := collect(t, newSource(t, ep, bucket, func(c *s3src.Config) { c.Format = "parquet" }))
	want := []string{
		`{"id":9007199254740993,"name":"a","ok":true,"amount":1.5,"price":12.30,"day":"2026-02-01","at":"2026-02-01T19:27:17.25Z"}`,
		`{"id":2,"name":"b\"c","ok":false,"amount":0.1,"price":-0.05,"day":"2026-02-01","at":"2026-02-01T19:27:17.25Z"}`,
		`{"id":null,"name":"d","ok":true,"amount":2,"price":7.00,"day":"2026-02-01","at":"2026-02-01T19:27:17.25Z"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// start_after skips the objects at or before it on a first run; explicit
// credentials from named variables reach the server like the default chain.
func TestStartAfterAndNamedCredentials(t *testing.T) {
	ep := s3test.Endpoint(t)
	cl := s3test.Client(t, ep)
	bucket := s3test.Bucket(t, cl)
	for _, k := range []string{"a", "b", "c"} {
		s3test.Put(t, cl, bucket, "in/"+k+".ndjson", []byte(fmt.Sprintf("{\"k\":%q}\n", k)))
	}
	t.Setenv("WEIR_TEST_KEY", os.Getenv("AWS_ACCESS_KEY_ID"))
	t.Setenv("WEIR_TEST_SECRET", os.Getenv("AWS_SECRET_ACCESS_KEY"))
	got := collect(t, newSource(t, ep, bucket, func(c *s3src.Config) {
		c.StartAfter = "in/a.ndjson"
		c.AccessKeyIDEnv, c.SecretAccessKeyEnv, c.Addressing = "WEIR_TEST_KEY", "WEIR_TEST_SECRET", "path"
	}))
	slices.Sort(got)
	if strings.Join(got, " ") != `{"k":"b"} {"k":"c"}` {
		t.Fatalf("read %q, want b and c only", got)
	}
	t.Setenv("WEIR_TEST_SECRET", "wrong")
	src := newSource(t, ep, bucket, func(c *s3src.Config) {
		c.AccessKeyIDEnv, c.SecretAccessKeyEnv = "WEIR_TEST_KEY", "WEIR_TEST_SECRET"
	})
	err := src.Open(context.Background(), kafkatest.NewHost())
	if err == nil || !strings.Contains(err.Error(), "check the access key id and secret") || strings.Contains(err.Error(), "wrong\"") {
		t.Fatalf("Open with a wrong secret = %v, want a refusal at once naming the credentials", err)
	}
}
