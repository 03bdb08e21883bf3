package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// mtimeSlack is how much earlier than the write a file's modification time
// may read: the kernel stamps files from a coarse clock (a few milliseconds),
// and some filesystems round further. A file is taken for unchanged since a
// moment only if its time is this much before it.
const mtimeSlack = time.Second

// found is a regular file that a glob or a directory listing found.
type found struct {
	path string
	key  fileKey
	fi   os.FileInfo
}

// statGlobs returns the regular files the globs match, sorted by path, each
// identity once (the first path wins). What they match that is not a
// regular file (a directory, a named pipe, a dangling symbolic link) is
// passed to odd, which the source reports: weir reads regular files only,
// since a position in a pipe or a device cannot be read again.
func statGlobs(globs []string, odd func(path, kind string)) []found {
	var paths []string
	for _, g := range globs {
		m, _ := filepath.Glob(g) // patterns were checked by Validate
		paths = append(paths, m...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	out := make([]found, 0, len(paths))
	seen := map[fileKey]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			if lfi, lerr := os.Lstat(p); lerr == nil && lfi.Mode()&os.ModeSymlink != 0 && odd != nil {
				odd(p, "a symbolic link to nothing")
			}
			continue // vanished since the glob
		}
		if !fi.Mode().IsRegular() {
			if odd != nil {
				odd(p, fileKind(fi.Mode()))
			}
			continue
		}
		k, ok := keyOf(fi)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, found{p, k, fi})
	}
	return out
}

// fileKind names what a mode that is not a regular file's is, for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// oddFile reports, once per path and run, a path the globs match that is not
// a regular file and is therefore not read. Polling goroutine only.
func (s *Source) oddFile(path, kind string) {
	if s.oddWarned == nil {
		s.oddWarned = map[string]bool{}
	}
	if s.oddWarned[path] {
		return
	}
	s.oddWarned[path] = true
	s.log.Warn("source/file: a path the globs match is not a regular file and is not read (weir reads regular files only: a position in a pipe or a device cannot be read again)",
		"path", path, "is", kind)
}

// candidates are the files where a file known from the state store may be
// after a rotation: in the directory of its last known path, and under the
// rotated globs. They are listed once per scan, when first needed.
type candidates struct {
	rotated []string
	odd     func(path, kind string)
	dirs    map[string]bool
	listed  bool // rotated globs listed
	byKey   map[fileKey]found
	// near holds the files of the directories around known files' paths
	// (see elsewhere), listed once per scan and directory, when needed.
	near     map[fileKey]found
	nearDone map[string]bool
}

// The bounds of the search of elsewhere: a rotation moves a file nearby, and
// a scan must not walk a whole filesystem.
const (
	nearDirs    = 64    // directories listed per known path
	nearEntries = 20000 // entries read per directory
)

// elsewhere looks for the file k, last seen at e.Path with e's first bytes,
// near that path: in the directories below its directory, beside it, and
// below those (where logrotate's olddir usually is), on its device. A
// rotation into a directory the configuration does not name moved it
// there.
func (c *candidates) elsewhere(k fileKey, e entry) (found, bool) {
	dir := filepath.Dir(e.Path)
	if !c.nearDone[dir] {
		if c.nearDone == nil {
			c.nearDone, c.near = map[string]bool{}, map[fileKey]found{}
		}
		c.nearDone[dir] = true
		c.listNear(dir, k.Dev)
	}
	m, ok := c.near[k]
	if !ok {
		return found{}, false
	}
	fd, err := os.Open(m.path)
	if err != nil {
		return found{}, false
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return found{}, false
	}
	if got, ok := keyOf(fi); !ok || got != k || fi.Size() < e.Pos || !e.matches(fd, fi.Size()) {
		return found{}, false // another file now, or truncated
	}
	m.fi = fi
	return m, true
}

// listNear lists the regular files of the directories near dir on device
// dev (see elsewhere) into c.near, nearest first and within the bounds
// above: dir and its subdirectories, its parent, and the parent's other
// subdirectories with theirs. Symbolic links are not followed.
func (c *candidates) listNear(dir string, dev uint64) {
	budget := nearDirs
	list := func(d string) (subdirs []string) {
		if budget == 0 {
			return nil
		}
		budget--
		fd, err := os.Open(d)
		if err != nil {
			return nil
		}
		defer fd.Close()
		if fi, err := fd.Stat(); err != nil || !sameDevice(fi, dev) {
			return nil
		}
		ents, _ := fd.ReadDir(nearEntries)
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			switch {
			case e.IsDir():
				subdirs = append(subdirs, p)
			case e.Type().IsRegular():
				if fi, err := e.Info(); err == nil {
					if k, ok := keyOf(fi); ok {
						if _, dup := c.near[k]; !dup {
							c.near[k] = found{p, k, fi}
						}
					}
				}
			}
		}
		slices.Sort(subdirs)
		return subdirs
	}
	for _, sub := range list(dir) {
		list(sub)
	}
	parent := filepath.Dir(dir)
	if parent == dir {
		return
	}
	for _, sib := range list(parent) {
		if sib == dir {
			continue
		}
		for _, sub := range list(sib) {
			list(sub)
		}
	}
}

func sameDevice(fi os.FileInfo, dev uint64) bool {
	k, ok := keyOf(fi)
	return ok && k.Dev == dev
}

