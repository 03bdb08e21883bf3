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
// A file is created whole or not at all (see Open): it is written under a
// temporary name, made durable, and only then linked under its own name. So
// a file found under its name was once a complete store, and one that is
// empty, short, all zeros or damaged is not the remains of a first start but
// a store whose positions are lost: Open refuses it, with an error that names
// the file and the two ways to start afresh on purpose (Reset, which `weir
// run --reset-state SOURCE` calls, or deleting the file). Taking it for a
// first start would read every input again, or, for a file source in tail
// mode, lose what rotation moved away while weir was stopped.
package statestore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// Options are Open's and Reset's settings. The zero value works.
type Options struct {
	// Log receives Reset's warning and the removal of stale temporary
	// files; nil means slog.Default().
	Log *slog.Logger
	// Source names the component the store belongs to, for the errors'
	// "weir run --reset-state SOURCE"; empty leaves the flag's argument
	// to the reader.
	Source string
}

func (o Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}

// Open opens the state file at path, creating it (and its directory) when
// there is none. It fails at once, naming the file, when another process
// holds it.
//
// A new file is created whole: bbolt writes it under a temporary name in the
// same directory, with its bucket, and fsyncs it; it is then linked under
// path (a link, unlike a rename, never replaces a file another process
// created meanwhile) and the directory is fsynced. A first start that fails
// half-way (a full disk, a crash) leaves at most a temporary file, which a
// later Open removes, and never a file under path.
//
// An existing file is opened without writing to it: Open runs no
// transaction, so a caller that finds the store's entries unusable leaves
// the file exactly as it was. Any file under path that cannot be a store
// (empty, shorter than bbolt's initial pages, all zeros, damaged pages, or
// without the store's bucket) is refused with an error that names it and
// how to start afresh on purpose; the file is left untouched. bbolt trusts
// its file and panics or faults on a damaged page, so Open first walks the
// structure itself (verifyPages), then runs bbolt's consistency check.
func Open(path string, o Options) (*Store, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("statestore: creating %s: %w%s", dir, err, hint(err, dir))
	}
	removeStaleTemps(path, o.log())
	exists, err := inspect(path, o)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := create(path); err != nil {
			return nil, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, locked(path)
	case err != nil && isSystemError(err):
		return nil, fmt.Errorf("statestore: opening %s: %w%s", path, err, hint(err, dir))
	case err != nil:
		return nil, unusable(path, err.Error(), o)
	}
	if err := check(db); err != nil {
		db.Close()
		return nil, unusable(path, err.Error(), o)
	}
	return &Store{db: db, path: path}, nil
}

// create makes a new, empty store at path, whole or not at all (see Open).
// A store another process created at path meanwhile is kept.
func create(path string) error {
	dir := filepath.Dir(path)
	tmp := tempName(path)
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("statestore: creating %s: %w%s", path, err, hint(err, dir))
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("statestore: creating %s: %w%s", path, err, hint(err, dir))
	}
	err = publish(tmp, path)
	os.Remove(tmp)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("statestore: creating %s: %w%s", path, err, hint(err, dir))
	}
	// The new name is durable only once its directory is: without this a
	// crash could lose the whole store after its first commits were
	// reported durable.
	return SyncDir(dir)
}

// publish gives the complete file tmp the name path, failing with an error
// that wraps fs.ErrExist if path exists. A hard link is atomic and never
// replaces; where the filesystem has none, rename with RENAME_NOREPLACE.
func publish(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if rerr := renameNoReplace(tmp, path); rerr != nil {
		if errors.Is(rerr, syscall.EEXIST) {
			return fs.ErrExist
		}
		return err
	}
	return nil
}

// tempPrefix starts the names of the temporary files a creation uses.
const tempPrefix = ".new-"

func tempName(path string) string {
	return path + tempPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// staleTemp is how old a temporary file must be before Open removes it: a
// creation takes milliseconds, so an older one that nobody holds is left by
// a creation that failed or crashed.
const staleTemp = time.Minute

// removeStaleTemps removes the temporary files of path's creations that
// failed or crashed: older than staleTemp and locked by no process.
func removeStaleTemps(path string, log *slog.Logger) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+tempPrefix
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		m := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < staleTemp {
			continue
		}
		f, err := os.Open(m)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.Remove(m) == nil {
			log.Info("statestore: removed the temporary file of a creation that did not finish", "path", m)
		}
		f.Close()
	}
}

