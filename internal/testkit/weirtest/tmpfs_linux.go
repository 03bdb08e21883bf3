package weirtest

import (
	"os"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of the given size (mount's size= syntax: "64k",
// "2m") on a new directory of t's and returns it with a function that
// resizes it: a disk that fills up, and is freed, on demand. Mounting needs
// root (CI runs as root); the test is skipped otherwise.
func Tmpfs(t testing.TB, size string) (string, func(size string)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v): this test needs root with CAP_SYS_ADMIN", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir, func(size string) {
		t.Helper()
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size="+size); err != nil {
			t.Fatal(err)
		}
	}
}
