//go:build unsafe_isolate

package pipeline_test

import (
	"os"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
)

// TestIsolateBroken runs the tests of isolating failing records against the
// variant WEIR_UNSAFE_ISOLATE selects (pipeline/unsafe_isolate_on.go); it
// fails by design, so it runs only in the child processes of
// TestIsolateChecksCatchBrokenVariants.
func TestIsolateBroken(t *testing.T) {
	if os.Getenv("WEIR_UNSAFE_ISOLATE") == "" {
		t.Skip("run by TestIsolateChecksCatchBrokenVariants")
	}
	t.Run("alone", TestFailingRecordIsDeadLetteredAlone)
	if os.Getenv("WEIR_UNSAFE_ISOLATE") != "deliver" {
		// An early acknowledgement lets the source commit past the record,
		// which releases its hold: whether a PositionKeeper then stores a
		// position past it depends on when the commit comes, so the
		// exactly-once check catches this variant on some runs only. The
		// watermark check catches it on every run; nohold is exactly-once's.
		t.Run("exactly-once", TestFailingRecordIsDeadLetteredAloneExactlyOnce)
	}
	t.Run("watermark", TestIsolatedRecordHoldsTheWatermark)
	t.Run("bounded", TestEveryRecordFailingIsBounded)
}

// Each broken variant of isolate is caught, by the tests that should catch
// it and by no other.
func TestIsolateChecksCatchBrokenVariants(t *testing.T) {
	for _, v := range []struct {
		variant string
		fails   []string
		says    string
	}{
		{"whole", []string{"alone", "alone/flush_fails", "alone/write_fails", "alone/persist_fails", "exactly-once", "watermark"}, "good records dead-lettered"},
		{"nohold", []string{"exactly-once", "watermark"}, "which is not stored"},
		{"deliver", []string{"watermark"}, "in neither sink"},
		{"unbounded", []string{"bounded"}, "bounded, about 4·log2 per group"},
	} {
		t.Run(v.variant, func(t *testing.T) {
			conformance.ExpectBroken(t, conformance.BrokenRun{
				Test:  "TestIsolateBroken",
				Env:   []string{"WEIR_UNSAFE_ISOLATE=" + v.variant},
				Fails: v.fails,
				Says:  v.says,
			})
		})
	}
}
