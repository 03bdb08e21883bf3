package file

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline/pipelinetest"
)

// readDirectory reads a sink's output the way docs/file-connectors.md tells
// a reader outside weir to: every file under path, in directories whose
// names do not start with a dot, whose name does not start with a dot and
// ends with a chunk's extension. It returns the record values, for parquet
// as JSON objects of their columns.
func readDirectory(t testing.TB, path string) [][]byte {
	t.Helper()
	var out [][]byte
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !isChunkName(d.Name()) {
			return nil
		}
		if strings.HasSuffix(p, ".parquet") {
			_, rows := readParquet(t.(*testing.T), p)
			for _, row := range rows {
				b, _ := json.Marshal(row)
				out = append(out, b)
			}
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		switch {
		case strings.HasSuffix(p, ".gz"):
			gz, err := gzip.NewReader(f)
			if err != nil {
				return err
			}
			r = gz
		case strings.HasSuffix(p, ".zst"):
			zr, err := zstd.NewReader(f)
			if err != nil {
				return err
			}
			defer zr.Close()
			r = zr
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			out = append(out, []byte(sc.Text()))
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return out
}

func isChunkName(name string) bool {
	for _, ext := range []string{".ndjson", ".ndjson.gz", ".ndjson.zst", ".txt", ".txt.gz", ".txt.zst", ".parquet"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

func sinkOf(s connector.Sink) *Sink {
	if k, ok := s.(*Keeper); ok {
		return k.Sink
	}
	return s.(*Sink)
}

// crash releases what a dead process's kernel would: the run's lock, the
// manifest's lock and the chunks' descriptors, with nothing renamed,
// removed or flushed.
func crash(s *Sink) {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
	if s.eos != nil && s.eos.lock != nil {
		s.eos.lock.Close()
		s.eos.lock = nil
	}
	for _, c := range s.open {
		if c.f != nil {
			c.f.Close()
		}
	}
	for _, c := range s.sealed {
		if c.f != nil {
			c.f.Close()
		}
	}
	s.open, s.sealed = map[string]*chunk{}, nil
}

// eosHarness is the exactly-once suite's harness for one format and
// compression: every instance writes under one directory as sink "out".
func eosHarness(format, compression string) conformance.ExactlyOnceHarness {
	build := func(t *testing.T, path string) connector.Sink {
		c := NewConfig()
		c.Path = path
		c.Format = format
		c.Compression = compression
		c.ExactlyOnce = true
		c.MaxRecords = 4 // several chunks per group
		s, err := Build("out", c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return conformance.ExactlyOnceHarness{
		New: func(t *testing.T) connector.Sink { return build(t, filepath.Join(t.TempDir(), "out")) },
		Reopen: func(t *testing.T, s connector.Sink) connector.Sink {
			return build(t, sinkOf(s).cfg.Path)
		},
		Another: func(t *testing.T, s connector.Sink) connector.Sink {
			return build(t, sinkOf(s).cfg.Path)
		},
		Crash: func(t *testing.T, s connector.Sink) { crash(sinkOf(s)) },
		Held:  func(t *testing.T, s connector.Sink) [][]byte { return readDirectory(t, sinkOf(s).cfg.Path) },
		CrashPoints: func(s connector.Sink, step func(string)) {
			sinkOf(s).eos.step = step
		},
	}
}

// The exactly-once file sink passes the exactly-once suite in every format
// and compression: a chunk and the positions it completes become visible
// together across a crash at any step of the commit, readers counting the
// visible chunks see each record once, and a second writer of the same
// directory cannot commit records the first already holds.
func TestExactlyOnceConforms(t *testing.T) {
	for _, fc := range [][2]string{{"ndjson", "none"}, {"ndjson", "gzip"}, {"ndjson", "zstd"}, {"lines", "none"}, {"parquet", "none"}, {"parquet", "zstd"}} {
		t.Run(fc[0]+"-"+fc[1], func(t *testing.T) { conformance.TestExactlyOnce(t, eosHarness(fc[0], fc[1])) })
	}
}

// The exactly-once sink still passes the ordinary sink suite.
func TestExactlyOnceSinkConforms(t *testing.T) {
	h := eosHarness("ndjson", "none")
	conformance.TestSink(t, conformance.SinkHarness{Runtime: pipelinetest.Runtime{},
		New:     h.New,
		Count:   func(t *testing.T, s connector.Sink) int { return len(h.Held(t, s)) },
		Written: h.Held,
		Reopen:  func(t *testing.T, s connector.Sink) connector.Sink { crash(sinkOf(s)); return h.Reopen(t, s) },
	})
}

// New refuses exactly_once, naming the field and Build: the *Sink it
// returns is no PositionKeeper, and the runtime would never give it
// positions.
func TestNewRefusesExactlyOnce(t *testing.T) {
	c := NewConfig()
	c.Path = t.TempDir()
	c.ExactlyOnce = true
	if _, err := New("out", c); err == nil || !strings.Contains(err.Error(), "exactly_once") || !strings.Contains(err.Error(), "Build") {
		t.Fatalf("New with exactly_once: %v, want a refusal naming exactly_once and Build", err)
	}
	s, err := Build("out", c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(connector.PositionKeeper); !ok {
		t.Fatalf("Build with exactly_once returned %T, not a connector.PositionKeeper", s)
	}
	c.ExactlyOnce = false
	if s, err := Build("out", c); err != nil {
		t.Fatal(err)
	} else if _, ok := s.(connector.PositionKeeper); ok {
		t.Fatalf("Build without exactly_once returned a PositionKeeper: the runtime would take it for exactly-once")
	}
}
