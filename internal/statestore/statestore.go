// Package statestore is a small durable key-value store for connector state,
// such as the read positions of the file source. It is a bbolt file under the
// pipeline's data directory.
//
// bbolt is used rather than a hand-written log because it already gives what a
// position store needs: an Update is atomic across keys and is fsynced before
// it returns (a copy-on-write B+tree with two meta pages, so a crash leaves
// either the old or the new state, never a torn one), and the file is locked
// with flock, so two processes cannot share one data directory by mistake.
//
// Open tells two kinds of unreadable file apart (see Open): one that cannot
// hold committed data, which a first start that failed half-way leaves
// behind, is recreated with a warning; any other stops the run with an error
// that names the file and the way out, because throwing it away would read
// every input again from the start.
package statestore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var bucket = []byte("state")

// Store is an open state file. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens or creates the state file at path, creating its directory. It
// fails at once, naming the file, when another process holds it.
//
// A file that cannot hold committed data is recreated, with a warning on log
// (nil means slog.Default()): one shorter than bbolt's four initial pages
// (every commit writes past them), or one whose bytes are all zero. That is
// what a first start leaves when the disk fills up while bbolt writes its
// initial pages, or a crash before they reached the disk. Any other file that
// bbolt cannot read, or whose pages fail the checks of verifyPages and of
// bbolt's consistency check, is left untouched, and Open returns an error
// naming it and the recovery: move it aside, and every input is read again
// from the start.
func Open(path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("statestore: creating %s: %w", dir, err)
	}
	if err := inspect(path, log); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("statestore: %s is locked by another process: give each pipeline its own data_dir", path)
	case err != nil && isSystemError(err):
		return nil, fmt.Errorf("statestore: opening %s: %w%s", path, err, hint(err, dir))
	case err != nil:
		return nil, corrupt(path, err)
	}
	if err := check(db); err != nil {
		db.Close()
		return nil, corrupt(path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("statestore: initialising %s: %w%s", path, err, hint(err, dir))
	}
	if created {
		// A new file's directory entry is only durable once its directory is
		// synced; without this a crash could lose the whole store after the
		// first commits were reported durable.
		if err := SyncDir(dir); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &Store{db: db, path: path}, nil
}

// isSystemError reports whether the system refused an operation (permissions,
// a full disk), as opposed to bbolt refusing the file's content.
func isSystemError(err error) bool {
	var errno syscall.Errno
	var pe *fs.PathError
	return errors.As(err, &errno) || errors.As(err, &pe)
}

// check runs bbolt's consistency check (key order, pages neither reachable
// nor free). inspect has made sure that it cannot fault.
func check(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

func corrupt(path string, err error) error {
	return fmt.Errorf("statestore: %s is corrupt (%v), so the committed read positions are unknown: "+
		"move it aside (mv %s %s.corrupt) and start again; every input is then read again from the start "+
		"(at-least-once: the sinks receive what they already hold once more)", path, err, path, path)
}

// hint says how to fix an error the system gave, when there is something to say.
func hint(err error, dir string) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Sprintf(" (free space on the filesystem of %s)", dir)
	}
	return ""
}

// bboltInitialPages is how many pages bbolt writes when it creates a file: two
// meta pages, a freelist and an empty root. A committed transaction writes
// pages after these, so a shorter file never held committed data.
const bboltInitialPages = 4

// inspect looks at an existing state file before bbolt opens it. A file that
// cannot hold committed data is removed, with a warning, for Open to create
// anew: one shorter than bbolt's initial pages in the page size its first
// meta page records (or this system's), or one whose bytes are all zero. A
// file whose structure bbolt could not read safely (see verifyPages) is an
// error naming it and the recovery. inspect holds the file's flock meanwhile
// (the lock bbolt takes), so a file another process has open is never
// touched.
func inspect(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("statestore: opening %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("statestore: %s is locked by another process: give each pipeline its own data_dir", path)
		}
		return fmt.Errorf("statestore: locking %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("statestore: %s: %w", path, err)
	}
	size := fi.Size()
	if size == 0 {
		return nil // bbolt initialises an empty file itself
	}
	page := int64(os.Getpagesize())
	if m := readMeta(f, 0); m.valid && m.pageSize >= minPageSize && m.pageSize <= maxPageSize {
		page = m.pageSize
	}
	if size >= bboltInitialPages*page {
		verr := verifyPages(f, size)
		if verr == nil {
			return nil
		}
		zero, err := allZero(f, size)
		if err != nil {
			return fmt.Errorf("statestore: reading %s: %w", path, err)
		}
		if !zero {
			return corrupt(path, verr)
		}
	}
	log.Warn("statestore: the state file holds no committed data (a first start failed while creating it, e.g. on a full disk); recreating it",
		"path", path, "bytes", size)
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("statestore: removing %s, which holds no committed data: %w", path, err)
	}
	return nil
}

// allZero reports whether every byte of the file is zero.
func allZero(r io.ReaderAt, size int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n, err := r.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			return false, err
		}
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
	}
	return true, nil
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Tx is a read-write view of the store inside Update.
type Tx struct{ b *bolt.Bucket }

// Get returns the value of key, or nil. The slice is valid only inside Update.
func (t Tx) Get(key string) []byte { return t.b.Get([]byte(key)) }

// Put sets key to val.
func (t Tx) Put(key string, val []byte) error { return t.b.Put([]byte(key), val) }

// Delete removes key.
func (t Tx) Delete(key string) error { return t.b.Delete([]byte(key)) }

// Update runs fn in a transaction. When Update returns nil the changes are on
// disk (fsynced); when fn returns an error nothing is changed. An error of the
// system (a full disk) names the file and says what to do.
func (s *Store) Update(fn func(Tx) error) error {
	if err := s.db.Update(func(tx *bolt.Tx) error { return fn(Tx{tx.Bucket(bucket)}) }); err != nil {
		return fmt.Errorf("statestore: updating %s: %w%s", s.path, err, hint(err, filepath.Dir(s.path)))
	}
	return nil
}

// ForEach calls fn for every key. val is valid only during the call.
func (s *Store) ForEach(fn func(key string, val []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}

// Len returns the number of keys.
func (s *Store) Len() int {
	n := 0
	_ = s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucket).Stats().KeyN
		return nil
	})
	return n
}

// Close closes the file.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("statestore: closing %s: %w", s.path, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that entries created or renamed in it survive
// a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("statestore: syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("statestore: syncing directory %s: %w", dir, err)
	}
	return nil
}
