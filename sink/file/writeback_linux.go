//go:build linux && (amd64 || arm64 || riscv64 || loong64 || s390x)

package file

import (
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writeback of the range's
// dirty pages without waiting for it.
const syncFileRangeWrite = 2

// startWriteback asks the kernel to start writing f's bytes [off, off+n) to
// disk, without waiting. An error is ignored: the hint only saves time, and
// seal's fsync reports any failure to write.
func startWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
	})
}
