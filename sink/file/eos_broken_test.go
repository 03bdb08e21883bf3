//go:build unsafe_eos

package file

import (
	"os"
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
)

// TestExactlyOnceBroken runs the exactly-once suite against the sink broken
// by unsafe_eos_on.go; it fails by design, so it runs only in the child
// process of TestExactlyOnceCatchesPublishingEarly.
func TestExactlyOnceBroken(t *testing.T) {
	if os.Getenv("WEIR_UNSAFE_EOS") != "1" {
		t.Skip("run by TestExactlyOnceCatchesPublishingEarly")
	}
	conformance.TestExactlyOnce(t, eosHarness("ndjson", "none"))
}

// The suite catches chunks renamed into view before their positions are
// committed: a crash between the renames and the commit leaves records no
// stored position covers, which the replay writes again; and a writer that
// the fence stops has already shown its records.
func TestExactlyOnceCatchesPublishingEarly(t *testing.T) {
	conformance.ExpectBroken(t, conformance.BrokenRun{
		Test: "TestExactlyOnceBroken",
		Env:  []string{"WEIR_UNSAFE_EOS=1"},
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/published-early", "CrashAtEveryStep/entry-written",
			"FenceOfConcurrentWriters", "FenceOfConcurrentWriters/ZombieCommitsLast", "FenceOfConcurrentWriters/ZombieCommitsFirst"},
		Says: "what the sink reports and what it holds must agree",
	})
}
