package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Temporary files of ended runs.
//
// A crash leaves the temporary files of the groups being written or waiting
// for their fsync. Each run of a sink (one Sink from Open to Close) holds an
// exclusive flock on the lock file ".weir-<run id>.lock" in its path, which
// the kernel drops when the process dies, however it dies. Open removes the
// temporary files of runs that have ended, and leaves those of live runs,
// which may be other processes writing to the same directory.

const (
	lockPrefix = ".weir-"
	lockSuffix = ".lock"
	tmpSuffix  = ".tmp"
	// runIDLen is the length of a run id, "20060102T150405-" and 8 hex digits.
	runIDLen = 24
)

// chunkExts are the extensions a chunk may have, whatever this run's format:
// an earlier run may have been configured differently.
var chunkExts = []string{".ndjson", ".ndjson.gz", ".ndjson.zst", ".parquet"}

// validRunID reports whether id is a run id as New makes them.
func validRunID(id string) bool {
	if len(id) != runIDLen {
		return false
	}
	for i := 0; i < runIDLen; i++ {
		c := id[i]
		var ok bool
		switch {
		case i == 8:
			ok = c == 'T'
		case i == 15:
			ok = c == '-'
		case i < 15:
			ok = c >= '0' && c <= '9'
		default:
			ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		}
		if !ok {
			return false
		}
	}
	return true
}

// tempRunID returns the run id in the name of a chunk's temporary file,
// "." + <template path>-<run id>-<sequence><extension> + ".tmp", and false
// for any other name.
func tempRunID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, tmpSuffix); !ok {
		return "", false
	}
	ext := false
	for _, e := range chunkExts {
		if r, ok := strings.CutSuffix(rest, e); ok {
			rest, ext = r, true
			break
		}
	}
	if !ext {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 || len(rest)-i-1 < 6 {
		return "", false
	}
	for _, c := range rest[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	// What is left is <template path>-<run id>, with a template path of one
	// character at least.
	rest = rest[:i]
	if len(rest) < runIDLen+2 || rest[len(rest)-runIDLen-1] != '-' {
		return "", false
	}
	id := rest[len(rest)-runIDLen:]
	return id, validRunID(id)
}

// lockRunID returns the run id in a lock file's name, and false for any other
// name.
func lockRunID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, lockPrefix)
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, lockSuffix); !ok {
		return "", false
	}
	return rest, validRunID(rest)
}

