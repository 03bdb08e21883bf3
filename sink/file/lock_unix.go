//go:build unix

package file

import (
	"os"
	"syscall"
)

// canLock reports whether this platform has flock, which the run locks and
// the cleaning of ended runs' temporary files depend on.
const canLock = true

// tryLock takes an exclusive flock on f without waiting. It reports false,
// with no error, if another open file holds the lock, in this process or
// another. The lock lasts until f is closed, or its process ends.
func tryLock(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if ferr != syscall.EINTR {
				return
			}
		}
	})
	switch {
	case err != nil:
		return false, err
	case ferr == syscall.EWOULDBLOCK:
		return false, nil
	case ferr != nil:
		return false, ferr
	}
	return true, nil
}

// unlock releases f's flock.
func unlock(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { syscall.Flock(int(fd), syscall.LOCK_UN) })
}
