//go:build unsafe_positions

package iceberg

import "testing"

// TestCrashPointsCatchSplitPositions runs the crash check against the sink
// broken on purpose (unsafe_on.go): its positions go in a second snapshot
// after the data's. Stopped between the two, the table holds records its
// stored position does not cover, and the check must say so.
//
//	go test -tags unsafe_positions -run TestCrashPointsCatch ./sink/iceberg/
func TestCrashPointsCatchSplitPositions(t *testing.T) {
	unsafeSplit = true
	defer func() { unsafeSplit = false }()
	v := crashAt(t, stepPositions)
	if len(v) == 0 {
		t.Fatal("the crash check found nothing wrong with positions written outside the data's snapshot")
	}
	t.Logf("caught, as it must be: %v", v[0])
}
