// Package statestore is a small durable key-value store for connector state,
// such as the read positions of the file source. It is a bbolt file under the
// pipeline's data directory.
//
// bbolt is used rather than a hand-written log because it already gives what a
// position store needs: an Update is atomic across keys and is fsynced before
// it returns (a copy-on-write B+tree with two meta pages, so a crash leaves
// either the old or the new state, never a torn one), and the file is locked
// with flock, so two processes cannot share one data directory by mistake.
package statestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
func Open(path string) (*Store, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("statestore: creating %s: %w", dir, err)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("statestore: %s is locked by another process: give each pipeline its own data_dir", path)
	}
	if err != nil {
		return nil, fmt.Errorf("statestore: opening %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("statestore: initialising %s: %w", path, err)
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
// disk (fsynced); when fn returns an error nothing is changed.
func (s *Store) Update(fn func(Tx) error) error {
	if err := s.db.Update(func(tx *bolt.Tx) error { return fn(Tx{tx.Bucket(bucket)}) }); err != nil {
		return fmt.Errorf("statestore: updating %s: %w", s.path, err)
	}
	return nil
}

// ForEach calls fn for every key. val is valid only during the call.
func (s *Store) ForEach(fn func(key string, val []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
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
