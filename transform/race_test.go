//go:build race

package transform

// raceEnabled: under the race detector sync.Pool drops what is put back at
// random, so an env is sometimes allocated anew and allocation counts do not
// hold.
const raceEnabled = true
