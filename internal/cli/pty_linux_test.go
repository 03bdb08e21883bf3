package cli

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Guarantee: the live progress display is shown when stderr is a terminal.
func TestProgressOnATerminal(t *testing.T) {
	tty := openPTY(t)
	if progressTo(tty) == nil {
		t.Errorf("no progress on a terminal (%s)", tty.Name())
	}
}

// openPTY opens a pseudo-terminal and returns its terminal side.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	tty, _ := openPTYPair(t)
	return tty
}

// openPTYPair opens a pseudo-terminal and returns its terminal side and its
// controlling side, which reads what is written to the terminal.
func openPTYPair(t *testing.T) (tty, ptmx *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the terminal side: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, ptmx
}

// setWinsize makes the terminal cols columns wide.
func setWinsize(t *testing.T, f *os.File, cols int) {
	t.Helper()
	if err := unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		t.Fatalf("setting the terminal's size: %v", err)
	}
}