func (c *candidates) addDir(dir string) {
	if c.dirs[dir] {
		return
	}
	c.dirs[dir] = true
	ents, err := os.ReadDir(dir)
	if err != nil {
		return // the directory is gone too
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if k, ok := keyOf(fi); ok {
			c.put(found{filepath.Join(dir, e.Name()), k, fi})
		}
	}
}

func (c *candidates) addRotated() {
	if c.listed {
		return
	}
	c.listed = true
	for _, m := range statGlobs(c.rotated, c.odd) {
		c.put(m)
	}
}

func (c *candidates) put(m found) {
	if old, ok := c.byKey[m.key]; !ok || m.path < old.path {
		c.byKey[m.key] = m
	}
}

// around lists the candidates for a file last seen at path, sorted by path.
func (c *candidates) around(path string) []found {
	c.addDir(filepath.Dir(path))
	c.addRotated()
	out := make([]found, 0, len(c.byKey))
	for _, m := range c.byKey {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b found) int {
		if a.path < b.path {
			return -1
		}
		if a.path > b.path {
			return 1
		}
		return 0
	})
	return out
}

// scanRun is what one scan decides; nothing is changed in memory until the
// state store holds it.
type scanRun struct {
	start   time.Time
	change  stateChange
	adds    []*file // to assign: new, resumed and adopted files
	swaps   []swap  // truncated files
	claimed map[fileKey]bool
	cands   candidates
	gens    map[fileKey]uint64   // incarnation of a forgotten entry whose inode is seen again
	priors  map[fileKey][]string // and its earlier prefix hashes
	// rotated are the directories where this scan saw a rotation: a known
	// file left paths or was truncated there (see noticeUnseen).
	rotated map[string]bool
	unread  []unreadNote
	opened  []*os.File // to close if the store refuses the change
}

// swap ends a truncated file's old incarnation: it goes on in its copy (a
// copytruncate rotation) if there is one, and cur is the new incarnation.
type swap struct {
	old, cur *file
	copy     *found
	copyFd   *os.File
}

type unreadNote struct {
	path, why string
	pos, n    int64
	// reason is Host.Unread's (reasonGone when empty).
	reason string
	// msg replaces the warning's message, for bytes unread although the
	// file is not gone (a rotation weir cannot follow).
	msg string
	// args are added to the warning.
	args []any
	// unknown says that more may have been written than n counts (a file
	// weir was following, gone while weir was stopped): it is warned about
	// even when n is 0.
	unknown bool
}

// scan looks at the files and carries out the rules of rotation (see
// docs/file-connectors.md):
//
//   - every file under paths is read; a file known from the state store
//     resumes at its committed position if it is still the same file
//     (device, inode and fingerprint), else it is a new incarnation from 0;
//   - at Open (saved holds the entries not yet resolved), a known file that
//     is no longer under paths is looked for by identity in the directory of
//     its last path and under the rotated globs, and read to its end;
//   - a known file truncated or rewritten (copytruncate) goes on in its copy,
//     found by its fingerprint in the same places;
//   - a known file found nowhere is gone: the bytes after its committed
//     position, up to its size when last seen, are counted as unread;
//   - a file under the rotated globs that the store does not know and that
//     changed after the last completed scan began is a generation weir never
//     saw (rotated away before a scan found it): read from its start;
//   - in mode tail, a file that leaves paths is read to its end, and let go
//     once it has not changed for rotate_wait (letGoTail).
//
// Every file read is in the state store before its first batch, and the
// store records when the scan began, which is what makes the last rule
// sound across restarts.
func (s *Source) scan(ctx context.Context, saved map[fileKey]entry) error {
	opening := saved != nil
	prev := s.scanned // polling goroutine: the only writer
	sc := &scanRun{start: time.Now(), claimed: map[fileKey]bool{}, gens: map[fileKey]uint64{}, priors: map[fileKey][]string{}, rotated: map[string]bool{},
		cands: candidates{rotated: s.cfg.Rotated, odd: s.oddFile, dirs: map[string]bool{}, byKey: map[fileKey]found{}}}
	s.lastScan = sc.start
	tail := s.cfg.Mode == "tail"

	seen := map[fileKey]bool{}
	var truncated []found
	live := statGlobs(s.cfg.Paths, s.oddFile)
	for _, m := range live {
		seen[m.key] = true
		s.mu.Lock()
		f := s.byKey[m.key]
		if f != nil {
			if f.path != m.path { // renamed: same file, same partition
				f.path, f.meta = m.path, metaFor(m.path)
			}
			f.gone, f.paused = false, false
			if s.replaced(f, m.fi) {
				truncated = append(truncated, m)
			} else {
				s.look(f)
			}
		}
		s.mu.Unlock()
		if f != nil {
			continue
		}
		e, known := saved[m.key]
		delete(saved, m.key)
		if err := s.openLive(sc, m, e, known); err != nil {
			sc.closeOpened()
			return err
		}
	}
	if opening {
		keys := make([]fileKey, 0, len(saved))
		for k := range saved {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b fileKey) int {
			if saved[a].Path < saved[b].Path {
				return -1
			}
			if saved[a].Path > saved[b].Path {
				return 1
			}
			return 0
		})
		for _, k := range keys {
			if err := s.findMoved(sc, k, saved[k]); err != nil {
				sc.closeOpened()
				return err
			}
		}
	}
	if tail {
		s.mu.Lock()
		for _, f := range s.order {
			if !seen[f.key] && !f.gone {
				f.gone = true
				sc.rotated[filepath.Dir(f.path)] = true
				s.log.Info("source/file: file left paths (rotated, renamed or deleted); reading it to its end", "path", f.path)
			}
		}
		s.mu.Unlock()
		for _, m := range truncated {
			if err := s.planTruncated(sc, m); err != nil {
				sc.closeOpened()
				return err
			}
		}
	}
	if prev.IsZero() {
		// A first start (or a store from before scan times were kept): what
		// is under rotated now is history, and stays so.
		s.history = sc.start
		s.mu.Lock()
		s.scanned = sc.start // stored with this scan's files
		s.mu.Unlock()
	} else {
		if len(s.cfg.Rotated) > 0 && !unsafeIgnoreRotated {
			if err := s.adoptUnseen(sc, prev); err != nil {
				sc.closeOpened()
				return err
			}
		}
		s.noticeUnseen(sc, live, prev)
	}

	if err := s.applyIfAny(sc.change); err != nil {
		sc.closeOpened()
		if opening {
			return err
		}
		// Nothing of this scan happened; the next one tries again, and the
		// files already read go on. Say so, once a minute at most.
		s.mu.Lock()
		for _, w := range sc.swaps {
			w.old.paused = true // its file now holds other bytes: wait
		}
		s.mu.Unlock()
		s.storeFailed(sc.start, err)
		return nil
	}
	s.storeWorks(sc.start)
	for _, u := range sc.unread {
		s.reportUnread(u)
	}
	for _, w := range sc.swaps {
		s.doSwap(w)
	}
	for _, f := range sc.adds {
		s.add(f)
	}
	s.mu.Lock()
	s.scanned = sc.start
	s.mu.Unlock()
	if tail && !opening {
		// Not from Open: letting go revokes, which needs the running
		// pipeline. The first Poll's scan comes soon enough.
		return s.letGoTail(ctx, sc.start, prev)
	}
	return nil
}