// lockRun creates this run's lock file in the output directory and locks it.
// Without the lock another sink's Open would take this run's temporary files
// for leftovers, so failing to take it fails Open.
//
// Another sink's cleaning may open the new file before it is locked, find it
// unlocked, judge the run dead and remove the file. The lock taken is then on
// a file no longer in the directory, so it is checked for and the file made
// again. A cleaning holds a lock only while it removes files, so a few
// retries are enough.
func (s *Sink) lockRun() error {
	if s.lock != nil {
		return nil
	}
	name := filepath.Join(s.cfg.Path, lockPrefix+s.runID+lockSuffix)
	for try := 0; ; try++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("sink/file: creating lock file: %w", err)
		}
		locked, err := tryLock(f)
		if locked && stillNamed(f, name) {
			s.lock, s.lockName = f, name
			return nil
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("sink/file: locking %s: %w", name, err)
		}
		if try == 100 {
			return fmt.Errorf("sink/file: locking %s: another process keeps it locked", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// unlockRun removes this run's lock file and releases the lock. The file goes
// first, so that no other sink finds it unlocked in between.
func (s *Sink) unlockRun() error {
	if s.lock == nil {
		return nil
	}
	err := os.Remove(s.lockName)
	s.lock.Close()
	s.lock = nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sink/file: removing lock file: %w", err)
	}
	return nil
}

// stillNamed reports whether name is the file f has open.
func stillNamed(f *os.File, name string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	ni, err := os.Lstat(name)
	return err == nil && os.SameFile(fi, ni)
}

// cleanEnded removes the temporary files, anywhere under the output
// directory, of runs that have ended, and the lock files of dead runs in it.
//
// The temporary files are listed first and their runs' lock files looked for
// afterwards. A run creates and locks its lock file before it creates any
// temporary file, and removes it only when it ends (Close), so a run whose
// temporary file was listed but whose lock file is not found afterwards has
// ended: its temporary files are leftovers (of a clean exit that could not
// remove them, of an older weir that took no lock, or of a dead run whose
// lock file another sink already removed). Looking for the lock files first
// would not be safe: a run could start, lock and create a temporary file in
// between, which would then look like a leftover.
//
// A run whose lock file can be locked is dead: its temporary files are
// removed, then its lock file, then the lock is released. One whose lock file
// cannot be locked is live, and one that cannot be told (an error other than
// a missing file) is left as if it were live.
//
// Only reading the output directory itself is an error: the sink writes its
// chunks and its lock file there, and an output directory it cannot list
// would keep every leftover forever without anyone being told, since the
// sink has no log. Anything else (an unreadable subdirectory, a file that
// cannot be removed) leaves those files in place; Describe counts the files
// that could not be removed.
func (s *Sink) cleanEnded() error {
	root, err := filepath.Abs(s.cfg.Path)
	if err == nil {
		// Physical directories, so that looking upwards for a lock file
		// follows the directories a path through a symbolic link leads to.
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return fmt.Errorf("sink/file: cleaning %s: %w", s.cfg.Path, err)
	}
	temps := map[string][]string{} // by run id
	roots := map[string]bool{}     // run ids with a lock file in root
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := e.Name()
			switch {
			case e.IsDir(): // not a symbolic link: those are not followed
				walk(filepath.Join(dir, name)) // an unreadable one is skipped
			case !e.Type().IsRegular():
				// Weir makes only regular files: leave anything else.
			default:
				if id, ok := tempRunID(name); ok && id != s.runID {
					temps[id] = append(temps[id], filepath.Join(dir, name))
				} else if id, ok := lockRunID(name); ok && dir == root && id != s.runID {
					roots[id] = true
				}
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return fmt.Errorf("sink/file: cleaning %s: %w", s.cfg.Path, err)
	}
	for id := range roots {
		if temps[id] == nil {
			temps[id] = []string{}
		}
	}
	for id, files := range temps {
		// A run's lock file is in its sink's path, which is where its
		// temporary files are or a directory above them: another sink's
		// path may lie inside this one's, or contain it.
		from := root
		if len(files) > 0 {
			from = filepath.Dir(files[0])
		}
		lock, known := findLock(from, lockPrefix+id+lockSuffix)
		switch {
		case !known:
			// Leave the run's files, as if it were live.
		case lock == "":
			s.removeTemps(files)
		default:
			s.cleanRun(lock, files)
		}
	}
	return nil
}

// findLock looks for the lock file name in dir and the directories above it.
// It returns its path, or "" if there is none, and false if that cannot be
// told (an error, or something other than a regular file by that name).
func findLock(dir, name string) (path string, known bool) {
	for {
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err == nil {
			return p, fi.Mode().IsRegular()
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		if up := filepath.Dir(dir); up != dir {
			dir = up
			continue
		}
		return "", true
	}
}

// cleanRun removes the temporary files of the run whose lock file is lock if
// that run is dead, and then the lock file.
func (s *Sink) cleanRun(lock string, files []string) {
	f, err := os.Open(lock)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed since it was found: the run has ended.
		s.removeTemps(files)
		return
	}
	if err != nil {
		return
	}
	defer f.Close()
	// A lock file that is no longer the one at its name was removed by
	// another sink's cleaning, and its name may already be a new file.
	if locked, _ := tryLock(f); !locked || !stillNamed(f, lock) {
		return
	}
	s.removeTemps(files)
	os.Remove(lock)
}

// removeTemps removes the temporary files of an ended run and counts them. A
// file already gone was removed by another sink. With exactly_once, the
// chunks of a group the run committed are renamed into view instead.
func (s *Sink) removeTemps(files []string) {
	if s.eos != nil && len(files) > 0 {
		files = s.eos.keepCommitted(files)
	}
	for _, p := range files {
		switch err := os.Remove(p); {
		case err == nil:
			s.cleaned++
		case !errors.Is(err, fs.ErrNotExist):
			s.uncleaned++
		}
	}
}
