// Package proc reads what the benchmark commands report of a process.
package proc

import (
	"os"
	"strconv"
	"strings"
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
