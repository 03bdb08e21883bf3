package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// birthTime returns the file's birth time in nanoseconds (APFS and HFS+
// record it), or 0 when fstat cannot say.
func birthTime(fd *os.File) int64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(fd.Fd()), &st); err != nil {
		return 0
	}
	return st.Btim.Sec*1e9 + st.Btim.Nsec
}
