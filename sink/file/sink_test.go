package file

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"go.yaml.in/yaml/v3"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

var ctx = context.Background()

func newSink(t testing.TB, mutate func(*Config)) (*Sink, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	return openAt(t, dir, mutate), dir
}

func recs(vals ...string) []record.Record {
	out := make([]record.Record, len(vals))
	for i, v := range vals {
		out[i] = record.New([]byte(v))
	}
	return out
}

// files returns the visible chunk files under dir (relative paths) and the
// hidden temporary ones; run lock files are left out.
func files(t *testing.T, dir string) (visible, hidden []string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, ok := lockRunID(d.Name()); ok || d.Name() == schemaFile {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(d.Name(), ".") {
			hidden = append(hidden, rel)
		} else {
			visible = append(visible, rel)
		}
		return nil
	})
	return visible, hidden
}

func readAll(t *testing.T, dir string, visible []string) []string {
	t.Helper()
	var lines []string
	for _, v := range visible {
		f, err := os.Open(filepath.Join(dir, v))
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		switch {
		case strings.HasSuffix(v, ".gz"):
			if r, err = gzip.NewReader(f); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(v, ".zst"):
			zr, err := zstd.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			r = zr
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		f.Close()
	}
	slices.Sort(lines)
	return lines
}

// A group is invisible until Flush, and then visible whole, under the
// template's path, with no temporary file left.
func TestFlushPublishesAtomically(t *testing.T) {
	s, dir := newSink(t, nil)
	if err := s.Write(ctx, recs(`{"a":1}`, `{"a":2}`)); err != nil {
		t.Fatal(err)
	}
	vis, hid := files(t, dir)
	if len(vis) != 0 || len(hid) != 1 {
		t.Fatalf("before flush: visible %v, hidden %v; want only one hidden temporary file", vis, hid)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vis, hid = files(t, dir)
	if len(vis) != 1 || len(hid) != 0 {
		t.Fatalf("after flush: visible %v, hidden %v; want one chunk", vis, hid)
	}
	if !strings.HasPrefix(vis[0], filepath.Join("2026-03-04", "part-")) || !strings.HasSuffix(vis[0], ".ndjson") {
		t.Fatalf("chunk %s, want 2026-03-04/part-*.ndjson", vis[0])
	}
	if got := strings.Join(readAll(t, dir, vis), ","); got != `{"a":1},{"a":2}` {
		t.Fatalf("chunk holds %s", got)
	}
	// An empty flush publishes nothing.
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if vis, _ := files(t, dir); len(vis) != 1 {
		t.Fatalf("empty flush published %v", vis)
	}
}

// Abort leaves nothing visible and no temporary file, including chunks that
// were already sealed by rotation.
func TestAbortLeavesNothing(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.MaxRecords = 1 })
	if err := s.Write(ctx, recs(`{"a":1}`, `{"a":2}`, `{"a":3}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if vis, hid := files(t, dir); len(vis)+len(hid) != 0 {
		t.Fatalf("after abort: visible %v, hidden %v", vis, hid)
	}
	// The sink goes on working after an abort.
	if err := s.Write(ctx, recs(`{"b":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if vis, _ := files(t, dir); strings.Join(readAll(t, dir, vis), ",") != `{"b":1}` {
		t.Fatalf("after abort and rewrite: %v", readAll(t, dir, vis))
	}
}

// max_records, max_bytes and max_age seal chunks inside a group; all of them
// appear on Flush.
func TestRotation(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"max_records": func(c *Config) { c.MaxRecords = 2 },
		"max_bytes":   func(c *Config) { c.MaxBytes = 16 },
	} {
		t.Run(name, func(t *testing.T) {
			s, dir := newSink(t, mutate)
			if err := s.Write(ctx, recs(`{"a":1}`, `{"a":2}`, `{"a":3}`, `{"a":4}`, `{"a":5}`)); err != nil {
				t.Fatal(err)
			}
			if vis, hid := files(t, dir); len(vis) != 0 || len(hid) != 3 {
				t.Fatalf("before flush: visible %v, hidden %v; want 3 hidden", vis, hid)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			vis, hid := files(t, dir)
			if len(vis) != 3 || len(hid) != 0 {
				t.Fatalf("after flush: visible %v, hidden %v; want 3 chunks", vis, hid)
			}
			if got := readAll(t, dir, vis); len(got) != 5 {
				t.Fatalf("chunks hold %v", got)
			}
		})
	}
	t.Run("max_age", func(t *testing.T) {
		s, dir := newSink(t, func(c *Config) { c.MaxAge = time.Minute })
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s.now = func() time.Time { return now }
		s.Write(ctx, recs(`1`))
		now = now.Add(time.Minute)
		s.Write(ctx, recs(`2`))
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if vis, _ := files(t, dir); len(vis) != 2 {
			t.Fatalf("chunks %v, want 2", vis)
		}
	})
}

// gzip and zstd chunks decompress to what was written.
func TestCompressionRoundTrip(t *testing.T) {
	for _, comp := range []string{"gzip", "zstd"} {
		t.Run(comp, func(t *testing.T) {
			s, dir := newSink(t, func(c *Config) { c.Compression = comp; c.MaxRecords = 600 })
			var want []string
			for g := range 2 { // two groups reuse pooled encoders
				var rs []record.Record
				for i := range 1000 {
					v := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
					want = append(want, v)
					rs = append(rs, record.New([]byte(v)))
				}
				if err := s.Write(ctx, rs); err != nil {
					t.Fatal(err)
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			vis, _ := files(t, dir)
			if len(vis) != 4 {
				t.Fatalf("chunks %v, want 4", vis)
			}
			slices.Sort(want)
			if got := readAll(t, dir, vis); !slices.Equal(got, want) {
				t.Fatalf("read back %d lines, want %d", len(got), len(want))
			}
		})
	}
}

func readParquet(t *testing.T, path string) (cols []string, rows []map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := parquet.NewReader(f)
	defer r.Close()
	for _, c := range r.Schema().Columns() {
		cols = append(cols, c[0])
	}
	buf := make([]parquet.Row, 10)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := map[string]any{}
			for _, v := range row {
				if v.IsNull() {
					continue
				}
				switch v.Kind() {
				case parquet.Int64:
					m[cols[v.Column()]] = v.Int64()
				case parquet.Double:
					m[cols[v.Column()]] = v.Double()
				case parquet.Boolean:
					m[cols[v.Column()]] = v.Boolean()
				default:
					m[cols[v.Column()]] = string(v.ByteArray())
				}
			}
			rows = append(rows, m)
		}
		if errors.Is(err, io.EOF) {
			return cols, rows
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Parquet chunks read back with parquet-go; an inferred schema is taken
// from all of a group's records (a field missing in one is null there), and a
// record whose field the column's type cannot hold is rejected, naming it.
func TestParquetReadBack(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.Format = "parquet"; c.Compression = "zstd" })
	err := s.Write(ctx, recs(
		`{"id":1,"name":"ann","score":1.5,"ok":true,"tags":["x"]}`,
		`{"id":2,"name":"bob","score":2,"ok":false,"tags":null}`,
		`{"id":3,"extra":"new"}`,
		`{"id":"four"}`,
	))
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 3 || !strings.Contains(err.Error(), "column id:") {
		t.Fatalf("write: %v, want a RejectError for record 3 naming id", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vis, _ := files(t, dir)
	if len(vis) != 1 {
		t.Fatalf("chunks %v, want 1", vis)
	}
	cols, rows := readParquet(t, filepath.Join(dir, vis[0]))
	want := `[extra id name ok score tags] [map[id:1 name:ann ok:true score:1.5 tags:["x"]] map[id:2 name:bob ok:false score:2] map[extra:new id:3]]`
	if got := fmt.Sprint(cols, rows); got != want {
		t.Fatalf("read back %s\nwant %s", got, want)
	}
}

// A configured parquet schema rejects a record that does not fit it, naming
// the record's index.
func TestParquetSchemaRejects(t *testing.T) {
	s, dir := newSink(t, func(c *Config) {
		c.Format = "parquet"
		c.Schema = map[string]string{"id": "int64", "name": "string"}
	})
	err := s.Write(ctx, recs(`{"id":1,"name":"a"}`, `{"id":"two"}`, `{"id":3}`))
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 1 || !strings.Contains(err.Error(), `column id:`) {
		t.Fatalf("write: %v, want a RejectError for record 1 naming id", err)
	}
	if err := s.Write(ctx, recs(`{"id":3}`, `not json`)); !errors.As(err, &rej) || rej.Index != 1 {
		t.Fatalf("write: %v, want a RejectError for record 1", err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vis, _ := files(t, dir)
	cols, rows := readParquet(t, filepath.Join(dir, vis[0]))
	if fmt.Sprint(cols, rows) != "[id name] [map[id:1 name:a] map[id:3]]" {
		t.Fatalf("read back %v %v", cols, rows)
	}
}

// An NDJSON value with a line break would corrupt the framing: rejected.
func TestNDJSONRejectsLineBreak(t *testing.T) {
	s, _ := newSink(t, nil)
	err := s.Write(ctx, recs(`"a"`, "\"b\n\""))
	var rej *connector.RejectError
	if !errors.As(err, &rej) || rej.Index != 1 {
		t.Fatalf("write: %v, want a RejectError for record 1", err)
	}
}

// A field in the template puts records in per-value directories; a value
// cannot climb out of its directory.
func TestTemplateFields(t *testing.T) {
	s, dir := newSink(t, func(c *Config) { c.Template = `region={{field "region"}}/{{.Hour}}/p` })
	err := s.Write(ctx, recs(`{"region":"eu"}`, `{"region":"us"}`, `{"region":"../x"}`, `{"n":1}`, `{"region":"eu"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	vis, _ := files(t, dir)
	var dirs []string
	for _, v := range vis {
		dirs = append(dirs, filepath.ToSlash(filepath.Dir(v)))
	}
	slices.Sort(dirs)
	if got := strings.Join(dirs, " "); got != "region=.._x/05 region=_/05 region=eu/05 region=us/05" {
		t.Fatalf("chunk directories %s", got)
	}
	if err := s.Write(ctx, recs(`{"region":"eu"}`, `nope`)); err == nil {
		t.Fatal("a record the template cannot read its field from was accepted")
	}
}

// When the directory cannot take the chunk, Flush fails and nothing becomes
// visible.
func TestFlushFailsOnBrokenDirectory(t *testing.T) {
	s, dir := newSink(t, nil)
	if err := s.Write(ctx, recs(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(dir, "2026-03-04")
	if err := os.RemoveAll(day); err != nil {
		t.Fatal(err)
	}
	write := func(p string) {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(day) // a file where the directory was
	if err := s.Flush(ctx); err == nil {
		t.Fatal("flush into a broken directory succeeded")
	}
	if err := s.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if vis, hid := files(t, dir); len(vis) != 1 || vis[0] != "2026-03-04" || len(hid) != 0 {
		t.Fatalf("after failed flush: visible %v, hidden %v", vis, hid)
	}
}

func TestConfig(t *testing.T) {
	c := NewConfig()
	dec := yaml.NewDecoder(strings.NewReader("path: out\nformat: parquet\ncompression: zstd\nmax_age: 30s\nschema: {id: int64}\n"))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.MaxAge != 30*time.Second {
		t.Fatalf("validate: %v, max_age %v", err, c.MaxAge)
	}
	for opt, mutate := range map[string]func(*Config){
		"path":        func(c *Config) { c.Path = "" },
		"format":      func(c *Config) { c.Format = "csv" },
		"compression": func(c *Config) { c.Compression = "lz4" },
		"template":    func(c *Config) { c.Template = "{{.Minute}}/p" },
		"max_records": func(c *Config) { c.MaxRecords = 0 },
		"schema":      func(c *Config) { c.Schema = map[string]string{"a": "int"}; c.Format = "parquet" },
	} {
		c := NewConfig()
		c.Path = "out"
		mutate(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), opt) {
			t.Errorf("%s: %v, want an error naming it", opt, err)
		}
	}
	for _, bad := range []string{"/abs/p", "../p", "a/", `{{field "x"}}/../p`} {
		c := NewConfig()
		c.Path, c.Template = "out", bad
		if err := c.Validate(); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
}
