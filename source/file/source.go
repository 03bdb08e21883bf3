// Package file is weir's file source: it reads NDJSON, plain lines or CSV from
// files matched by paths and globs, once or following appends, and keeps each
// file's committed position in a state store under data_dir.
//
// Each file is a partition, named after its identity (device, inode and
// incarnation) so that a rename does not restart it. A position is the byte
// offset just after a complete line; an unterminated last line is neither
// emitted nor committed until its newline arrives.
package file

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/statestore"
	"github.com/weir-etl/weir/record"
)

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "file",
		Doc:    "reads NDJSON, lines or CSV from files and globs, once or tailing",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}

// LineError is returned by Poll for a line that cannot be read (longer than
// max_line_bytes, or a CSV row that does not parse) when on_invalid is error.
// The line's position is never committed past: the source stops before it.
type LineError struct {
	Path   string
	Offset int64 // where the line starts
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("source/file: %s: line at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Source is the file source. Build it with New.
type Source struct {
	name  string
	cfg   Config
	host  connector.Host
	log   *slog.Logger
	store *statestore.Store

	skipped atomic.Int64 // lines dropped under on_invalid: skip

	// mu guards files, byKey, order and every file's fields: Poll reads files
	// while the runtime's checkpointer goroutine calls Commit and Seek. It is
	// never held while calling the Host, whose Revoke may wait on Commit.
	mu    sync.Mutex
	files map[checkpoint.Partition]*file
	byKey map[fileKey]*file
	order []*file // polling order; changed by the polling goroutine only
	next  int

	// Used by the polling goroutine only.
	saved    map[fileKey]entry // state found at Open
	lastScan time.Time
	fields   []string // CSV scratch
}

type file struct {
	key      fileKey
	name     string // partition name
	gen      uint64
	path     string
	fd       *os.File
	fpLen    int
	fp       []byte
	meta     []record.Meta // shared by the file's records; never appended to
	lr       lineReader
	part     checkpoint.Partition
	header   []string // CSV column names
	reported int64    // End of the last batch returned
	idle     bool     // the last read found nothing new
	warned   bool     // unterminated last line reported (mode once)
}

// New returns a file source called name. cfg is validated.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{
		name:  name,
		cfg:   *cfg,
		files: map[checkpoint.Partition]*file{},
		byKey: map[fileKey]*file{},
		saved: map[fileKey]entry{},
	}, nil
}

// StatePath returns the state file of a file source called name under dataDir.
func StatePath(dataDir, name string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, name)
	return filepath.Join(dataDir, "file-source-"+safe+".db")
}

// Skipped returns how many lines were dropped under on_invalid: skip.
func (s *Source) Skipped() int64 { return s.skipped.Load() }

// Open loads the committed positions and assigns every matched file at its
// committed position, or at 0 for a file never seen or no longer the same.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	s.log = h.Logger()
	if s.log == nil {
		s.log = slog.Default()
	}
	st, err := statestore.Open(StatePath(s.cfg.DataDir, s.name), s.log)
	if err != nil {
		return fmt.Errorf("source/file: %w", err)
	}
	s.store = st
	err = st.ForEach(func(key string, val []byte) error {
		var k fileKey
		if _, err := fmt.Sscanf(key, "%d:%d", &k.Dev, &k.Ino); err != nil {
			return fmt.Errorf("bad key %q", key)
		}
		e, err := decodeEntry(val)
		if err != nil {
			return fmt.Errorf("bad entry for %q: %w", key, err)
		}
		s.saved[k] = e
		return nil
	})
	if err != nil {
		return fmt.Errorf("source/file: reading state %s: %w", st.Path(), err)
	}
	for _, p := range s.cfg.Paths {
		if m, _ := filepath.Glob(p); len(m) == 0 && s.cfg.Mode == "once" {
			s.log.Warn("source/file: path matches no file", "path", p)
		}
	}
	return s.rescan(ctx)
}