func (sc *scanRun) closeOpened() {
	for _, fd := range sc.opened {
		fd.Close()
	}
}

// openFile opens a found file for reading, or returns nil if it is no longer
// the file found (replaced or gone since).
func (s *Source) openFile(sc *scanRun, m found) (*file, error) {
	fd, err := os.Open(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("source/file: %s: %w", m.path, err)
	}
	fi, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("source/file: %s: %w", m.path, err)
	}
	if k, ok := keyOf(fi); !ok || k != m.key {
		fd.Close()
		return nil, nil // replaced since it was found: the next scan sees the new one
	}
	sc.opened = append(sc.opened, fd)
	f := &file{key: m.key, path: m.path, fd: fd, meta: metaFor(m.path), size: fi.Size()}
	f.lr = lineReader{src: fd, bufSize: s.cfg.ReadBufferBytes, maxLine: s.cfg.MaxLineBytes, skip: s.cfg.OnInvalid == "skip",
		csv: formats[s.cfg.Format] == framingCSV, delim: s.cfg.CSVDelimiter[0], final: s.cfg.Mode == "once"}
	if s.cfg.Mode == "tail" {
		f.lr.verify = func(end int64) bool { return s.stillSame(f, end) }
	}
	return f, nil
}

// stillSame reports whether f's file still holds the bytes read from it up to
// end: it is at least that long and begins with the fingerprinted bytes. A
// file truncated and written again between two scans would otherwise have its
// new bytes read as the old ones at the old offsets; checked after each read,
// the bytes read are the old ones if the beginning is still old. Called with
// mu held, from a read.
func (s *Source) stillSame(f *file, end int64) bool {
	if f.fd == nil {
		return true
	}
	fi, err := f.fd.Stat()
	if err != nil || fi.Size() < end {
		return false
	}
	e := entry{FPLen: f.fpLen, FP: f.fp}
	return e.matches(f.fd, fi.Size())
}

func metaFor(path string) []record.Meta {
	return slices.Clip([]record.Meta{{Key: "path", Value: path}})
}

// identify fingerprints f's first bytes, makes it incarnation gen (prior
// holds the prefix hashes of the file's earlier incarnations) and names it
// if its identity prefix is there (see identity.go).
func (s *Source) identify(f *file, gen uint64, prior []string) error {
	f.gen, f.prior = gen, prior
	// The file may have shrunk since its size was read (a writer truncating
	// it in rotation): the fingerprint is then of the bytes it still has.
	fp, n, err := fingerprintPrefix(f.fd, int(min(f.size, int64(s.cfg.FingerprintBytes))))
	if err != nil {
		return fmt.Errorf("source/file: %s: %w", f.path, err)
	}
	f.fpLen, f.fp = n, fp
	f.name, f.hash = "", ""
	return s.tryName(f)
}

