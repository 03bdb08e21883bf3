//go:build unix

package file

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/statestore"
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
		if err := s.identify(f, 1, nil); err != nil {
			t.Fatalf("%d bytes left: %v", left, err)
		}
		want, _ := fingerprint(fd, left)
		if f.fpLen != left || !bytes.Equal(f.fp, want) {
			t.Fatalf("%d bytes left: fingerprint of %d bytes (%x), want %d (%x)", left, f.fpLen, f.fp, left, want)
		}
	}
}

// The identity prefix is the bytes to the end of the first line that holds
// anything (the second for csv with a header), at most the limit: the same
// whatever else the file grows to. Without such a line end it is not there
// yet, unless the file holds the limit or is finished.
func TestIdentityPrefix(t *testing.T) {
	for _, c := range []struct {
		in            string
		limit, lines  int
		blanks, final bool
		want          string
		ok            bool
	}{
		{"abc\ndef\n", 64, 1, false, false, "abc\n", true},
		{"\n\r\nabc\ndef\n", 64, 1, false, false, "\n\r\nabc\n", true}, // ndjson: blank lines are no records
		{"\nabc\n", 64, 1, true, false, "\n", true},                    // lines: a blank line is one
		{"h1,h2\nv1,v2\nv3,v4\n", 64, 2, false, false, "h1,h2\nv1,v2\n", true},
		{"h1,h2\nv1,v2", 64, 2, false, false, "", false}, // no record yet
		{"abc", 64, 1, false, false, "", false},
		{"abc", 64, 1, false, true, "abc", true},       // finished
		{"", 64, 1, false, true, "", true},             // finished and empty
		{"abcdefgh", 4, 1, false, false, "abcd", true}, // a first line longer than the limit
		{"ab\ncdefgh", 2, 1, false, false, "ab", true}, // the limit comes first
		{"ab\r\ncd\n", 64, 1, false, false, "ab\r\n", true},
	} {
		got, ok := identityPrefix([]byte(c.in), c.limit, c.lines, c.blanks, c.final)
		if ok != c.ok || (ok && string(got) != c.want) {
			t.Errorf("identityPrefix(%q, %d, %d, %v, %v) = %q, %v; want %q, %v", c.in, c.limit, c.lines, c.blanks, c.final, got, ok, c.want, c.ok)
		}
	}
}

// A name tells apart files on one inode by their birth times, and the
// incarnations of one file by their prefixes; the incarnation number is
// added only when a prefix repeats an earlier one's.
func TestNameOf(t *testing.T) {
	k := fileKey{Dev: 2049, Ino: 77}
	a, ha := nameOf(k, 1000, []byte("first\n"), 0, nil)
	if want := "77@1000#" + ha; a != want || len(ha) != 16 {
		t.Fatalf("nameOf = %q (hash %q), want %q", a, ha, want)
	}
	if b, _ := nameOf(k, 2000, []byte("first\n"), 0, nil); b == a {
		t.Fatal("a file on a reused inode (another birth time) got the same name")
	}
	if b, _ := nameOf(k, 1000, []byte("other\n"), 1, []string{ha}); b == a || strings.Contains(b, "/g") {
		t.Fatalf("a new incarnation with another prefix: %q (was %q), want a name without the incarnation", b, a)
	}
	if b, _ := nameOf(k, 1000, []byte("first\n"), 1, []string{ha}); b != a+"/g1" {
		t.Fatalf("a new incarnation with the same prefix: %q, want %q", b, a+"/g1")
	}
	if b, _ := nameOf(k, 0, []byte("first\n"), 0, nil); b != "2049:77#"+ha {
		t.Fatalf("without a birth time: %q, want the device in the name", b)
	}
}

// partName returns the name of the partition whose lines (joined) are want.
func partName(t *testing.T, h *harness, want string) string {
	t.Helper()
	for name, l := range h.lines {
		if join(l) == want {
			return name
		}
	}
	t.Fatalf("no partition read %q: %v", want, h.lines)
	return ""
}

