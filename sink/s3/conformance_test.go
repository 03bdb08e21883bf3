package s3

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
	"github.com/weir-etl/weir/record"
)

// newMemSink returns a sink over st, configured by mutate.
func newMemSink(t testing.TB, st *memStore, mutate func(*Config)) *Sink {
	t.Helper()
	c := NewConfig()
	c.Bucket, c.Prefix = "test", "out/"
	if mutate != nil {
		mutate(c)
	}
	s, err := New("out", c)
	if err != nil {
		t.Fatal(err)
	}
	s.store = st
	return s
}

// readLines returns the lines of the visible objects under prefix, in key
// order, decompressing by extension.
func readLines(t *testing.T, st *memStore, prefix string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, k := range st.visible(prefix) {
		st.mu.Lock()
		body := st.objects[k].body
		st.mu.Unlock()
		out = append(out, objectLines(t, k, body)...)
	}
	return out
}

// objectLines returns the lines of the object key, decompressed by its
// extension.
func objectLines(t *testing.T, key string, body []byte) [][]byte {
	t.Helper()
	var out [][]byte
	var r io.Reader = bytes.NewReader(body)
	switch {
	case strings.HasSuffix(key, ".gz"):
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		r = zr
	case strings.HasSuffix(key, ".zst"):
		zr, err := zstd.NewReader(r)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return out
}

func memHarness(mutate func(*Config)) conformance.SinkHarness {
	stores := map[connector.Sink]*memStore{}
	return conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New: func(t *testing.T) connector.Sink {
			st := newMemStore()
			s := newMemSink(t, st, mutate)
			stores[s] = st
			return s
		},
		Count: func(t *testing.T, s connector.Sink) int { return len(readLines(t, stores[s], "out/")) },
		Written: func(t *testing.T, s connector.Sink) [][]byte {
			return readLines(t, stores[s], "out/")
		},
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			st := stores[s]
			s2 := newMemSink(t, st, mutate)
			stores[s2] = st
			return s2
		},
		Unwritable: func() record.Record { return record.New([]byte("{\"a\":1}\n{\"b\":2}")) },
	}
}

// The sink passes the shared suite over the in-memory bucket, uncompressed
// and zstd; test/s3 runs it against a real server.
func TestConformance(t *testing.T) {
	t.Run("ndjson", func(t *testing.T) { conformance.TestSink(t, memHarness(nil)) })
	t.Run("zstd", func(t *testing.T) {
		conformance.TestSink(t, memHarness(func(c *Config) { c.Compression = "zstd" }))
	})
}