// tryName names f if its identity prefix is there, or it is finished. It
// leaves f unnamed otherwise, and when its bytes are gone (a truncated
// file's old incarnation). Called with mu held, or before f is shared.
func (s *Source) tryName(f *file) error {
	if f.name != "" || f.fd == nil {
		return nil
	}
	if f.btime == 0 {
		f.btime = birthTime(f.fd)
	}
	limit := s.cfg.FingerprintBytes
	buf := make([]byte, limit)
	got, err := f.fd.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("source/file: %s: reading its first bytes: %w", f.path, err)
	}
	lines := 1
	if s.cfg.Format == "csv" && s.cfg.CSVHeader {
		lines = 2 // the header and the first record
	}
	prefix, ok := identityPrefix(buf[:got], limit, lines, s.cfg.Format == "lines", f.lr.final)
	if !ok {
		return nil
	}
	f.name, f.hash = nameOf(f.key, f.btime, prefix, f.gen, f.prior)
	return nil
}

// storeFailed notes that the state store refused to record files at now:
// they wait. Logged once a minute at most. Polling goroutine.
func (s *Source) storeFailed(now time.Time, err error) {
	s.failMu.Lock()
	f := s.storeFail.fail(now, err)
	s.failMu.Unlock()
	if now.Sub(s.storeWarned) >= time.Minute {
		s.storeWarned = now
		s.log.Warn("source/file: cannot record files in the state store; new, rotated and truncated files wait until it can (retrying)",
			"error", err, "attempts", f.attempts, "failing_since", f.since)
	}
}

// storeWorks notes that the state store recorded files at now. Polling
// goroutine.
func (s *Source) storeWorks(now time.Time) {
	s.failMu.Lock()
	f := s.storeFail.end()
	s.failMu.Unlock()
	if f.attempts > 0 {
		s.log.Info("source/file: the state store records files again", "failed_for", now.Sub(f.since).Round(time.Millisecond), "attempts", f.attempts)
		s.storeWarned = time.Time{}
	}
}

// nameWaiting names the files that were not named when found, once their
// identity prefix is there, records the names in the state store and
// assigns their partitions. A store that cannot record them leaves them
// waiting (unnamed, unread) for the next try. Polling goroutine.
func (s *Source) nameWaiting() {
	// nameFail is written by this goroutine alone: read here without failMu.
	if len(s.waiting) == 0 && s.nameFail.attempts == 0 {
		return
	}
	var named []*file
	var change stateChange
	var unreadable error
	now := time.Now()
	s.mu.Lock()
	left := s.waiting[:0]
	for _, f := range s.waiting {
		if s.byKey[f.key] != f || f.name != "" {
			continue // let go, or replaced
		}
		if err := s.tryName(f); err != nil && unreadable == nil {
			unreadable = err
		}
		if f.name == "" {
			left = append(left, f)
			continue
		}
		named = append(named, f)
		change.put = append(change.put, keyed{k: f.key, e: f.entry(f.committed)})
	}
	s.waiting = left
	s.mu.Unlock()
	// Logged when it begins and then at doubling counts: once a read would
	// flood the log with a file that stays unreadable.
	var failed, ended waitFailure
	s.failMu.Lock()
	if unreadable != nil {
		failed = s.nameFail.fail(now, unreadable)
	} else {
		ended = s.nameFail.end()
	}
	s.failMu.Unlock()
	if n := failed.attempts; n&(n-1) == 0 && n > 0 {
		s.log.Warn("source/file: cannot read the first bytes of a file to name it; it waits unread and is tried again at every read",
			"error", unreadable, "attempts", n, "failing_since", failed.since)
	}
	if ended.attempts > 0 {
		s.log.Info("source/file: every file waiting to be named could be read again", "failed_for", now.Sub(ended.since).Round(time.Millisecond))
	}
	if len(named) == 0 {
		return
	}
	if err := s.apply(change); err != nil {
		s.mu.Lock()
		for _, f := range named {
			f.name, f.hash = "", ""
		}
		s.waiting = append(s.waiting, named...)
		s.mu.Unlock()
		s.storeFailed(now, err)
		return
	}
	s.storeWorks(now)
	for _, f := range named {
		s.assign(f)
	}
}

// resume sets f to go on from a stored entry.
func (s *Source) resume(f *file, e entry) error {
	f.name, f.gen, f.fpLen, f.fp, f.hash, f.prior = e.Name, e.Gen, e.FPLen, e.FP, e.Hash, e.Prior
	s.startAt(f, e.Pos)
	if s.cfg.Format == "csv" && s.cfg.CSVHeader && e.Pos > 0 {
		return s.readHeader(f)
	}
	return nil
}

func (s *Source) startAt(f *file, pos int64) {
	f.lr.reset(pos)
	f.reported, f.committed = pos, pos
}

// openLive opens a file found under paths that is not being read: known from
// the store (e) or new.
func (s *Source) openLive(sc *scanRun, m found, e entry, known bool) error {
	f, err := s.openFile(sc, m)
	if f == nil || err != nil {
		return err
	}
	if known && f.size >= e.Pos && e.matches(f.fd, f.size) {
		if err := s.resume(f, e); err != nil {
			return err
		}
	} else {
		gen, prior := sc.gens[m.key], sc.priors[m.key]
		if known {
			sc.rotated[filepath.Dir(m.path)] = true
			// Truncated or rewritten while weir was not looking: the old
			// incarnation's rest may be in a copy.
			s.log.Info("source/file: file was truncated or replaced; reading it from the start", "path", m.path, "old_position", e.Pos, "size", f.size)
			if err := s.lostIncarnation(sc, m.key, e, false, "the file was truncated or replaced in place"); err != nil {
				return err
			}
			gen, prior = e.Gen+1, addPrior(e.Prior, e.Hash)
		}
		if err := s.identify(f, gen, prior); err != nil {
			return err
		}
		s.startAt(f, 0)
	}
	sc.claimed[m.key] = true
	sc.change.put = append(sc.change.put, keyed{k: f.key, e: f.entry(f.committed)})
	sc.adds = append(sc.adds, f)
	return nil
}

