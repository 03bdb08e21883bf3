// Package preflight checks, without changing anything, that what a
// connector will need of the file system is there or can be made: the
// checks behind connector.Checker.
package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dir returns nil when dir is a directory this process may write into, or
// when it does not exist and could be created (its nearest existing
// ancestor is a directory it may write into). Otherwise it says why not, in
// words that name the path in the way.
func Dir(dir string) error {
	p := filepath.Clean(dir)
	for {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			if p == filepath.Clean(dir) {
				return fmt.Errorf("%s is a file, not a directory", p)
			}
			return fmt.Errorf("%s cannot be created: %s is a file, not a directory", dir, p)
		case err == nil:
			if unix.Access(p, unix.W_OK|unix.X_OK) != nil {
				if p == filepath.Clean(dir) {
					return fmt.Errorf("%s is not writable by this process", p)
				}
				return fmt.Errorf("%s cannot be created: %s is not writable by this process", dir, p)
			}
			return nil
		// ENOTDIR: a file is in the way higher up, which the walk finds.
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR):
			return fmt.Errorf("%s cannot be used: %v", dir, errors.Unwrap(err))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

// File returns nil when path is a regular file this process may read.
func File(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s cannot be read: %v", path, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s cannot be read: %v", path, errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	return nil
}
