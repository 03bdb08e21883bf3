//go:build race

package file

// raceEnabled: the race detector slows the long tests down about tenfold.
const raceEnabled = true
