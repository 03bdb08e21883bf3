//go:build unix

package file

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Guarantee: a file truncated between the scan that saw its size and the
// read of its fingerprint (a writer rotating it by copy and truncate) is
// identified by the bytes it still has, not failed: the run went on before,
// it stopped with "reading fingerprint: EOF" (seen in the crash test of a
// live writer's rotation).
func TestIdentifyAFileThatShrank(t *testing.T) {
	for _, left := range []int{10, 0} {
		path := filepath.Join(t.TempDir(), "app.ndjson")
		if err := os.WriteFile(path, bytes.Repeat([]byte("{\"a\":1}\n"), 25), 0o644); err != nil {
			t.Fatal(err)
		}
		fd, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		s := &Source{cfg: Config{FingerprintBytes: 64}}
		f := &file{fd: fd, path: path, size: 200}
		if err := os.Truncate(path, int64(left)); err != nil {
			t.Fatal(err)
		}
		if err := s.identify(f, 1, time.Now()); err != nil {
			t.Fatalf("%d bytes left: %v", left, err)
		}
		want, _ := fingerprint(fd, left)
		if f.fpLen != left || !bytes.Equal(f.fp, want) {
			t.Fatalf("%d bytes left: fingerprint of %d bytes (%x), want %d (%x)", left, f.fpLen, f.fp, left, want)
		}
	}
}
