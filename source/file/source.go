// Package file is weir's file source: it reads NDJSON, plain lines or CSV from
// files matched by paths and globs, once or following appends and rotation,
// and keeps each file's committed position in a state store under data_dir.
//
// Each file is a partition, named after its identity (device, inode and
// incarnation) so that a rename does not restart it. A position is the byte
// offset just after a complete record; an unterminated last record is neither
// emitted nor committed until its newline arrives, or until the file is
// finished (mode once, or a rotated file let go).
//
// The rules for rotation, truncation and files that are gone are in
// docs/file-connectors.md; scan.go carries them out.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/statestore"
	"github.com/weir-etl/weir/record"
)

func init() {
	connector.RegisterSource(connector.SourceDef[Config]{
		Name:   "file",
		Doc:    "reads NDJSON, lines or CSV from files and globs, once or tailing (rotation included)",
		Config: NewConfig,
		Build:  func(name string, c *Config) (connector.Source, error) { return New(name, c) },
	})
}

// Reasons given to connector.Host.Skip and Host.Unread.
const (
	reasonTooLong   = "too_long"   // a record longer than max_line_bytes, on_invalid: skip
	reasonBadRecord = "bad_record" // a CSV record that does not parse, on_invalid: skip
	reasonGone      = "files_gone" // bytes of a file that was gone before they were read
	// reasonRotatedAway: bytes of a file rotation moved where weir does not
	// read (outside paths and rotated) before they were read.
	reasonRotatedAway = "rotated_away"
)