// Guarantee (issue 25): a file's partition name depends on the file alone,
// so a lost data_dir gives every file the name it had, and a sink that
// stores positions by name finds them. The files here: one found with a
// long first line, one found small and grown past fingerprint_bytes, one
// found before its first line was complete (named only then), one renamed
// after it was named, and a csv file with a header.
func TestNamesSurviveALostState(t *testing.T) {
	for _, mode := range []string{"tail", "once"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "big.log"), strings.Repeat("x", 3000)+"\nb2\n")
			write(t, filepath.Join(dir, "small.log"), "s1\n")
			write(t, filepath.Join(dir, "partial.log"), "p1")
			write(t, filepath.Join(dir, "moved.log"), "m1\n")
			cfg := testConfig(dir, func(c *Config) { c.Mode = mode; c.FingerprintBytes = 64 })
			h := open(t, cfg)
			want := map[string]string{}
			if mode == "tail" {
				h.pollUntil("the first lines", func() bool { return h.count() == 4 })
				if len(h.host.names) != 3 {
					t.Fatalf("assigned %v: the file without a complete first line must wait for it", h.host.names)
				}
				appendTo(t, filepath.Join(dir, "small.log"), strings.Repeat("s", 200)+"\n")
				appendTo(t, filepath.Join(dir, "partial.log"), "\np2\n")
				h.pollUntil("partial.log's lines", func() bool { return h.count() == 7 })
				want["partial"] = partName(t, h, "p1,p2")
				want["small"] = partName(t, h, "s1,"+strings.Repeat("s", 200))
			} else {
				h.drain()
				want["partial"] = partName(t, h, "p1")
				want["small"] = partName(t, h, "s1")
			}
			want["big"] = partName(t, h, strings.Repeat("x", 3000)+",b2")
			want["moved"] = partName(t, h, "m1")
			h.commitAll()
			h.close()
			must(t, os.Rename(filepath.Join(dir, "moved.log"), filepath.Join(dir, "renamed.log")))
			must(t, os.RemoveAll(cfg.DataDir))

			h2 := open(t, cfg)
			if mode == "tail" {
				h2.pollUntil("every line again", func() bool { return h2.count() == 7 })
			} else {
				h2.drain()
			}
			got := map[string]string{"big": partName(t, h2, strings.Repeat("x", 3000)+",b2"), "moved": partName(t, h2, "m1")}
			if mode == "tail" {
				got["partial"], got["small"] = partName(t, h2, "p1,p2"), partName(t, h2, "s1,"+strings.Repeat("s", 200))
			} else {
				got["partial"], got["small"] = partName(t, h2, "p1"), partName(t, h2, "s1")
			}
			for f, n := range want {
				if got[f] != n {
					t.Errorf("%s: named %q after the state was lost, %q before", f, got[f], n)
				}
			}
		})
	}
}

// A csv file with a header is named by its header and first record: two
// files on one path with the same header (a daily export) never share a
// name, and neither does one named before its first record was complete.
func TestCSVNamesIncludeTheFirstRecord(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir, func(c *Config) { c.Mode, c.Format, c.Paths = "tail", "csv", []string{filepath.Join(dir, "*.csv")} })
	write(t, filepath.Join(dir, "a.csv"), "id,v\n")
	h := open(t, cfg)
	h.pollFor(20 * time.Millisecond)
	if len(h.host.names) != 0 {
		t.Fatalf("a csv file with only its header was assigned: %v", h.host.names)
	}
	appendTo(t, filepath.Join(dir, "a.csv"), "1,x\n")
	h.pollUntil("a.csv's record", func() bool { return h.count() == 1 })
	first := h.host.names[1]
	prefix, _ := identityPrefix([]byte("id,v\n1,x\n"), 1024, 2, false, false)
	if _, hash := nameOf(fileKey{}, 0, prefix, 0, nil); !strings.Contains(first, "#"+hash) {
		t.Fatalf("a.csv named %q, want the hash of its header and first record (%s)", first, hash)
	}
}

// A file truncated in place and written again (copytruncate) is a new
// incarnation with a name of its own: by its new first bytes, or, when they
// are the same as before, by its incarnation number.
func TestTruncatedFileGetsANewName(t *testing.T) {
	for _, again := range []string{"same\n", "other\n"} {
		dir := t.TempDir()
		p := filepath.Join(dir, "a.log")
		write(t, p, "same\n2\n3\n")
		h := open(t, testConfig(dir, func(c *Config) { c.Mode = "tail" }))
		h.pollUntil("the lines", func() bool { return h.count() == 3 })
		h.commitAll()
		must(t, os.Truncate(p, 0))
		appendTo(t, p, again)
		h.pollUntil("the new incarnation", func() bool { return len(h.host.names) == 2 && h.count() == 4 })
		old, cur := h.host.names[1], h.host.names[2]
		if old == cur {
			t.Fatalf("%q: the new incarnation has the old one's name %q", again, old)
		}
		if wantG := again == "same\n"; strings.HasSuffix(cur, "/g1") != wantG {
			t.Fatalf("%q: new incarnation named %q (old %q); the incarnation is in the name only when the prefix repeats", again, cur, old)
		}
	}
}

// An upgrade keeps the names an earlier version gave (path@dev:ino/gen.ns):
// the file goes on under its old name from its committed position, so a
// sink that stored positions under it neither reads nor writes again.
func TestNamesOfEarlierVersionsAreKept(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	write(t, p, "1\n2\n3\n")
	cfg := testConfig(dir, func(c *Config) { c.Mode = "once" })
	fi, err := os.Stat(p)
	must(t, err)
	k, _ := keyOf(fi)
	old := fmt.Sprintf("%s@%s/0.%d", p, k, time.Now().UnixNano())
	src, err := New("in", cfg)
	must(t, err)
	st, err := openStore(t, src)
	must(t, err)
	fpv, n, _ := fingerprintPrefix(mustOpen(t, p), 1024)
	e := entry{Name: old, Path: p, FPLen: n, FP: fpv, Pos: 2, Size: 6}
	must(t, st.Update(func(tx statestore.Tx) error { return tx.Put(k.String(), e.encode()) }))
	must(t, st.Close())
	h := open(t, cfg)
	h.drain()
	if len(h.host.names) != 1 || h.host.names[1] != old || h.host.starts[1] != 2 {
		t.Fatalf("assigned %v at %v, want the old name %q at 2", h.host.names, h.host.starts, old)
	}
	if got := join(h.only()); got != "2,3" {
		t.Fatalf("read %q, want 2,3", got)
	}
}

func mustOpen(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Open(p)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}
