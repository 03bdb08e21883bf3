// Package proc reads what the benchmark commands report of a process.
package proc

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RSSMB is this process's resident set size now, in MiB, from
// /proc/self/statm; 0 where that cannot be read.
func RSSMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}

// Peak samples another process's VmHWM, the peak of its resident set, from
// /proc/PID/status every 10 ms, from Watch until Stop. The rusage's maxrss
// that wait4 gives cannot stand in for it: a child that Go starts with
// vfork shares this process's memory until it execs, and its maxrss counts
// this process's peak resident set too (a /bin/true started by a process
// holding 100 MB reports 105 MB). Start the command, Watch its pid, Wait,
// then Stop: the peak of what the samples saw, at most 10 ms short of the
// process's end.
type Peak struct {
	pid  int
	kb   atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

// Watch starts sampling pid, a process started (and so exec'd: exec.Cmd's
// Start returns after the exec) and not yet waited for.
func Watch(pid int) *Peak {
	p := &Peak{pid: pid, done: make(chan struct{})}
	p.Sample()
	p.wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.Sample()
			}
		}
	})
	return p
}

// Sample takes one sample now (before a signal that ends the process, say);
// a process that has ended (or has no memory left to show, as a zombie)
// leaves the peak as it was.
func (p *Peak) Sample() {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		return
	}
	kb, ok := vmHWM(string(b))
	// The sampling goroutine and a caller's Sample may race: keep the
	// larger, whichever stores last.
	for ok {
		old := p.kb.Load()
		if kb <= old || p.kb.CompareAndSwap(old, kb) {
			break
		}
	}
}

// vmHWM reads the VmHWM line of a /proc/PID/status text, in kB.
func vmHWM(status string) (int64, bool) {
	for line := range strings.Lines(status) {
		v, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		return kb, err == nil
	}
	return 0, false
}

// Stop ends the sampling and returns the peak seen, in MiB.
func (p *Peak) Stop() float64 {
	close(p.done)
	p.wg.Wait()
	return float64(p.kb.Load()) / 1024
}