func (s *Source) glob() []string {
	var out []string
	for _, p := range s.cfg.Paths {
		m, _ := filepath.Glob(p) // patterns were checked by Validate
		out = append(out, m...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// rescan finds new, renamed, replaced, truncated and vanished files.
func (s *Source) rescan(ctx context.Context) error {
	s.lastScan = time.Now()
	seen := map[fileKey]bool{}
	var added, changed []*file
	for _, p := range s.glob() {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // vanished since the glob, or not a file
		}
		k, ok := keyOf(fi)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		s.mu.Lock()
		f := s.byKey[k]
		replaced := false
		if f != nil {
			if f.path != p { // renamed: same file, same partition
				f.path, f.meta = p, metaFor(p)
			}
			replaced = s.replaced(f)
		}
		s.mu.Unlock()
		switch {
		case f == nil:
			nf, err := s.open(p, k)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			seen[nf.key] = true
			added = append(added, nf)
		case replaced:
			changed = append(changed, f)
		}
	}
	if s.cfg.Mode == "tail" {
		// A file no longer matched (deleted, or renamed away by rotation) is
		// read to its end first, then given up.
		for _, f := range slices.Clone(s.order) {
			if !seen[f.key] && s.readToEnd(f) {
				if err := s.drop(ctx, f); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range changed {
		if err := s.restart(ctx, f); err != nil {
			return err
		}
	}
	for _, f := range added {
		s.add(f)
	}
	return nil
}

// readToEnd reports whether every complete line of f has been returned.
func (s *Source) readToEnd(f *file) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.idle {
		return true
	}
	fi, err := f.fd.Stat()
	return err == nil && f.lr.readPos() >= fi.Size() && !f.lr.buffered()
}

func metaFor(path string) []record.Meta {
	return slices.Clip([]record.Meta{{Key: "path", Value: path}})
}

// replaced reports whether f was truncated or rewritten under the same inode:
// it is shorter than what was read, or no longer starts with the fingerprinted
// bytes. Called with mu held.
func (s *Source) replaced(f *file) bool {
	fi, err := f.fd.Stat()
	if err != nil {
		return false
	}
	size := fi.Size()
	if size < f.lr.readPos() {
		return true
	}
	e := entry{FPLen: f.fpLen, FP: f.fp}
	return f.fpLen > 0 && !e.matches(f.fd, size)
}

// open opens a newly found file and decides where it starts: at its committed
// position if the state store knows it and it is still the same file, else at 0
// as a new incarnation.
func (s *Source) open(path string, k fileKey) (*file, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("source/file: %s: %w", path, err)
	}
	if k2, ok := keyOf(fi); ok {
		k = k2 // replaced between the stat and the open
	}
	f := &file{key: k, path: path, fd: fd, meta: metaFor(path)}
	f.lr = lineReader{src: fd, bufSize: s.cfg.ReadBufferBytes, maxLine: s.cfg.MaxLineBytes, skip: s.cfg.OnInvalid == "skip"}
	size := fi.Size()
	var start int64
	e, known := s.saved[k]
	switch {
	case known && size >= e.Pos && e.matches(fd, size):
		f.name, f.gen, f.fpLen, f.fp, start = e.Name, e.Gen, e.FPLen, e.FP, e.Pos
	default:
		if known {
			f.gen = e.Gen + 1
		}
		if err := s.identify(f, size); err != nil {
			fd.Close()
			return nil, err
		}
		if known {
			// Record the new incarnation before reading it, so that a crash
			// cannot bring back the old file's position for the new content.
			s.log.Info("source/file: file was truncated or replaced; reading it from the start", "path", path, "old_position", e.Pos, "size", size)
			if err := s.persist([]keyed{{k, f.entry(0)}}); err != nil {
				fd.Close()
				return nil, err
			}
		}
	}
	delete(s.saved, k)
	f.lr.reset(start)
	f.reported = start
	if s.cfg.Format == "csv" && start > 0 {
		if err := s.readHeader(f); err != nil {
			fd.Close()
			return nil, err
		}
	}
	return f, nil
}

// identify fingerprints f's first bytes and names its current incarnation.
func (s *Source) identify(f *file, size int64) error {
	f.fpLen = int(min(size, int64(s.cfg.FingerprintBytes)))
	fp, err := fingerprint(f.fd, f.fpLen)
	if err != nil {
		return fmt.Errorf("source/file: %s: %w", f.path, err)
	}
	f.fp = fp
	f.name = partitionName(f.path, f.key, f.gen)
	return nil
}

func (f *file) entry(pos int64) entry {
	return entry{Name: f.name, Gen: f.gen, Path: f.path, FPLen: f.fpLen, FP: f.fp, Pos: pos}
}

func (s *Source) add(f *file) {
	f.part = s.host.Assign(f.name, checkpoint.Position(f.reported))
	s.mu.Lock()
	s.files[f.part] = f
	s.byKey[f.key] = f
	s.order = append(s.order, f)
	s.mu.Unlock()
}

// drop gives up a file that is no longer matched, once its batches are done.
func (s *Source) drop(ctx context.Context, f *file) error {
	if err := s.host.Revoke(ctx, f.part); err != nil && ctx.Err() != nil {
		return err
	}
	s.mu.Lock()
	delete(s.files, f.part)
	delete(s.byKey, f.key)
	s.order = slices.DeleteFunc(s.order, func(g *file) bool { return g == f })
	s.mu.Unlock()
	deleted := false
	if fi, err := f.fd.Stat(); err == nil && linkCount(fi) == 0 {
		deleted = true
	}
	f.fd.Close()
	if deleted {
		// Its inode may be reused by a new file; forget the old position.
		key, gen := f.key.String(), f.gen
		return s.store.Update(func(tx statestore.Tx) error {
			if old, err := decodeEntry(tx.Get(key)); err == nil && old.Gen == gen {
				return tx.Delete(key)
			}
			return nil
		})
	}
	return nil
}

// restart starts a truncated or rewritten file again from 0 as a new
// partition, after its old partition's batches are done.
func (s *Source) restart(ctx context.Context, f *file) error {
	if err := s.host.Revoke(ctx, f.part); err != nil && ctx.Err() != nil {
		return err
	}
	s.mu.Lock()
	delete(s.files, f.part)
	f.gen++
	f.lr.reset(0)
	f.reported, f.header, f.idle, f.warned = 0, nil, false, false
	fi, err := f.fd.Stat()
	if err == nil {
		err = s.identify(f, fi.Size())
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("source/file: %s: %w", f.path, err)
	}
	s.log.Info("source/file: file was truncated or rewritten; reading it from the start", "path", f.path)
	if err := s.persist([]keyed{{f.key, f.entry(0)}}); err != nil {
		return err
	}
	f.part = s.host.Assign(f.name, 0)
	s.mu.Lock()
	s.files[f.part] = f
	s.mu.Unlock()
	return nil
}

type keyed struct {
	k fileKey
	e entry
}

// persist writes entries durably. An entry of an older incarnation than the
// stored one is ignored: a late commit of a revoked partition must not bring
// back a truncated file's old position.
func (s *Source) persist(es []keyed) error {
	err := s.store.Update(func(tx statestore.Tx) error {
		for _, u := range es {
			key := u.k.String()
			if b := tx.Get(key); b != nil {
				if old, err := decodeEntry(b); err == nil && old.Gen > u.e.Gen {
					continue
				}
			}
			if err := tx.Put(key, u.e.encode()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("source/file: committing positions: %w", err)
	}
	return nil
}

func (s *Source) readHeader(f *file) error {
	lr := lineReader{src: f.fd, bufSize: 4096, maxLine: s.cfg.MaxLineBytes}
	line, _, _, st, err := lr.next()
	if err == nil && st != lineOK {
		err = errors.New("no complete header line")
	}
	if err == nil {
		err = s.setHeader(f, line)
	}
	if err != nil {
		return fmt.Errorf("source/file: %s: reading the csv header: %w", f.path, err)
	}
	return nil
}

func (s *Source) setHeader(f *file, line []byte) error {
	line = trimCR(line)
	h, err := splitCSV(nil, line, s.cfg.CSVDelimiter[0])
	if err != nil {
		return fmt.Errorf("csv header: %w", err)
	}
	f.header = h
	return nil
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// Poll returns the next batch of the next file with unread lines. In mode once
// it returns connector.ErrEndOfInput when every file is read to its end; in
// mode tail it waits for appends, rescanning every poll_interval.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		tail := s.cfg.Mode == "tail"
		if tail && time.Since(s.lastScan) >= s.cfg.PollInterval {
			if err := s.rescan(ctx); err != nil {
				return err
			}
		}
		got, err := s.readSome(b)
		if err != nil || got {
			return err
		}
		if !tail {
			s.warnUnterminated()
			return connector.ErrEndOfInput
		}
		if d := s.cfg.PollInterval - time.Since(s.lastScan); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}

func (s *Source) readSome(b *connector.Batch) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.order)
	for i := range n {
		f := s.order[(s.next+i)%n]
		b.Reset()
		got, err := s.readBatch(f, b)
		if err != nil || got {
			s.next = (s.next + i + 1) % n
			return got, err
		}
	}
	return false, nil
}

// readBatch reads up to a batch of f's lines into b. It reports false when f
// has nothing new. Called with mu held.
func (s *Source) readBatch(f *file, b *connector.Batch) (bool, error) {
	now := time.Now()
	size := 0
	format := s.cfg.Format
loop:
	for len(b.Records) < s.cfg.BatchSize && size < s.cfg.BatchBytes {
		line, start, n, st, err := f.lr.next()
		if err != nil {
			return false, fmt.Errorf("source/file: %s: %w", f.path, err)
		}
		switch st {
		case lineNone:
			break loop
		case lineTooLong:
			if len(b.Records) > 0 || f.lr.pos() > f.reported {
				break loop // hand over what is before it first
			}
			return false, &LineError{Path: f.path, Offset: start,
				Err: fmt.Errorf("longer than max_line_bytes (%d): raise max_line_bytes or set on_invalid: skip", s.cfg.MaxLineBytes)}
		case lineSkipped:
			s.skipped.Add(1)
			s.log.Warn("source/file: dropped a line longer than max_line_bytes (on_invalid: skip)", "path", f.path, "offset", start, "bytes", n, "max_line_bytes", s.cfg.MaxLineBytes)
			continue
		}
		size += len(line) + 1
		line = trimCR(line)
		rec := record.New(line)
		switch format {
		case "ndjson":
			if len(line) == 0 {
				continue // blank lines hold no record
			}
		case "csv":
			if len(line) == 0 {
				continue
			}
			if start == 0 {
				if err := s.setHeader(f, line); err != nil {
					f.lr.unread(start)
					return false, &LineError{Path: f.path, Offset: start, Err: err}
				}
				continue
			}
			fields, err := splitCSV(s.fields[:0], line, s.cfg.CSVDelimiter[0])
			s.fields = fields
			if err == nil && len(fields) != len(f.header) {
				err = fmt.Errorf("csv row has %d fields, the header has %d", len(fields), len(f.header))
			}
			if err != nil {
				if s.cfg.OnInvalid == "skip" {
					s.skipped.Add(1)
					s.log.Warn("source/file: dropped a csv row that does not parse (on_invalid: skip)", "path", f.path, "offset", start, "error", err)
					continue
				}
				f.lr.unread(start)
				if len(b.Records) > 0 || f.lr.pos() > f.reported {
					break loop
				}
				return false, &LineError{Path: f.path, Offset: start, Err: fmt.Errorf("%w: fix the row or set on_invalid: skip", err)}
			}
			m := make(map[string]any, len(fields))
			for i, name := range f.header {
				m[name] = fields[i]
			}
			rec.SetFields(m)
		}
		rec.Origin = record.Origin{Source: s.name, Partition: f.name, Offset: start}
		rec.Meta = f.meta
		rec.Time = now
		b.Records = append(b.Records, rec)
	}
	end := f.lr.pos()
	if len(b.Records) == 0 && end == f.reported {
		f.idle = true
		return false, nil
	}
	f.idle = false
	b.Partition = f.part
	b.End = checkpoint.Position(end)
	f.reported = end
	return true, nil
}

// warnUnterminated says, once per file, that a last line without a newline
// was left unread: mode once never emits a line its writer may not have
// finished, and says so rather than dropping it silently.
func (s *Source) warnUnterminated() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.order {
		if n := f.lr.readPos() - f.lr.pos(); n > 0 && !f.warned {
			f.warned = true
			s.log.Warn("source/file: last line has no newline and was not read; append a newline to read it", "path", f.path, "offset", f.lr.pos(), "bytes", n)
		}
	}
}

// Commit durably records the positions; it returns after the state store's
// fsync. Positions of partitions given up since are ignored.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	es := make([]keyed, 0, len(commits))
	s.mu.Lock()
	for _, c := range commits {
		f := s.files[c.Partition]
		if f == nil {
			continue
		}
		s.growFingerprint(f)
		es = append(es, keyed{f.key, f.entry(int64(c.Position))})
	}
	s.mu.Unlock()
	if len(es) == 0 {
		return nil
	}
	return s.persist(es)
}

// growFingerprint extends a short fingerprint (of a file that was small when
// found) as the file grows, so that identity rests on as many bytes as
// configured. Called with mu held.
func (s *Source) growFingerprint(f *file) {
	if f.fpLen >= s.cfg.FingerprintBytes {
		return
	}
	fi, err := f.fd.Stat()
	if err != nil {
		return
	}
	n := int(min(fi.Size(), int64(s.cfg.FingerprintBytes)))
	if n <= f.fpLen {
		return
	}
	if e := (entry{FPLen: f.fpLen, FP: f.fp}); !e.matches(f.fd, fi.Size()) {
		return // rewritten: the next rescan starts a new incarnation
	}
	if fp, err := fingerprint(f.fd, n); err == nil {
		f.fpLen, f.fp = n, fp
	}
}

// Seek makes p's next batch start at pos.
func (s *Source) Seek(ctx context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[p]
	if f == nil {
		return fmt.Errorf("source/file: seek: partition %d is not assigned", p)
	}
	f.lr.reset(int64(pos))
	f.reported, f.idle, f.warned = int64(pos), false, false
	if s.cfg.Format == "csv" && pos > 0 && f.header == nil {
		return s.readHeader(f)
	}
	return nil
}

// Close closes the files and the state store.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.order {
		f.fd.Close()
	}
	s.order = nil
	if s.store != nil {
		return s.store.Close()
	}
	return nil
}
