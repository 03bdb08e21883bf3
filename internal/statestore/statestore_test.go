package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
	bolt "go.etcd.io/bbolt"
)

// logBuffer collects what the store logs.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func put(t *testing.T, s *Store, key, val string) {
	t.Helper()
	if err := s.Update(func(tx Tx) error { return tx.Put(key, []byte(val)) }); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s *Store, key string) string {
	t.Helper()
	var v string
	if err := s.Update(func(tx Tx) error { v = string(tx.Get(key)); return nil }); err != nil {
		t.Fatal(err)
	}
	return v
}

// Positions written and closed are there when the file is opened again.
func TestReopenKeepsState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", "1")
	put(t, s, "b", "2")
	if err := s.Update(func(tx Tx) error { return tx.Delete("a") }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if get(t, s, "a") != "" || get(t, s, "b") != "2" || s.Len() != 1 {
		t.Fatalf("after reopening: a=%q b=%q len %d, want a deleted, b=2, one key", get(t, s, "a"), get(t, s, "b"), s.Len())
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("a second Open of a held file: %v, want an error saying it is locked", err)
	}
}

// validFile returns the bytes of a state file holding committed data.
func validFile(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x", "y", "z"} {
		put(t, s, k, strings.Repeat(k, 100))
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A file under the store's name that cannot be a store (empty, shorter
// than the initial pages, all zeros, damaged, not a bbolt file) is refused:
// the error names the file, says its positions are unknown and gives the
// two ways to start afresh on purpose, and the file is left as it is. An
// empty file was once taken for a first start, which read every input
// again (issue 25).
func TestUnusableStateIsRefused(t *testing.T) {
	page := os.Getpagesize()
	valid := validFile(t)
	metaGone := bytes.Clone(valid)
	copy(metaGone, bytes.Repeat([]byte{0xAB}, 2*page)) // both meta pages overwritten
	dataGone := bytes.Clone(valid)
	for i := 2 * page; i < len(dataGone); i++ { // every page but the meta pages
		dataGone[i] = 0xCD
	}
	for name, content := range map[string][]byte{
		"empty":             {},
		"one zero page":     make([]byte, page),
		"four zero pages":   make([]byte, 4*page),
		"first page only":   valid[:page],
		"meta pages only":   valid[:2*page],
		"three pages":       valid[:3*page],
		"zeros, many pages": make([]byte, 40*page),
		"not a state file":  bytes.Repeat([]byte("some text that is not a bbolt file\n"), 1000),
		"meta pages broken": metaGone,
		"data pages broken": dataGone,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{Source: "logs"})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a file that cannot be a store")
			}
			msg := err.Error()
			for _, want := range []string{path, "positions it held are unknown", "--reset-state logs", "delete the file"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, content) {
				t.Fatal("the file was changed")
			}
		})
	}
}

// A bbolt file that is sound but is not a store (no state bucket) is
// refused too, unchanged.
func TestForeignBoltFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(path)
	if s, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "no state bucket") {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of a bbolt file without the state bucket: %v, want it refused", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the file was changed")
	}
}

// Opening an existing store writes nothing to it: a caller that finds its
// entries unusable leaves the file as it was (no transaction was committed
// before the entries were read).
func TestOpenWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	if err := os.WriteFile(path, validFile(t), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ForEach(func(string, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("Open and a read changed the file")
	}
}

// The fault: the disk is full at the very first start. Open fails,
// saying so, and leaves no file under the store's name (creation is whole or
// nothing); once there is space again, the next Open creates the store.
func TestFirstStartOnAFullDisk(t *testing.T) {
	for _, size := range []string{"4k", "8k", "12k"} {
		t.Run(size, func(t *testing.T) {
			dir, resize := weirtest.Tmpfs(t, size)
			path := filepath.Join(dir, "state", "s.db")
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open on a %s tmpfs succeeded", size)
			}
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: %v, want ENOSPC naming %s", err, path)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the failed start left a file under the store's name (%v)", err)
			}
			if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 0 {
				t.Fatalf("the failed start left %d files behind", len(ents))
			}
			resize("1m")
			s, err = Open(path, Options{})
			if err != nil {
				t.Fatalf("Open with space again: %v", err)
			}
			defer s.Close()
			put(t, s, "k", "v")
			if get(t, s, "k") != "v" {
				t.Fatal("the new store does not work")
			}
		})
	}
}

