package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
)

// fastDir returns a temporary directory in memory (/dev/shm) when there is
// one, where the state store's fsyncs cost nothing, else on disk.
func fastDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "weir-file-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Memory stays flat over 10,000 rotations in one tail-mode run: every file
// rotated away is read to its end, its partition revoked and its state entry
// forgotten, so the live partitions, the source's own maps and the state
// store's entries stay bounded by the files that exist. Ten logs are written
// and rotated together, 1,000 times; every line is read exactly once. (With
// the race detector, 100 times: CI runs it in full without.)
func TestTenThousandRotations(t *testing.T) {
	const logs, lines = 10, 3
	rounds := 1000
	if raceEnabled {
		rounds = 100
	}
	dir := fastDir(t)
	h := open(t, testConfig(dir, func(c *Config) {
		c.Mode = "tail"
		c.Paths = []string{filepath.Join(dir, "*.log")}
		c.Rotated = []string{filepath.Join(dir, "*.log.*")}
	}))
	read := 0
	maxLive, maxFiles, maxEntries := 0, 0, 0
	measure := func() {
		h.src.mu.Lock()
		files := max(len(h.src.files), len(h.src.byKey), len(h.src.order))
		h.src.mu.Unlock()
		maxLive, maxFiles = max(maxLive, len(h.host.live)), max(maxFiles, files)
		maxEntries = max(maxEntries, h.src.store.Len()-1) // less the scan time
	}
	for i := range rounds {
		for k := range logs {
			var data string
			for j := range lines {
				data += fmt.Sprintf("%d-%d-%d\n", i, k, j)
			}
			write(t, filepath.Join(dir, fmt.Sprintf("app-%d.log", k)), data)
		}
		var commits []connector.Commit
		for read < (i+1)*logs*lines {
			b, err := h.poll()
			if err != nil {
				t.Fatal(err)
			}
			read += len(b.Records)
			commits = append(commits, connector.Commit{Partition: b.Partition, Position: b.End})
			measure()
		}
		// Delivered: commit, as the runtime does every commit interval.
		if err := h.src.Commit(context.Background(), commits); err != nil {
			t.Fatal(err)
		}
		for k := range logs {
			p := filepath.Join(dir, fmt.Sprintf("app-%d.log", k))
			lastWritten(t, p, time.Hour) // done: nothing more will be written to it
			if err := os.Rename(p, p+".1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%d rotations: at most %d live partitions, %d files in the source's maps, %d state entries; %d assigned in all",
		logs*rounds, maxLive, maxFiles, maxEntries, len(h.host.names))
	// At any moment: the live files, and those rotated away last, being let go.
	if maxLive > 2*logs || maxFiles > 2*logs || maxEntries > 2*logs {
		t.Fatalf("live partitions up to %d, source maps up to %d, state entries up to %d: want at most %d each (the files that exist)",
			maxLive, maxFiles, maxEntries, 2*logs)
	}
	seen := map[string]bool{}
	for _, l := range h.lines {
		for _, s := range l {
			if seen[s] {
				t.Fatalf("line %s read twice", s)
			}
			seen[s] = true
		}
	}
	if len(seen) != logs*rounds*lines || len(h.host.names) != logs*rounds {
		t.Fatalf("read %d distinct lines in %d partitions, want %d in %d", len(seen), len(h.host.names), logs*rounds*lines, logs*rounds)
	}
}