// findMoved looks for a known file that is no longer under paths where
// rotation puts files, by identity; then, if it was truncated, for its copy.
func (s *Source) findMoved(sc *scanRun, k fileKey, e entry) error {
	sc.rotated[filepath.Dir(e.Path)] = true
	if unsafeForgetMoved(sc, k, e) {
		return nil
	}
	for _, m := range sc.cands.around(e.Path) {
		if m.key != k || sc.claimed[k] || s.tracked(k) {
			continue
		}
		f, err := s.openFile(sc, m)
		if err != nil {
			return err
		}
		if f == nil {
			break
		}
		if f.size < e.Pos || !e.matches(f.fd, f.size) {
			// The inode holds other bytes now: look for a copy of the old ones.
			f.fd.Close()
			sc.gens[k], sc.priors[k] = e.Gen+1, addPrior(e.Prior, e.Hash)
			return s.lostIncarnation(sc, k, e, true, "the file was truncated or replaced in place")
		}
		if err := s.resume(f, e); err != nil {
			return err
		}
		f.gone = true
		sc.claimed[k] = true
		sc.change.put = append(sc.change.put, keyed{k: k, e: f.entry(e.Pos)})
		sc.adds = append(sc.adds, f)
		s.log.Info("source/file: found a known file under another name; reading it to its end", "path", m.path, "was", e.Path, "position", e.Pos)
		return nil
	}
	return s.gone(sc, k, e)
}

// gone deals with a known file found nowhere weir reads from: its copy
// (copytruncate) takes over if there is one. Otherwise its bytes after the
// committed position are unread. If it is found near its last path, outside
// paths and rotated (a rotation into a directory the configuration does
// not name), they are counted from its size now; it is not read, since weir
// reads only files its configuration names. If it is found nowhere, they are
// counted from its size when last seen, and for a file that was under paths
// in tail mode (one weir was following), what was written to it after that
// is unknown, which the warning says.
func (s *Source) gone(sc *scanRun, k fileKey, e entry) error {
	sc.change.forget = append(sc.change.forget, keyed{k: k, e: e})
	cp, err := s.findCopy(sc, k, e, e.Pos, true)
	if err != nil {
		return err
	}
	if cp != nil {
		if err := s.resume(cp, e); err != nil {
			return err
		}
		cp.gone = true
		sc.change.put = append(sc.change.put, keyed{k: cp.key, e: cp.entry(e.Pos), replace: true})
		sc.adds = append(sc.adds, cp)
		s.log.Info("source/file: found the copy of a truncated file (copytruncate); reading the rest there", "path", cp.path, "was", e.Path, "position", e.Pos)
		return nil
	}
	if m, ok := sc.cands.elsewhere(k, e); ok {
		sc.unread = append(sc.unread, unreadNote{path: e.Path, pos: e.Pos, n: m.fi.Size() - e.Pos, reason: reasonRotatedAway,
			msg:  "source/file: bytes of a file were never read: rotation moved it where weir does not read (outside paths and rotated); weir reads only files its configuration names, so add a rotated glob for that place",
			args: []any{"found_at", m.path, "rotated_glob", filepath.Join(filepath.Dir(m.path), "*")}})
		return nil
	}
	live := s.cfg.Mode == "tail" && inGlobs(s.cfg.Paths, e.Path)
	why := "no file with its identity is in its directory or under rotated"
	if live {
		why = "it was rotated or deleted while weir was stopped, and no file with its identity is in its directory, under rotated or near its path; what was written to it after weir last looked is unknown and not counted: if rotation moves files elsewhere, name that place in rotated"
	}
	sc.unread = append(sc.unread, unreadNote{path: e.Path, why: why, pos: e.Pos, n: e.Size - e.Pos, unknown: live})
	return nil
}

// lostIncarnation deals with a stored entry whose file no longer holds its
// bytes: its copy (copytruncate) takes over the partition from the committed
// position, or the bytes it had unread are counted as gone. forget removes
// the entry (the key is not read as a live file).
func (s *Source) lostIncarnation(sc *scanRun, k fileKey, e entry, forget bool, why string) error {
	if forget {
		sc.change.forget = append(sc.change.forget, keyed{k: k, e: e})
	}
	cp, err := s.findCopy(sc, k, e, e.Pos, true)
	if err != nil || cp == nil {
		if err == nil {
			sc.unread = append(sc.unread, unreadNote{path: e.Path, why: why, pos: e.Pos, n: e.Size - e.Pos})
		}
		return err
	}
	if err := s.resume(cp, e); err != nil {
		return err
	}
	cp.gone = true
	sc.change.put = append(sc.change.put, keyed{k: cp.key, e: cp.entry(e.Pos), replace: true})
	sc.adds = append(sc.adds, cp)
	s.log.Info("source/file: found the copy of a truncated file (copytruncate); reading the rest there", "path", cp.path, "was", e.Path, "position", e.Pos)
	return nil
}

