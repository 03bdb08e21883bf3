//go:build integration

package cdc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"
)

// change is one output record, the fields the checkers read.
type change struct {
	Op     string `json:"op"`
	LSN    string `json:"lsn"`
	Table  string `json:"table"`
	Before *row   `json:"before"`
	After  *row   `json:"after"`
}

type row struct {
	ID  int64 `json:"id"`
	Txn int64 `json:"txn"`
	V   int64 `json:"v"`
}

// outputReader reads the file sink's visible chunks, each once: a visible
// chunk never changes (the sink renames it into view when it is complete).
type outputReader struct {
	dir  string
	seen map[string]bool
}

func newOutputReader(dir string) *outputReader {
	return &outputReader{dir: dir, seen: map[string]bool{}}
}

// next returns the records of the chunks that became visible since the
// last call.
func (o *outputReader) next(t *testing.T) []change {
	t.Helper()
	var out []change
	err := filepath.WalkDir(o.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") || !strings.HasSuffix(d.Name(), ".ndjson") || o.seen[path] {
			return nil
		}
		o.seen[path] = true
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var c change
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatalf("%s: %v: %s", path, err, sc.Text())
			}
			out = append(out, c)
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatalf("reading the output: %v", err)
	}
	return out
}

func parseLSN(t *testing.T, s string) uint64 {
	t.Helper()
	l, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatalf("LSN %q: %v", s, err)
	}
	return uint64(l)
}

func bg() context.Context { return context.Background() }
