//go:build !(linux && (amd64 || arm64 || riscv64 || loong64 || s390x))

package file

import "os"

// startWriteback does nothing here: this platform has no sync_file_range (or
// weir does not call it on this architecture), and seal's fsync writes the
// whole chunk.
func startWriteback(f *os.File, off, n int64) {}
