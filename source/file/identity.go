//go:build unix

package file

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"syscall"
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
	// Hash is the hash of the incarnation's identity prefix (see nameOf),
	// empty until it is named, and for names of earlier versions.
	Hash string `json:"hash,omitempty"`
	// Prior holds the prefix hashes of the file's earlier incarnations
	// (truncated in place), the last maxPrior.
	Prior []string `json:"prior,omitempty"`
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

// A file's partition name is a function of the file alone, so that a sink
// that stores positions by partition name (the PostgreSQL sink) finds its
// positions again when data_dir, and with it the source's state, is lost:
// a lost state then costs reading again, never writing twice. It is
//
//	<inode>@<birth time, ns>#<hash of the identity prefix>[/g<incarnation>]
//
// or, where the filesystem gives no birth time, <device>:<inode>#<hash>...
//
//   - The inode and its birth time (statx) tell apart every file ever
//     created on the filesystem: a new file on a reused inode has another
//     birth time, so it never inherits the positions of the one before. A
//     rename keeps both. The device number is left out where the birth time
//     is known, because it changes when a volume is attached elsewhere.
//   - The identity prefix tells apart the incarnations of one file: a file
//     truncated and written again in place (copytruncate) keeps its inode
//     and birth time but begins with other bytes. It is the file's bytes up
//     to the end of its first line that holds anything (for csv with a
//     header, its second: the first data record), at most
//     fingerprint_bytes: bytes that never change once written, and that are
//     all there by the time the first record can be read, so naming a file
//     then costs no latency. A file that has no such line end yet and is
//     shorter than fingerprint_bytes is not named, nor read, until it has,
//     or until it is finished (mode once, or let go), when its prefix is all
//     its bytes.
//   - The incarnation is added only when a truncated file's new prefix is
//     the same as one of its earlier incarnations' (the state keeps the last
//     few), which their names then could not tell apart.
//
// Names written by earlier versions (<path>@<dev>:<ino>/<gen>.<first seen>)
// are kept for the files they name, so an upgrade neither reads again nor
// writes twice; only new files and new incarnations get the new names.

// maxPrior is how many earlier incarnations' prefix hashes an entry keeps.
const maxPrior = 8

// identityPrefix returns the bytes of b (a file's first bytes, at most
// limit of them) that name it: up to the end of its lines-th line that is
// not empty (empty lines count too when blanks is set), or all limit bytes
// when b holds that many and no such line end. ok is false when b holds
// neither, unless final, when the prefix is all of b.
func identityPrefix(b []byte, limit, lines int, blanks, final bool) ([]byte, bool) {
	b = b[:min(len(b), limit)]
	start, n := 0, 0
	for i, c := range b {
		if c != '\n' {
			continue
		}
		line := bytes.TrimSuffix(b[start:i], []byte("\r"))
		start = i + 1
		if len(line) == 0 && !blanks {
			continue
		}
		if n++; n == lines {
			return b[:i+1], true
		}
	}
	return b, len(b) == limit || final
}

// nameOf names an incarnation from its identity, and reports the hash of
// its prefix (what later incarnations compare theirs with). The
// incarnation is appended when the hash is in prior.
func nameOf(k fileKey, btime int64, prefix []byte, gen uint64, prior []string) (name, hash string) {
	sum := sha256.Sum256(prefix)
	hash = hex.EncodeToString(sum[:8])
	if btime != 0 {
		name = fmt.Sprintf("%d@%d#%s", k.Ino, btime, hash)
	} else {
		name = fmt.Sprintf("%d:%d#%s", k.Dev, k.Ino, hash)
	}
	if gen > 0 && slices.Contains(prior, hash) {
		name += "/g" + strconv.FormatUint(gen, 10)
	}
	return name, hash
}

// addPrior appends hash to an incarnation's list of earlier prefix hashes,
// keeping the last maxPrior.
func addPrior(prior []string, hash string) []string {
	if hash == "" {
		return slices.Clone(prior)
	}
	out := append(slices.Clone(prior), hash)
	if len(out) > maxPrior {
		out = out[len(out)-maxPrior:]
	}
	return out
}