// LineError is returned by Poll for a record that cannot be read (longer than
// max_line_bytes, or a CSV record that does not parse) when on_invalid is
// error. The record's position is never committed past: the source stops
// before it.
type LineError struct {
	Path   string
	Offset int64 // where the record starts
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("source/file: %s: record at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Source is the file source. Build it with New.
type Source struct {
	name  string
	cfg   Config
	host  connector.Host
	log   *slog.Logger
	store *statestore.Store

	// mu guards files, byKey, order, scanned and every file's fields: Poll
	// reads files while the runtime's checkpointer goroutine calls Commit
	// and Seek. It is never held while calling the Host, whose Revoke may
	// wait on Commit.
	mu    sync.Mutex
	files map[connector.Partition]*file
	byKey map[fileKey]*file
	order []*file // polling order; changed by the polling goroutine only
	next  int
	// waiting are the files not named yet (see nameWaiting); polling
	// goroutine only.
	waiting []*file
	// scanned is the start of the last scan that completed: every file that
	// existed under paths then is in the state store. It is stored with every
	// change of the store (see scannedKey).
	scanned time.Time

	// storeFail and nameFail are what the polling goroutine waits out by
	// itself (see Failing): the state store refusing to record files, and
	// files whose first bytes cannot be read to name them. failMu guards
	// them; the polling goroutine, their only writer, reads them without.
	failMu              sync.Mutex
	storeFail, nameFail waitFailure

	// Used by the polling goroutine only.
	lastScan    time.Time       // start of the last scan, for poll_interval
	history     time.Time       // on a first start, its time: rotated files older are not read
	storeWarned time.Time       // when the state store's failure was last logged
	oddWarned   map[string]bool // paths matched that are not regular files, reported
	// unseenReported are the rotated files outside rotated reported by
	// noticeUnseen.
	unseenReported map[fileKey]bool
	fields         []string // CSV scratch
	// owed says that a batch was returned without claiming the source
	// caught up since the last one that did; last is the file of the last
	// batch returned. See caughtUp.
	owed bool
	last *file
}

type file struct {
	key      fileKey
	name     string   // partition name; "" until named (see identity.go), when it has no partition yet
	btime    int64    // birth time (ns), 0 if the filesystem has none
	hash     string   // of the identity prefix, once named
	prior    []string // prefix hashes of earlier incarnations
	gen      uint64
	path     string
	fd       *os.File // nil for a truncated file's old incarnation, whose bytes are gone
	fpLen    int
	fp       []byte
	meta     []record.Meta // shared by the file's records; never appended to
	lr       lineReader
	part     connector.Partition
	header   []string // CSV field names
	reported int64    // End of the last batch returned

	committed  int64 // the last position Commit made durable
	size       int64 // the file's size at the last look
	idle       bool  // the last read found nothing new
	atEnd      bool  // the last read reached the end of what the file held then
	gone       bool  // no longer under paths: read to its end, then let go
	adopted    bool  // found under rotated, unknown: read from its start
	paused     bool  // truncated, and the new incarnation could not be stored yet
	skipWarned int   // records skipped with a warning; later ones are only counted
}

// New returns a file source called name. cfg is validated.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{
		name:  name,
		cfg:   *cfg,
		files: map[connector.Partition]*file{},
		byKey: map[fileKey]*file{},
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

// StateFiles implements statestore.Keeper: `weir run --reset-state` moves
// the source's state file aside, and the source then starts as on a first
// start.
func (s *Source) StateFiles() []string { return []string{StatePath(s.cfg.DataDir, s.name)} }

// Open loads the committed positions and assigns every matched file at its
// committed position, or at 0 for a file never seen or no longer the same.
// Files known from the state store that rotation moved out of paths are
// found and read to their end (see scan). In mode once, a path that matches
// no file is a configuration error (a *connector.FieldError) unless
// allow_empty is set.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	s.log = h.Logger()
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.cfg.Mode == "once" && !s.cfg.AllowEmpty {
		if err := s.checkMatches(); err != nil {
			return err
		}
	}
	st, err := statestore.Open(StatePath(s.cfg.DataDir, s.name), statestore.Options{Log: s.log, Source: s.name})
	if err != nil {
		return fmt.Errorf("source/file: %w", err)
	}
	s.store = st
	saved, scanned, err := s.load()
	if err != nil {
		return err
	}
	s.scanned = scanned
	return s.scan(ctx, saved)
}

// checkMatches reports each path that matches no regular file, saying what
// it does match when that is not a regular file (a directory, a pipe).
func (s *Source) checkMatches() error {
	var errs []error
	for i, p := range s.cfg.Paths {
		m, _ := filepath.Glob(p) // patterns were checked by Validate
		var odd []string
		regular := false
		for _, q := range m {
			fi, err := os.Stat(q)
			switch {
			case err == nil && fi.Mode().IsRegular():
				regular = true
			case err == nil:
				odd = append(odd, fmt.Sprintf("%s is %s", q, fileKind(fi.Mode())))
			default:
				if lfi, lerr := os.Lstat(q); lerr == nil && lfi.Mode()&os.ModeSymlink != 0 {
					odd = append(odd, q+" is a symbolic link to nothing")
				}
			}
		}
		field := fmt.Sprintf("paths[%d]", i)
		switch {
		case regular:
		case len(odd) > 0 && !hasMeta(p):
			errs = append(errs, connector.Fieldf(field, "%s, not a regular file: weir reads regular files only (a position in a pipe or a device cannot be read again); name the files, e.g. %q",
				odd[0], filepath.Join(p, "*.ndjson")))
		case len(odd) > 0:
			errs = append(errs, connector.Fieldf(field, "%q matches no regular file, only what weir does not read (%s), so mode once would read nothing: fix the pattern, or set allow_empty: true if an empty input is expected",
				p, strings.Join(odd, "; ")))
		default:
			errs = append(errs, connector.Fieldf(field,
				"%q matches no file, so mode once would read nothing: fix the path, or set allow_empty: true if an empty input is expected", p))
		}
	}
	return errors.Join(errs...)
}

// hasMeta reports whether a path is a pattern rather than one name.
func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// Poll returns the next batch of the next file with unread records. In mode
// once it returns connector.ErrEndOfInput when every file is read to its end
// and the files that left paths are let go; in mode tail it waits for
// appends, scanning every poll_interval.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	tail := s.cfg.Mode == "tail"
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if tail && time.Since(s.lastScan) >= s.cfg.PollInterval {
			if err := s.scan(ctx, nil); err != nil {
				return err
			}
		}
		s.nameWaiting()
		got, err := s.readSome(b)
		if err != nil || got {
			return err
		}
		if s.caughtUp(b) {
			return nil
		}
		if !tail {
			done, err := s.letGoOnce(ctx)
			if err != nil {
				return err
			}
			if done {
				return connector.ErrEndOfInput
			}
			continue
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
		if f.paused || f.name == "" {
			continue
		}
		b.Reset()
		got, err := s.readBatch(f, b)
		if err != nil || got {
			s.next = (s.next + i + 1) % n
			if got {
				b.CaughtUp = f.atEnd && s.othersAtEnd(f)
				s.owed, s.last = !b.CaughtUp, f
			}
			return got, err
		}
	}
	return false, nil
}

