package file

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weir-etl/weir/internal/statestore"
)

// scannedKey holds, in the state store, the start of the last scan whose
// files are all in the store (see scan.go): a file under a rotated glob that
// the store does not know, and that changed after it, is a generation weir
// never saw. Keys of the store's own bookkeeping start with '#', which no
// file key ("dev:ino") does.
const scannedKey = "#scanned"

// stateChange is one transaction: entries to write and entries to forget.
type stateChange struct {
	put    []keyed
	forget []keyed // deleted only if the stored entry is still this incarnation
}

type keyed struct {
	k fileKey
	e entry
	// replace writes e even over a newer incarnation: the copy of a
	// truncated file takes over its old incarnation under the copy's key,
	// which may hold a stale entry of a file deleted before.
	replace bool
}

// apply writes c durably, with the scan time. An entry of an older
// incarnation than the stored one is not written (unless replace): a late
// commit of a revoked partition must not bring back a truncated file's old
// position.
func (s *Source) apply(c stateChange) error {
	scanned := s.persistScanned()
	err := s.store.Update(func(tx statestore.Tx) error {
		for _, u := range c.put {
			key := u.k.String()
			if b := tx.Get(key); b != nil && !u.replace {
				if old, err := decodeEntry(b); err == nil && old.Gen > u.e.Gen {
					continue
				}
			}
			if err := tx.Put(key, u.e.encode()); err != nil {
				return err
			}
		}
		for _, u := range c.forget {
			key := u.k.String()
			if old, err := decodeEntry(tx.Get(key)); err == nil && old.Gen == u.e.Gen && old.Name == u.e.Name {
				if err := tx.Delete(key); err != nil {
					return err
				}
			}
		}
		if scanned.IsZero() {
			return nil
		}
		return tx.Put(scannedKey, strconv.AppendInt(nil, scanned.UnixNano(), 10))
	})
	if err != nil {
		return fmt.Errorf("source/file: writing read positions: %w", err)
	}
	return nil
}

// applyIfAny applies c if it changes anything. The scan time it would also
// store may stay older: that only makes a restart read again a rotated file
// written after it was let go.
func (s *Source) applyIfAny(c stateChange) error {
	if len(c.put) == 0 && len(c.forget) == 0 {
		return nil
	}
	return s.apply(c)
}

// persistScanned is the scan time to store: the start of the last completed
// scan (s.scanned), read under mu because Commit runs on another goroutine.
func (s *Source) persistScanned() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scanned
}

// load reads the state store: the entries by key, and the stored scan time
// (zero if there is none).
func (s *Source) load() (map[fileKey]entry, time.Time, error) {
	saved := map[fileKey]entry{}
	var scanned time.Time
	err := s.store.ForEach(func(key string, val []byte) error {
		if strings.HasPrefix(key, "#") {
			if key == scannedKey {
				n, err := strconv.ParseInt(string(val), 10, 64)
				if err != nil {
					return fmt.Errorf("bad %s value %q", key, val)
				}
				scanned = time.Unix(0, n)
			}
			return nil
		}
		k, ok := parseKey(key)
		if !ok {
			return fmt.Errorf("bad key %q", key)
		}
		e, err := decodeEntry(val)
		if err != nil {
			return fmt.Errorf("bad entry for %q: %w", key, err)
		}
		saved[k] = e
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("source/file: reading state %s: %w: it is not a state file this version wrote; move it aside, and every input is read again from the start", s.store.Path(), err)
	}
	return saved, scanned, nil
}