// findCopy looks for a copy of the bytes e fingerprinted, at least from
// bytes long, among the candidates around e's path that are not being read.
// atRecord also asks that a record ends just before from, as it does at a
// committed position. A fingerprint of no bytes matches anything, so it finds
// nothing.
func (s *Source) findCopy(sc *scanRun, orig fileKey, e entry, from int64, atRecord bool) (*file, error) {
	if e.FPLen == 0 || unsafeIgnoreRotated {
		return nil, nil
	}
	for _, m := range sc.cands.around(e.Path) {
		if m.key == orig || sc.claimed[m.key] || s.tracked(m.key) || m.fi.Size() < max(from, int64(e.FPLen)) {
			continue
		}
		f, err := s.openFile(sc, m)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		ok := e.matches(f.fd, f.size)
		if ok && atRecord && from > 0 {
			b := make([]byte, 1)
			_, err := f.fd.ReadAt(b, from-1)
			ok = err == nil && b[0] == '\n'
		}
		if ok {
			sc.claimed[m.key] = true
			return f, nil
		}
		f.fd.Close()
	}
	return nil, nil
}

func (s *Source) tracked(k fileKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[k] != nil
}

// replaced reports whether f was truncated or rewritten under the same inode:
// it is shorter than what was read, or no longer starts with the fingerprinted
// bytes. Called with mu held.
func (s *Source) replaced(f *file, fi os.FileInfo) bool {
	if f.fd == nil {
		return false
	}
	size := fi.Size()
	if size < f.lr.readPos() {
		return true
	}
	e := entry{FPLen: f.fpLen, FP: f.fp}
	return f.fpLen > 0 && !e.matches(f.fd, size)
}

// planTruncated plans the end of a truncated file's incarnation (mode tail):
// a new incarnation reads the file from 0, and the old one goes on in the
// copy if there is one, or ends with the bytes it already read.
func (s *Source) planTruncated(sc *scanRun, m found) error {
	s.mu.Lock()
	old := s.byKey[m.key]
	e := entry{Path: old.path, FPLen: old.fpLen, FP: old.fp}
	from, committed := old.lr.readPos(), old.committed
	gen, prior := old.gen, addPrior(old.prior, old.hash)
	oldName, oldHash, oldPrior := old.name, old.hash, old.prior
	s.mu.Unlock()
	sc.rotated[filepath.Dir(m.path)] = true
	cur := &file{key: m.key, path: m.path, fd: old.fd, meta: metaFor(m.path), size: m.fi.Size()}
	cur.lr = old.lr
	cur.lr.buf, cur.lr.shared = nil, false
	cur.lr.verify = func(end int64) bool { return s.stillSame(cur, end) }
	if err := s.identify(cur, gen+1, prior); err != nil {
		return err
	}
	s.startAt(cur, 0)
	cur.header = nil
	w := swap{old: old, cur: cur}
	cp, err := s.findCopy(sc, m.key, e, from, false)
	if err != nil {
		return err
	}
	if cp != nil {
		w.copy, w.copyFd = &found{cp.path, cp.key, nil}, cp.fd
		entryOld := entry{Name: oldName, Gen: gen, Path: cp.path, FPLen: e.FPLen, FP: e.FP, Pos: committed, Size: cp.size, Hash: oldHash, Prior: oldPrior}
		sc.change.put = append(sc.change.put, keyed{k: cp.key, e: entryOld, replace: true})
		s.log.Info("source/file: found the copy of a truncated file (copytruncate); reading the rest there", "path", cp.path, "was", e.Path, "position", from)
	} else {
		covered := s.adoptedCopyOf(e, from)
		s.mu.Lock()
		if n := old.size - from; n > 0 && !covered {
			sc.unread = append(sc.unread, unreadNote{path: old.path, why: "the file was truncated (copytruncate?) before they were read, and no copy of it was found", pos: from, n: n})
		}
		s.mu.Unlock()
	}
	sc.claimed[m.key] = true
	sc.change.put = append(sc.change.put, keyed{k: cur.key, e: cur.entry(0)})
	sc.swaps = append(sc.swaps, w)
	s.log.Info("source/file: file was truncated or rewritten; reading it from the start", "path", m.path)
	return nil
}

// adoptedCopyOf reports whether a file being read from its start, adopted
// as a generation weir never saw, is a copy of e's bytes: a scan that ran
// between a copytruncate's copy and its truncation took the copy for one.
func (s *Source) adoptedCopyOf(e entry, from int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.order {
		if f.adopted && f.fd != nil && f.size >= from && e.matches(f.fd, f.size) {
			return true
		}
	}
	return false
}

// doSwap carries out a planned swap once the store holds it.
func (s *Source) doSwap(w swap) {
	s.mu.Lock()
	old := w.old
	if w.copy != nil {
		old.key, old.path, old.fd, old.meta = w.copy.key, w.copy.path, w.copyFd, metaFor(w.copy.path)
		old.lr.src = w.copyFd
		s.byKey[old.key] = old
		if fi, err := w.copyFd.Stat(); err == nil {
			old.size = fi.Size()
		}
	} else {
		// Its bytes are gone: it ends with what it read, the unterminated
		// rest included.
		old.fd, old.lr.src, old.lr.final = nil, nil, true
	}
	old.gone, old.idle, old.atEnd, old.paused = true, false, false, false
	delete(s.byKey, w.cur.key)
	s.mu.Unlock()
	s.add(w.cur)
}

