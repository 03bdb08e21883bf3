//go:build !unix

package file

import (
	"errors"
	"os"
)

// canLock is false here: without flock a sink cannot tell a live run from a
// dead one, so it takes no run lock and removes no temporary files.
const canLock = false

func tryLock(f *os.File) (bool, error) { return false, errors.ErrUnsupported }

func unlock(f *os.File) {}
