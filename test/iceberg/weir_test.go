//go:build integration

package iceberg_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var ctx = context.Background()

// full reports whether the tests run at the sizes the sink is held to
// (WEIR_ICEBERG_FULL=1) rather than CI's shorter ones.
var full = os.Getenv("WEIR_ICEBERG_FULL") == "1"

// bins holds the binaries built for the tests, one per set of build tags:
// the tests share them.
var bins weirtest.Binaries

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// startWeir starts `weir run -c cfg` with env added to its environment, its
// log name.log beside cfg: a kill loop's runs append to one log.
func startWeir(t *testing.T, bin, cfg, name string, env []string) *weirtest.Proc {
	t.Helper()
	return weirtest.Start(t, bin, filepath.Join(filepath.Dir(cfg), name+".log"), env, "run", "-c", cfg)
}

// passwordIn fails the test if a log holds the server's password.
func passwordIn(t *testing.T, logs ...string) {
	t.Helper()
	pw := os.Getenv("WEIR_POSTGRES_PASSWORD")
	if pw == "" {
		return
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), pw) {
			t.Errorf("the password shows in %s", l)
		}
	}
}

// tableState is what the table's current metadata says: read straight from
// the SQL catalog's row and the metadata file it points to, without
// iceberg-go, as any reader would.
type tableState struct {
	location string           // the metadata file
	records  int64            // total-records of the current snapshot
	files    int64            // total-data-files
	snaps    int              // snapshots in the metadata
	stored   map[string]int64 // the writer's positions: partition → position
}

func readState(t *testing.T, conn *pgx.Conn, catalog, namespace, table, key string) (tableState, bool) {
	t.Helper()
	var st tableState
	err := conn.QueryRow(ctx, `SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3`,
		catalog, namespace, table).Scan(&st.location)
	if err != nil {
		return st, false // not made yet (or the catalog's tables are not)
	}
	b, err := os.ReadFile(strings.TrimPrefix(st.location, "file://"))
	if err != nil {
		t.Fatalf("reading %s: %v", st.location, err)
	}
	var meta struct {
		Current   *int64 `json:"current-snapshot-id"`
		Snapshots []struct {
			ID      int64             `json:"snapshot-id"`
			Parent  *int64            `json:"parent-snapshot-id"`
			Summary map[string]string `json:"summary"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("%s: %v", st.location, err)
	}
	st.snaps = len(meta.Snapshots)
	st.stored = map[string]int64{}
	byID := map[int64]int{}
	for i, s := range meta.Snapshots {
		byID[s.ID] = i
	}
	if meta.Current == nil || *meta.Current < 0 {
		return st, true
	}
	cur := meta.Snapshots[byID[*meta.Current]]
	st.records, _ = strconv.ParseInt(cur.Summary["total-records"], 10, 64)
	st.files, _ = strconv.ParseInt(cur.Summary["total-data-files"], 10, 64)
	for id := meta.Current; id != nil; {
		i, ok := byID[*id]
		if !ok {
			break
		}
		s := meta.Snapshots[i]
		if v, ok := s.Summary[key]; ok {
			var m map[string]map[string]int64
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				t.Fatalf("summary %s: %v", key, err)
			}
			for _, parts := range m {
				for p, pos := range parts {
					st.stored[p] = pos
				}
			}
			break
		}
		id = s.Parent
	}
	return st, true
}

// readCount runs read.py: `SELECT count(*), count(DISTINCT id)` in DuckDB,
// or the same counted over pyiceberg's scan.
func readCount(t *testing.T, args ...string) (n, distinct int64) {
	t.Helper()
	var out struct{ Count, Distinct int64 }
	readJSON(t, &out, args...)
	return out.Count, out.Distinct
}

func readJSON(t *testing.T, into any, args ...string) {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"read.py"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read.py %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), into); err != nil {
		t.Fatalf("read.py %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// dataFiles returns the parquet files under dir.
func dataFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// writeLines writes files of n lines each, {"id":N,"pad":...}, ids from 0
// in order, and returns each line's end offset by file.
func writeLines(t *testing.T, dir string, files, n int) [][]int64 {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ends := make([][]int64, files)
	var line []byte
	for f := range files {
		fd, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%d.ndjson", f)))
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(fd, 1<<20)
		var off int64
		ends[f] = make([]int64, n)
		for i := range n {
			line = append(line[:0], `{"id":`...)
			line = strconv.AppendInt(line, int64(f*n+i), 10)
			line = append(line, `,"pad":"0123456789abcdef0123456789abcdef"}`+"\n"...)
			w.Write(line)
			off += int64(len(line))
			ends[f][i] = off
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fd.Close()
	}
	return ends
}
