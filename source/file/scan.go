package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
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
// identity once (the first path wins).
func statGlobs(globs []string) []found {
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
		if err != nil || !fi.Mode().IsRegular() {
			continue // vanished since the glob, or not a file
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

// candidates are the files where a file known from the state store may be
// after a rotation: in the directory of its last known path, and under the
// rotated globs. They are listed once per scan, when first needed.
type candidates struct {
	rotated []string
	dirs    map[string]bool
	listed  bool // rotated globs listed
	byKey   map[fileKey]found
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
	for _, m := range statGlobs(c.rotated) {
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
	gens    map[fileKey]uint64 // incarnation of a forgotten entry whose inode is seen again
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
	sc := &scanRun{start: time.Now(), claimed: map[fileKey]bool{}, gens: map[fileKey]uint64{},
		cands: candidates{rotated: s.cfg.Rotated, dirs: map[string]bool{}, byKey: map[fileKey]found{}}}
	s.lastScan = sc.start
	tail := s.cfg.Mode == "tail"

	seen := map[fileKey]bool{}
	var truncated []found
	for _, m := range statGlobs(s.cfg.Paths) {
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
	} else if len(s.cfg.Rotated) > 0 && !unsafeIgnoreRotated {
		if err := s.adoptUnseen(sc, prev); err != nil {
			sc.closeOpened()
			return err
		}
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
		if s.storeFailing.IsZero() {
			s.storeFailing = sc.start
		}
		if sc.start.Sub(s.storeWarned) >= time.Minute {
			s.storeWarned = sc.start
			s.log.Warn("source/file: cannot record files in the state store; new, rotated and truncated files wait until it can (retrying every poll_interval)",
				"error", err, "failing_since", s.storeFailing)
		}
		return nil
	}
	if !s.storeFailing.IsZero() {
		s.log.Info("source/file: the state store records files again", "failed_for", sc.start.Sub(s.storeFailing).Round(time.Millisecond))
		s.storeFailing, s.storeWarned = time.Time{}, time.Time{}
	}
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

// identify fingerprints f's first bytes and names its incarnation gen.
func (s *Source) identify(f *file, gen uint64, when time.Time) error {
	f.gen = gen
	// The file may have shrunk since its size was read (a writer truncating
	// it in rotation): the fingerprint is then of the bytes it still has.
	fp, n, err := fingerprintPrefix(f.fd, int(min(f.size, int64(s.cfg.FingerprintBytes))))
	if err != nil {
		return fmt.Errorf("source/file: %s: %w", f.path, err)
	}
	f.fpLen, f.fp = n, fp
	f.name = partitionName(f.path, f.key, gen, when)
	return nil
}

// resume sets f to go on from a stored entry.
func (s *Source) resume(f *file, e entry) error {
	f.name, f.gen, f.fpLen, f.fp = e.Name, e.Gen, e.FPLen, e.FP
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
		gen := sc.gens[m.key]
		if known {
			// Truncated or rewritten while weir was not looking: the old
			// incarnation's rest may be in a copy.
			s.log.Info("source/file: file was truncated or replaced; reading it from the start", "path", m.path, "old_position", e.Pos, "size", f.size)
			if err := s.lostIncarnation(sc, m.key, e, false, "the file was truncated or replaced in place"); err != nil {
				return err
			}
			gen = e.Gen + 1
		}
		if err := s.identify(f, gen, sc.start); err != nil {
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
	if unsafeIgnoreRotated {
		sc.change.forget = append(sc.change.forget, keyed{k: k, e: e})
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
			sc.gens[k] = e.Gen + 1
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
	return s.lostIncarnation(sc, k, e, true, "no file with its identity is in its directory or under rotated")
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
	gen := old.gen
	s.mu.Unlock()
	cur := &file{key: m.key, path: m.path, fd: old.fd, meta: metaFor(m.path), size: m.fi.Size()}
	cur.lr = old.lr
	cur.lr.buf, cur.lr.shared = nil, false
	cur.lr.verify = func(end int64) bool { return s.stillSame(cur, end) }
	if err := s.identify(cur, gen+1, sc.start); err != nil {
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
		entryOld := entry{Name: old.name, Gen: gen, Path: cp.path, FPLen: e.FPLen, FP: e.FP, Pos: committed, Size: cp.size}
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
		if err := s.identify(f, sc.gens[m.key], sc.start); err != nil {
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
func inRotated(globs []string, path string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, path); ok {
			return true
		}
	}
	return false
}

func (s *Source) reportUnread(u unreadNote) {
	if u.n <= 0 {
		s.log.Info("source/file: a file read to its committed end is gone; forgetting it", "path", u.path)
		return
	}
	s.host.Unread(reasonGone, u.n)
	s.log.Warn("source/file: bytes of a file were never read: it is gone ("+u.why+")",
		"path", u.path, "position", u.pos, "unread_bytes", u.n)
}

// add starts reading f as a partition.
func (s *Source) add(f *file) {
	f.part = s.host.Assign(f.name, checkpoint.Position(f.reported))
	s.mu.Lock()
	s.files[f.part] = f
	s.byKey[f.key] = f
	s.order = append(s.order, f)
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
			if f.lr.readPos() < f.size {
				continue // more to read
			}
		}
		if !f.lr.final {
			if f.fd != nil && (mtime.After(start.Add(-s.cfg.RotateWait)) || !mtime.Before(prev.Add(-mtimeSlack))) {
				continue // may still be written
			}
			f.lr.final, f.idle, f.atEnd = true, false, false
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
	parts := make([]checkpoint.Partition, len(fs))
	for i, f := range fs {
		parts[i] = f.part
	}
	if err := s.host.Revoke(ctx, parts...); err != nil && ctx.Err() != nil {
		return 0, ctx.Err() // shutting down: a restart finds them again
	}
	var forget []keyed
	var again []*file
	var lost []unreadNote
	s.mu.Lock()
	for _, f := range fs {
		delete(s.files, f.part)
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
		p := s.host.Assign(f.name, checkpoint.Position(f.committed))
		s.mu.Lock()
		f.part = p
		s.files[p] = f
		s.mu.Unlock()
	}
	return len(again), nil
}