// adoptUnseen reads, from their start, the files under the rotated globs
// that the store does not know and that changed after the last completed
// scan began (prev): generations created and rotated away while no scan
// looked.
func (s *Source) adoptUnseen(sc *scanRun, prev time.Time) error {
	sc.cands.addRotated()
	var ms []found
	for _, m := range sc.cands.byKey {
		if sc.claimed[m.key] || s.tracked(m.key) || !m.fi.Mode().IsRegular() {
			continue
		}
		if t := m.fi.ModTime(); !inRotated(s.cfg.Rotated, m.path) || t.Before(prev.Add(-mtimeSlack)) || t.Before(s.history) {
			continue
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b found) int {
		if a.path < b.path {
			return -1
		}
		if a.path > b.path {
			return 1
		}
		return 0
	})
	for _, m := range ms {
		f, err := s.openFile(sc, m)
		if err != nil {
			return err
		}
		if f == nil {
			continue
		}
		if err := s.identify(f, sc.gens[m.key], sc.priors[m.key]); err != nil {
			return err
		}
		s.startAt(f, 0)
		f.gone, f.adopted = true, true
		sc.claimed[m.key] = true
		sc.change.put = append(sc.change.put, keyed{k: f.key, e: f.entry(0)})
		sc.adds = append(sc.adds, f)
		s.log.Info("source/file: a rotated file changed after weir last looked and is not known: it is a generation weir never saw; reading it from the start",
			"path", m.path, "modified", m.fi.ModTime())
	}
	return nil
}

// inRotated reports whether a rotated glob matches path (candidates also
// hold the files of directories listed for known files).
func inRotated(globs []string, path string) bool { return inGlobs(globs, path) }

// inGlobs reports whether one of globs matches path.
func inGlobs(globs []string, path string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, path); ok {
			return true
		}
	}
	return false
}

func (s *Source) reportUnread(u unreadNote) {
	if u.n <= 0 && !u.unknown {
		s.log.Info("source/file: a file read to its committed end is gone; forgetting it", "path", u.path)
		return
	}
	reason := u.reason
	if reason == "" {
		reason = reasonGone
	}
	if u.n > 0 {
		s.host.Unread(reason, u.n)
	}
	msg := u.msg
	if msg == "" {
		msg = "source/file: bytes of a file were never read: it is gone (" + u.why + ")"
	}
	s.log.Warn(msg, append([]any{"path", u.path, "position", u.pos, "unread_bytes", max(u.n, 0)}, u.args...)...)
}

// noticeUnseen counts, with a warning, the files that rotation made and
// moved away while no scan looked, where weir does not read them: in a
// directory where this scan saw a rotation (a known file left paths or was
// truncated there), not under paths nor rotated (which adoptUnseen reads),
// named after a file under paths (app.log.1 beside app.log), and changed
// after the last completed scan began (prev). weir cannot read them
// without a rotated glob that names them; their bytes are unread. Each is
// reported once per run. Asking for a rotation in the directory keeps a file
// that merely resembles a rotated one (app.log.tmp, written by hand) from
// being counted where nothing rotates.
func (s *Source) noticeUnseen(sc *scanRun, live []found, prev time.Time) {
	bases := map[string][]string{} // directory → base names of the files under paths
	for _, m := range live {
		d := filepath.Dir(m.path)
		if !sc.rotated[d] {
			continue
		}
		bases[d] = append(bases[d], filepath.Base(m.path))
		sc.cands.addDir(d)
	}
	if len(bases) == 0 {
		return
	}
	var ms []found
	for _, m := range sc.cands.byKey {
		if sc.claimed[m.key] || s.tracked(m.key) || s.unseenReported[m.key] || m.fi.Size() == 0 ||
			inGlobs(s.cfg.Rotated, m.path) || inGlobs(s.cfg.Paths, m.path) {
			continue
		}
		if t := m.fi.ModTime(); t.Before(prev.Add(-mtimeSlack)) || t.Before(s.history) {
			continue
		}
		name := filepath.Base(m.path)
		if !slices.ContainsFunc(bases[filepath.Dir(m.path)], func(b string) bool { return len(name) > len(b) && strings.HasPrefix(name, b) }) {
			continue
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b found) int { return strings.Compare(a.path, b.path) })
	for _, m := range ms {
		if s.unseenReported == nil {
			s.unseenReported = map[fileKey]bool{}
		}
		s.unseenReported[m.key] = true
		sc.unread = append(sc.unread, unreadNote{path: m.path, n: m.fi.Size(), reason: reasonRotatedAway,
			msg:  "source/file: bytes of a file were never read: rotation made it and moved it out of paths before weir saw it (rotated twice while weir was stopped, or between two scans), and no rotated glob names it; add one that does",
			args: []any{"modified", m.fi.ModTime(), "rotated_glob", filepath.Join(filepath.Dir(m.path), name0(m.path))}})
	}
}