// A creation that crashed leaves a temporary file, never a file under the
// store's name: Open removes one that is old and that nobody holds, and
// leaves one that is recent or locked (a creation in progress).
func TestStaleTemporaryFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	old := path + tempPrefix + "1-crashed"
	recent := path + tempPrefix + "2-recent"
	held := path + tempPrefix + "3-held"
	for _, p := range []string{old, recent, held} {
		if err := os.WriteFile(p, []byte("half a store"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleTemp)
	for _, p := range []string{old, held} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for p, want := range map[string]bool{old: false, recent: true, held: true, path: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// Two processes creating one store at once: the store under the name is one
// of theirs, whole, and the other Open fails as locked or opens that same
// store; neither replaces the other's file.
func TestConcurrentCreation(t *testing.T) {
	for range 20 {
		path := filepath.Join(t.TempDir(), "s.db")
		type res struct {
			s   *Store
			err error
		}
		out := make(chan res, 2)
		for range 2 {
			go func() { s, err := Open(path, Options{}); out <- res{s, err} }()
		}
		var opened []*Store
		for range 2 {
			r := <-out
			switch {
			case r.err == nil:
				opened = append(opened, r.s)
			case !strings.Contains(r.err.Error(), "locked by another process"):
				t.Fatalf("concurrent creation: %v", r.err)
			}
		}
		if len(opened) != 1 {
			t.Fatalf("%d of two concurrent Opens hold the store, want exactly one", len(opened))
		}
		put(t, opened[0], "k", "v")
		opened[0].Close()
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if get(t, s, "k") != "v" {
			t.Fatal("the store under the name is not the one that was written")
		}
		s.Close()
	}
}

// Reset moves the file aside (kept, not deleted) so that the next Open
// starts afresh; a file another process holds is not moved; no file is no
// error.
func TestReset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	if aside, err := Reset(path, Options{}); err != nil || aside != "" {
		t.Fatalf("Reset without a file: %q, %v", aside, err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "v")
	if _, err := Reset(path, Options{}); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("Reset of a held store: %v, want it refused as locked", err)
	}
	s.Close()
	if err := os.WriteFile(path, nil, 0o600); err != nil { // emptied: what Reset is for
		t.Fatal(err)
	}
	log, logs := logBuffer()
	aside, err := Reset(path, Options{Log: log, Source: "in"})
	if err != nil || !strings.HasPrefix(aside, path+".reset-") {
		t.Fatalf("Reset: %q, %v", aside, err)
	}
	if _, err := os.Stat(aside); err != nil {
		t.Fatalf("the file moved aside is not there: %v", err)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, aside) {
		t.Fatalf("Reset did not warn naming where the file went:\n%s", l)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Reset: %v", err)
	}
	defer s.Close()
	if s.Len() != 0 {
		t.Fatal("the store after Reset is not empty")
	}
}

// A commit on a full disk fails with an error naming the file and the cause;
// it changes nothing, and once there is space the next commit works and the
// store holds it after a reopen.
func TestCommitOnAFullDisk(t *testing.T) {
	dir, _ := weirtest.Tmpfs(t, "256k")
	path := filepath.Join(dir, "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "before")
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break // full
		}
	}
	f.Close()
	var failed error
	for i := range 50 { // until the store needs a page it does not have
		failed = s.Update(func(tx Tx) error { return tx.Put("k", bytes.Repeat([]byte{'a' + byte(i%26)}, 8192)) })
		if failed != nil {
			break
		}
	}
	if failed == nil || !errors.Is(failed, syscall.ENOSPC) || !strings.Contains(failed.Error(), path) {
		t.Fatalf("commit on a full disk: %v, want ENOSPC naming %s", failed, path)
	}
	if !strings.Contains(failed.Error(), "free space") {
		t.Errorf("commit error %q does not say how to fix it", failed)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "after")
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := get(t, s, "k"); got != "after" {
		t.Fatalf("after reopening k=%.20q, want after", got)
	}
}

// Random damage to a state file never crashes Open (bbolt itself panics or
// faults on a damaged page): the file opens and works, or Open returns the
// corruption error.
func TestRandomDamageNeverCrashesOpen(t *testing.T) {
	scratch := fastDir(t)
	path := filepath.Join(scratch, "big.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx Tx) error {
		for i := range 400 { // enough keys for branch pages
			if err := tx.Put(fmt.Sprintf("%d:%d", i, i*7919), bytes.Repeat([]byte("v"), 80)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	valid, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	opened, refused := 0, 0
	for trial := range 200 {
		b := bytes.Clone(valid)
		for range 1 + rng.IntN(8) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		p := filepath.Join(scratch, fmt.Sprint(trial), "s.db")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(p, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			if !strings.Contains(err.Error(), "cannot be used") {
				t.Fatalf("trial %d: %v, want the unusable-file error", trial, err)
			}
			refused++
			continue
		}
		opened++
		if err := s.ForEach(func(string, []byte) error { return nil }); err != nil {
			t.Fatalf("trial %d: ForEach of a file that opened: %v", trial, err)
		}
		put(t, s, "new", "v")
		s.Close()
	}
	t.Logf("%d damaged files opened (damage in unused bytes or values), %d refused", opened, refused)
	if refused == 0 {
		t.Fatal("no damaged file was refused: the damage never reached the structure")
	}
}

// fastDir returns a temporary directory in memory (/dev/shm) when there is
// one, where the many fsyncs of a long test cost nothing, else on disk.
func fastDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "statestore-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
