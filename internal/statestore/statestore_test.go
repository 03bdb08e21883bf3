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

	"github.com/weir-etl/weir/internal/weirtest"
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
	s, err := Open(path, nil)
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
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if get(t, s, "a") != "" || get(t, s, "b") != "2" || s.Len() != 1 {
		t.Fatalf("after reopening: a=%q b=%q len %d, want a deleted, b=2, one key", get(t, s, "a"), get(t, s, "b"), s.Len())
	}
	if _, err := Open(path, nil); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("a second Open of a held file: %v, want an error saying it is locked", err)
	}
}

// validFile returns the bytes of a state file holding committed data.
func validFile(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.db")
	s, err := Open(path, nil)
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

// A file that cannot hold committed data (what a first start that failed
// half-way leaves: empty, shorter than the initial pages, all zeros) is
// recreated, with a warning naming it.
func TestStateOfAFailedFirstStartIsRecreated(t *testing.T) {
	page := os.Getpagesize()
	valid := validFile(t)
	for name, content := range map[string][]byte{
		"empty":             {},
		"one zero page":     make([]byte, page),
		"four zero pages":   make([]byte, 4*page),
		"first page only":   valid[:page],
		"meta pages only":   valid[:2*page],
		"three pages":       valid[:3*page],
		"zeros, many pages": make([]byte, 40*page),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			log, logs := logBuffer()
			s, err := Open(path, log)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if len(content) > 0 && (!strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), path)) {
				t.Fatalf("recreated without a warning naming the file; log: %s", logs)
			}
			put(t, s, "k", "v")
			if get(t, s, "k") != "v" || s.Len() != 1 {
				t.Fatal("the recreated store does not work")
			}
		})
	}
}

// A file that holds, or may hold, committed data but cannot be read stops
// Open with an error naming the file and the recovery, and is left as it is.
func TestCorruptStateStops(t *testing.T) {
	page := os.Getpagesize()
	valid := validFile(t)
	metaGone := bytes.Clone(valid)
	copy(metaGone, bytes.Repeat([]byte{0xAB}, 2*page)) // both meta pages overwritten
	dataGone := bytes.Clone(valid)
	for i := 2 * page; i < len(dataGone); i++ { // every page but the meta pages
		dataGone[i] = 0xCD
	}
	for name, content := range map[string][]byte{
		"not a state file":  bytes.Repeat([]byte("some text that is not a bbolt file\n"), 1000),
		"meta pages broken": metaGone,
		"data pages broken": dataGone,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, nil)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a corrupt file")
			}
			msg := err.Error()
			for _, want := range []string{path, "move it aside", "read again from the start"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, content) {
				t.Fatal("the corrupt file was changed")
			}
		})
	}
}

// The fault: the disk is full at the very first start. Open fails,
// saying so; once there is space again, the next Open recreates the file
// that the failed start left (whatever its size) and works.
func TestFirstStartOnAFullDisk(t *testing.T) {
	for _, size := range []string{"4k", "8k", "12k"} {
		t.Run(size, func(t *testing.T) {
			dir, resize := weirtest.Tmpfs(t, size)
			path := filepath.Join(dir, "state", "s.db")
			s, err := Open(path, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Open on a %s tmpfs succeeded", size)
			}
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open: %v, want ENOSPC naming %s", err, path)
			}
			fi, statErr := os.Stat(path)
			t.Logf("the failed start left %v bytes (%v)", func() int64 {
				if fi == nil {
					return -1
				}
				return fi.Size()
			}(), statErr)
			resize("1m")
			log, logs := logBuffer()
			s, err = Open(path, log)
			if err != nil {
				t.Fatalf("Open with space again: %v", err)
			}
			defer s.Close()
			t.Logf("log: %s", logs)
			put(t, s, "k", "v")
			if get(t, s, "k") != "v" {
				t.Fatal("the recreated store does not work")
			}
		})
	}
}

// A commit on a full disk fails with an error naming the file and the cause;
// it changes nothing, and once there is space the next commit works and the
// store holds it after a reopen.
func TestCommitOnAFullDisk(t *testing.T) {
	dir, _ := weirtest.Tmpfs(t, "256k")
	path := filepath.Join(dir, "s.db")
	s, err := Open(path, nil)
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
	s, err = Open(path, nil)
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
	s, err := Open(path, nil)
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
		s, err := Open(p, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			if !strings.Contains(err.Error(), "move it aside") {
				t.Fatalf("trial %d: %v, want the corruption error", trial, err)
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