// name0 suggests a rotated glob for a rotated file's name: its base name up
// to the live file's extension and a star (app.log.1 → app.log.*).
func name0(path string) string {
	b := filepath.Base(path)
	if i := strings.LastIndexAny(b, ".-_"); i > 0 {
		return b[:i+1] + "*"
	}
	return b + "*"
}

// add starts reading f: as a partition, or, not named yet, as a file that
// waits for its name (nameWaiting).
func (s *Source) add(f *file) {
	s.mu.Lock()
	s.byKey[f.key] = f
	s.order = append(s.order, f)
	if f.name == "" {
		s.waiting = append(s.waiting, f)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.assign(f)
}

// assign gives a named file its partition.
func (s *Source) assign(f *file) {
	p := s.host.Assign(f.name, connector.Position(f.reported))
	s.mu.Lock()
	f.part = p
	s.files[p] = f
	s.mu.Unlock()
}

// letGoTail lets go of the files that left paths once they are read to their
// end and have not changed for rotate_wait, nor since a moment before the
// previous scan began (prev): the state store then records a scan that began
// after their last change, so that a restart does not take them for unseen
// generations. Their last record is read even without its line end first.
func (s *Source) letGoTail(ctx context.Context, start, prev time.Time) error {
	var ready []*file
	s.mu.Lock()
	for _, f := range s.order {
		if !f.gone || f.paused {
			continue
		}
		var mtime time.Time
		if f.fd != nil {
			fi, err := f.fd.Stat()
			if err != nil {
				continue
			}
			f.size, mtime = fi.Size(), fi.ModTime()
			if f.name != "" && f.lr.readPos() < f.size {
				continue // more to read
			}
		}
		if !f.lr.final {
			if f.fd != nil && (mtime.After(start.Add(-s.cfg.RotateWait)) || !mtime.Before(prev.Add(-mtimeSlack))) {
				continue // may still be written
			}
			f.lr.final, f.idle, f.atEnd = true, false, false
		}
		if f.name == "" && f.fd != nil && f.size > 0 {
			continue // finished now: it is named, and read, next
		}
		if f.lr.pending() {
			continue // the last record is read next
		}
		ready = append(ready, f)
	}
	s.mu.Unlock()
	_, err := s.letGo(ctx, ready)
	return err
}

// letGoOnce lets go, in mode once, of the files that are not under paths, all
// read to their end. It reports whether none is left to read again.
func (s *Source) letGoOnce(ctx context.Context) (bool, error) {
	var ready []*file
	s.mu.Lock()
	for _, f := range s.order {
		if f.gone {
			ready = append(ready, f)
		}
	}
	s.mu.Unlock()
	again, err := s.letGo(ctx, ready)
	return again == 0 && err == nil, err
}

// letGo revokes the files' partitions, which commits their final positions,
// and forgets them: the state store's entries, the maps, the descriptors. A
// file whose final position did not become durable (a sink failed until the
// drain deadline, or the commit failed) is assigned again at its committed
// position and read again. It returns how many.
func (s *Source) letGo(ctx context.Context, fs []*file) (int, error) {
	if len(fs) == 0 {
		return 0, nil
	}
	parts := make([]connector.Partition, 0, len(fs))
	for _, f := range fs {
		if f.name != "" { // a file never named has no partition
			parts = append(parts, f.part)
		}
	}
	if err := s.host.Revoke(ctx, parts...); err != nil && ctx.Err() != nil {
		return 0, ctx.Err() // shutting down: a restart finds them again
	}
	var forget []keyed
	var again []*file
	var lost []unreadNote
	s.mu.Lock()
	for _, f := range fs {
		if f.name != "" {
			delete(s.files, f.part)
		}
		if f.committed < f.reported && f.fd != nil {
			again = append(again, f)
			continue
		}
		if f.committed < f.reported {
			lost = append(lost, unreadNote{path: f.path, why: "the file was truncated and its rest could not be read again", pos: f.committed, n: f.reported - f.committed})
		}
		if s.byKey[f.key] == f {
			delete(s.byKey, f.key)
		}
		s.order = slices.DeleteFunc(s.order, func(g *file) bool { return g == f })
		forget = append(forget, keyed{k: f.key, e: f.entry(0)})
		if f.fd != nil {
			f.fd.Close()
			f.fd = nil
		}
		s.log.Info("source/file: rotated file read to its end; letting it go", "path", f.path, "bytes", f.reported)
	}
	s.next = 0
	s.mu.Unlock()
	for _, u := range lost {
		s.reportUnread(u)
	}
	if err := s.applyIfAny(stateChange{forget: forget}); err != nil {
		// The entries stay: a restart finds the files read to their end and
		// lets them go then.
		s.log.Warn("source/file: could not forget the files let go", "error", err)
	}
	for _, f := range again {
		s.log.Warn("source/file: the final position of a file being let go is not committed; reading it again from the committed position",
			"path", f.path, "committed", f.committed, "read", f.reported)
		s.mu.Lock()
		s.startAt(f, f.committed)
		f.idle, f.atEnd = false, false
		s.mu.Unlock()
		p := s.host.Assign(f.name, connector.Position(f.committed))
		s.mu.Lock()
		f.part = p
		s.files[p] = f
		s.mu.Unlock()
	}
	return len(again), nil
}
