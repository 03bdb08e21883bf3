package proc

import (
	"os/exec"
	"testing"
)

// A child's peak is its own, not the memory of the process that started it:
// this test process holds a 64 MiB buffer while it runs a small child, and
// the child's peak stays far below it (the child's rusage maxrss does not).
func TestPeakIsTheChildsOwn(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	p := Watch(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	peak := p.Stop()
	if peak <= 0 || peak >= 32 {
		t.Fatalf("peak %.1f MiB for sleep started by a process holding 64 MiB; want its own few MiB", peak)
	}
	t.Logf("sleep's peak: %.1f MiB; this process holds %d MiB", peak, len(buf)>>20)
}

func TestVMHWM(t *testing.T) {
	status := "Name:\tweir\nVmPeak:\t 1000 kB\nVmHWM:\t   33792 kB\nVmRSS:\t 1 kB\n"
	if kb, ok := vmHWM(status); !ok || kb != 33792 {
		t.Fatalf("vmHWM = %d, %v; want 33792, true", kb, ok)
	}
	if _, ok := vmHWM("Name:\tx\n"); ok {
		t.Fatal("a status without VmHWM gave a value")
	}
}