// readBatch reads up to a batch of f's records into b. It reports false when
// f has nothing new. Called with mu held.
func (s *Source) readBatch(f *file, b *connector.Batch) (bool, error) {
	now := time.Now()
	size := 0
	skip := s.cfg.OnInvalid == "skip"
	f.lr.sizeHint = f.size
	f.atEnd = false
loop:
	for len(b.Records) < s.cfg.BatchSize && size < s.cfg.BatchBytes {
		raw, start, n, st, err := f.lr.next()
		if err != nil {
			return false, fmt.Errorf("source/file: %s: %w", f.path, err)
		}
		switch st {
		case lineNone:
			f.atEnd = true
			break loop
		case lineTooLong:
			if len(b.Records) > 0 || f.lr.pos() > f.reported {
				break loop // hand over what is before it first
			}
			return false, &LineError{Path: f.path, Offset: start,
				Err: fmt.Errorf("longer than max_line_bytes (%d): raise max_line_bytes or set on_invalid: skip", s.cfg.MaxLineBytes)}
		case lineSkipped:
			s.skipped(f, reasonTooLong, "dropped a record longer than max_line_bytes (on_invalid: skip)",
				"offset", start, "bytes", n, "max_line_bytes", s.cfg.MaxLineBytes)
			continue
		}
		size += len(raw) + 1
		// The record is decoded where it will lie in the batch, not built
		// aside and copied in: a record is a struct of 200 bytes and a dozen
		// pointers. One that is not kept leaves its slot empty again.
		b.Records = append(b.Records, record.Record{})
		rec := &b.Records[len(b.Records)-1]
		keep, err := s.decode(f, raw, start, rec)
		if err != nil || !keep {
			*rec = record.Record{}
			b.Records = b.Records[:len(b.Records)-1]
		}
		if err != nil {
			var bad *badRecord
			isBad := errors.As(err, &bad)
			if skip && isBad {
				s.skipped(f, reasonBadRecord, "dropped a record that does not parse (on_invalid: skip)", "offset", start, "error", err)
				continue
			}
			f.lr.unread(start)
			if len(b.Records) > 0 || f.lr.pos() > f.reported {
				break loop // hand over what is before it first
			}
			if isBad {
				err = fmt.Errorf("%w: fix the record or set on_invalid: skip", err)
			}
			return false, &LineError{Path: f.path, Offset: start, Err: err}
		}
		if !keep {
			continue
		}
		rec.SetOrigin(s.name, f.name, start)
		if rec.Meta == nil { // a dead letter brings its own (dead_letter.*)
			rec.Meta = f.meta
		}
		if rec.Time.IsZero() { // a dead letter keeps the record's time
			rec.Time = now
		}
	}
	end := f.lr.pos()
	if len(b.Records) == 0 && end == f.reported {
		f.idle = true
		return false, nil
	}
	f.idle = false
	b.Partition = f.part
	b.End = connector.Position(end)
	f.reported = end
	return true, nil
}

// skipped counts a record passed over under on_invalid: skip, with a warning
// for the first few of each file (a file of bad records must not flood the
// log; the count in the run summary and the metric is complete).
func (s *Source) skipped(f *file, reason, msg string, args ...any) {
	s.host.Skip(reason, 1)
	const warnings = 5
	if f.skipWarned < warnings {
		f.skipWarned++
		args = append([]any{"path", f.path}, args...)
		if f.skipWarned == warnings {
			args = append(args, "note", "further skipped records of this file are counted without a warning")
		}
		s.log.Warn("source/file: "+msg, args...)
	}
}

// Commit durably records the positions; it returns after the state store's
// fsync. Positions of partitions given up since are ignored. It does not
// log: a failure is returned (naming the state file and the cause, e.g. a
// full disk) and the runtime retries and reports it.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	type done struct {
		f   *file
		pos int64
	}
	es := make([]keyed, 0, len(commits))
	ds := make([]done, 0, len(commits))
	s.mu.Lock()
	for _, c := range commits {
		f := s.files[c.Partition]
		if f == nil {
			continue
		}
		s.look(f)
		es = append(es, keyed{k: f.key, e: f.entry(int64(c.Position))})
		ds = append(ds, done{f, int64(c.Position)})
	}
	s.mu.Unlock()
	if len(es) == 0 {
		return nil
	}
	if err := s.apply(stateChange{put: es}); err != nil {
		return err
	}
	s.mu.Lock()
	for _, d := range ds {
		d.f.committed = max(d.f.committed, d.pos)
	}
	s.mu.Unlock()
	return nil
}

