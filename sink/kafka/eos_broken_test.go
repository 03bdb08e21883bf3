//go:build unsafe_eos

package kafka

import (
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
)

// The suite catches records committed without their positions: a crash
// between the two transactions leaves committed records no stored position
// covers, which the replay writes again; and a writer the fence stops has
// already committed its records.
func TestExactlyOnceCatchesSplitTransactions(t *testing.T) {
	conformance.ExpectBroken(t, conformance.BrokenRun{
		Test: "TestExactlyOnceBroken",
		Env:  []string{"WEIR_UNSAFE_EOS=1"},
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/data-committed", "CrashAtEveryStep/acknowledged", "CrashAtEveryStep/fence-checked",
			"FenceOfConcurrentWriters", "FenceOfConcurrentWriters/ZombieCommitsLast", "FenceOfConcurrentWriters/ZombieCommitsFirst"},
		Says: "what the sink reports and what it holds must agree",
	})
}
