package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// birthTime returns the file's birth time in nanoseconds, or 0 when the
// filesystem does not record it (statx's STATX_BTIME).
func birthTime(fd *os.File) int64 {
	var stx unix.Statx_t
	if err := unix.Statx(int(fd.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_BTIME, &stx); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
}
