//go:build unix

package file

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// fileKey is a file's identity on this machine: it survives renames.
type fileKey struct{ Dev, Ino uint64 }

func (k fileKey) String() string { return fmt.Sprintf("%d:%d", k.Dev, k.Ino) }

func parseKey(s string) (fileKey, bool) {
	var k fileKey
	n, err := fmt.Sscanf(s, "%d:%d", &k.Dev, &k.Ino)
	return k, err == nil && n == 2 && k.String() == s
}

func keyOf(fi os.FileInfo) (fileKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, false
	}
	return fileKey{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true //nolint:unconvert // Dev is int32 on some systems
}

// fingerprint hashes the first n bytes of r. An inode number can be reused by
// a new file once the old one is deleted; the leading bytes tell them apart.
// They also recognise a copy of a file (copytruncate), which has a new inode.
func fingerprint(r io.ReaderAt, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, 0); err != nil {
		return nil, fmt.Errorf("reading fingerprint: %w", err)
	}
	sum := sha256.Sum256(buf)
	return sum[:16], nil
}

// fingerprintPrefix is fingerprint of up to n bytes: of as many as r holds
// when it is read, which for a file a writer truncated since it was looked
// at is fewer than n. It returns how many it hashed.
func fingerprintPrefix(r io.ReaderAt, n int) ([]byte, int, error) {
	if n == 0 {
		return nil, 0, nil
	}
	buf := make([]byte, n)
	got, err := r.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return nil, 0, fmt.Errorf("reading fingerprint: %w", err)
	}
	if got == 0 {
		return nil, 0, nil
	}
	sum := sha256.Sum256(buf[:got])
	return sum[:16], got, nil
}

// entry is the persisted state of one file, keyed by fileKey.
type entry struct {
	Name  string `json:"name"` // partition name given to the runtime
	Gen   uint64 `json:"gen"`  // incarnation: bumped on truncation or inode reuse
	Path  string `json:"path"` // last path seen: where to look for the file after a rotation
	FPLen int    `json:"fp_len"`
	FP    []byte `json:"fp"`
	Pos   int64  `json:"pos"`  // committed position: every record before it is safe
	Size  int64  `json:"size"` // the file's size when last seen: what is unread if it is gone
}

func (e *entry) encode() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("source/file: encoding state entry: %v", err))
	}
	return b
}

func decodeEntry(b []byte) (entry, error) {
	var e entry
	err := json.Unmarshal(b, &e)
	return e, err
}

// matches reports whether r, of the given size, still begins with the bytes e
// was fingerprinted on.
func (e *entry) matches(r io.ReaderAt, size int64) bool {
	if size < int64(e.FPLen) {
		return false
	}
	fp, err := fingerprint(r, e.FPLen)
	return err == nil && bytes.Equal(fp, e.FP)
}

// partitionName names a file's incarnation for the runtime. The time it was
// first seen makes the name unique over time: once a file is let go its state
// entry is forgotten, and a later file on the same inode under the same path
// must not inherit positions a sink stored under the old name.
func partitionName(path string, k fileKey, gen uint64, seen time.Time) string {
	return fmt.Sprintf("%s@%s/%d.%d", path, k, gen, seen.UnixNano())
}