// look refreshes f's size and extends a short fingerprint (of a file that was
// small when found) as the file grows, so that identity rests on as many
// bytes as configured. Called with mu held.
func (s *Source) look(f *file) {
	if f.fd == nil {
		return
	}
	fi, err := f.fd.Stat()
	if err != nil {
		return
	}
	f.size = fi.Size()
	if f.fpLen >= s.cfg.FingerprintBytes {
		return
	}
	n := int(min(f.size, int64(s.cfg.FingerprintBytes)))
	if n <= f.fpLen {
		return
	}
	if e := (entry{FPLen: f.fpLen, FP: f.fp}); !e.matches(f.fd, f.size) {
		return // rewritten: the next scan starts a new incarnation
	}
	if fp, err := fingerprint(f.fd, n); err == nil {
		f.fpLen, f.fp = n, fp
	}
}

func (f *file) entry(pos int64) entry {
	return entry{Name: f.name, Gen: f.gen, Path: f.path, FPLen: f.fpLen, FP: f.fp, Pos: pos, Size: max(f.size, pos), Hash: f.hash, Prior: f.prior}
}

// Seek makes p's next batch start at pos.
func (s *Source) Seek(ctx context.Context, p connector.Partition, pos connector.Position) error {
	s.mu.Lock()
	f := s.files[p]
	if f == nil {
		s.mu.Unlock()
		return fmt.Errorf("source/file: seek: partition %d is not assigned", p)
	}
	var lost int64
	var err error
	truncated := f.fd == nil // a truncated file's old incarnation
	if !truncated {
		if fi, serr := f.fd.Stat(); serr == nil && s.replaced(f, fi) {
			// Truncated since the last scan: reading it at pos would read
			// the new bytes as old ones. Nothing of it is read until the
			// next scan has started the new incarnation.
			truncated, f.paused = true, true
		}
	}
	switch {
	case truncated:
		// The old bytes are gone from the file: only what is still buffered
		// can be read again.
		if !f.lr.rewind(int64(pos)) {
			lost = f.lr.readPos() - int64(pos)
			f.lr.reset(f.lr.readPos())
			pos = connector.Position(f.lr.readPos())
		}
	default:
		f.lr.reset(int64(pos))
		if s.cfg.Format == "csv" && s.cfg.CSVHeader && pos > 0 && f.header == nil {
			err = s.readHeader(f)
		}
	}
	f.reported, f.idle, f.atEnd = int64(pos), false, false
	path := f.path
	s.mu.Unlock()
	if lost > 0 {
		s.log.Warn("source/file: bytes of a file were never read: it is gone (truncated, and a rewind asked for bytes no longer held)",
			"path", path, "position", pos, "unread_bytes", lost)
		s.host.Unread(reasonGone, lost)
	}
	return err
}

// readHeader reads a CSV file's header record, for reading to resume after
// it. Called with mu held, or before the file is shared.
func (s *Source) readHeader(f *file) error {
	if f.fd == nil {
		return fmt.Errorf("source/file: %s: the file was truncated; its csv header is gone", f.path)
	}
	lr := lineReader{src: f.fd, bufSize: 4096, maxLine: s.cfg.MaxLineBytes, csv: true, delim: s.cfg.CSVDelimiter[0]}
	raw, _, _, st, err := lr.next()
	if err == nil && st != lineOK {
		err = errors.New("no complete header record")
	}
	if err == nil {
		var fields []string
		fields, err = splitCSV(nil, bytes.TrimPrefix(raw, bom), s.cfg.CSVDelimiter[0])
		if err == nil {
			err = s.setHeader(f, fields)
		}
	}
	if err != nil {
		return fmt.Errorf("source/file: %s: reading the csv header: %w", f.path, err)
	}
	return nil
}

// Close closes the files and the state store.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.order {
		if f.fd != nil {
			f.fd.Close()
		}
	}
	s.order = nil
	if s.store != nil {
		return s.store.Close()
	}
	return nil
}