// isSystemError reports whether the system refused an operation (permissions,
// a full disk), as opposed to bbolt refusing the file's content.
func isSystemError(err error) bool {
	var errno syscall.Errno
	var pe *fs.PathError
	return errors.As(err, &errno) || errors.As(err, &pe)
}

// check runs bbolt's consistency check (key order, pages neither reachable
// nor free) and makes sure the store's bucket is there. inspect has made
// sure that it cannot fault.
func check(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) == 0 && tx.Bucket(bucket) == nil {
			errs = append(errs, errors.New("it holds no state bucket: it is not a state file weir wrote"))
		}
		return errors.Join(errs...)
	})
}

func locked(path string) error {
	return fmt.Errorf("statestore: %s is locked by another process: give each pipeline its own data_dir", path)
}

// unusable is the error for a file under the store's name that cannot be
// used: what is wrong, what it means, and the two ways out.
func unusable(path, why string, o Options) error {
	flag := "--reset-state SOURCE"
	if o.Source != "" {
		flag = "--reset-state " + o.Source
	}
	return fmt.Errorf("statestore: %s cannot be used: %s. The positions it held are unknown, and weir does not take it for a first start "+
		"(that would read every input again, or miss what changed while weir was stopped). "+
		"To start afresh on purpose, run weir once with %s (the file is moved aside, not deleted), or delete the file; "+
		"the source then starts as it does without a state file (see its documentation). The file is left as it is",
		path, why, flag)
}

// hint says how to fix an error the system gave, when there is something to say.
func hint(err error, dir string) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Sprintf(" (free space on the filesystem of %s)", dir)
	}
	return ""
}

// bboltInitialPages is how many pages bbolt writes when it creates a file: two
// meta pages, a freelist and an empty root. A store has at least these.
const bboltInitialPages = 4

// inspect looks at the file at path before bbolt opens it, and reports
// whether there is one. A file that cannot be a store is an error naming it
// (see unusable): empty, shorter than bbolt's initial pages in the page size
// its first meta page records (or this system's), all zeros, or one whose
// structure bbolt could not read safely (see verifyPages). inspect reads
// only, and holds the file's flock meanwhile (the lock bbolt takes), so that
// a file another process has open is reported as locked.
func inspect(path string, o Options) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("statestore: opening %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("statestore: %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return false, unusable(path, "it is not a regular file ("+fi.Mode().Type().String()+")", o)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, locked(path)
		}
		return false, fmt.Errorf("statestore: locking %s: %w", path, err)
	}
	size := fi.Size()
	if size == 0 {
		return false, unusable(path, "it is empty (0 bytes)", o)
	}
	page := int64(os.Getpagesize())
	if m := readMeta(f, 0); m.valid && m.pageSize >= minPageSize && m.pageSize <= maxPageSize {
		page = m.pageSize
	}
	if size < bboltInitialPages*page {
		return false, unusable(path, fmt.Sprintf("it is %d bytes long, shorter than any store (%d)", size, bboltInitialPages*page), o)
	}
	verr := verifyPages(f, size)
	if verr == nil {
		return true, nil
	}
	zero, err := allZero(f, size)
	if err != nil {
		return false, fmt.Errorf("statestore: reading %s: %w", path, err)
	}
	if zero {
		return false, unusable(path, fmt.Sprintf("its %d bytes are all zero", size), o)
	}
	return false, unusable(path, "it is damaged ("+verr.Error()+")", o)
}

// Reset moves the state file at path aside, to path.reset-<UTC time>, so
// that the next Open starts afresh; the file is kept for inspection, never
// deleted. It returns the new name, or "" when there is no file. A file
// another process holds is not moved. The move is logged as a warning.
func Reset(path string, o Options) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("statestore: resetting %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return "", locked(path)
		}
		return "", fmt.Errorf("statestore: locking %s: %w", path, err)
	}
	aside := path + ".reset-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("statestore: resetting %s: %w", path, err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	o.log().Warn("statestore: state reset on request: the file is moved aside and the source starts afresh", "path", path, "moved_to", aside, "source", o.Source)
	return aside, nil
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

// Keeper is implemented by a connector that keeps state files under its
// data_dir. `weir run --reset-state NAME` resets each of them (Reset) before
// the run starts.
type Keeper interface {
	// StateFiles returns the paths of the state files the connector's
	// configuration uses; nil when it keeps none.
	StateFiles() []string
}
