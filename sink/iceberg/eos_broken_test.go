//go:build unsafe_positions

package iceberg

import (
	"os"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
)

// TestExactlyOnceBroken runs the exactly-once suite against the sink broken
// by unsafe_on.go; it fails by design, so it runs only in the child process
// of TestExactlyOnceCatchesSplitPositions.
func TestExactlyOnceBroken(t *testing.T) {
	if os.Getenv("WEIR_UNSAFE_POSITIONS") != "1" {
		t.Skip("run by TestExactlyOnceCatchesSplitPositions")
	}
	conformance.TestExactlyOnce(t, eosHarness())
}

// The suite catches positions written in a snapshot of their own after the
// data's: a crash once the data's snapshot is committed and before the
// positions' leaves rows in the table that no stored position covers, which
// the replay appends again.
//
//	go test -tags unsafe_positions -run Catch ./sink/iceberg/
func TestExactlyOnceCatchesSplitPositions(t *testing.T) {
	conformance.ExpectBroken(t, conformance.BrokenRun{
		Test:  "TestExactlyOnceBroken",
		Env:   []string{"WEIR_UNSAFE_POSITIONS=1"},
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/committed", "CrashAtEveryStep/positions"},
		Says:  "what the sink reports and what it holds must agree",
	})
}
