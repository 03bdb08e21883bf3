//go:build integration && unsafe_eos

package postgres_test

import (
	"testing"

	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/internal/testkit/pgtest"
)

// The suite catches rows committed without their positions: a crash between
// the two transactions leaves rows no stored position covers, which the
// replay writes again.
func TestExactlyOnceCatchesSplitPositions(t *testing.T) {
	pgtest.URL(t)
	conformance.ExpectBroken(t, conformance.BrokenRun{
		Test:  "TestExactlyOnceBroken",
		Env:   []string{"WEIR_UNSAFE_EOS=1"},
		Fails: []string{"CrashAtEveryStep", "CrashAtEveryStep/rows-committed"},
		Says:  "what the sink reports and what it holds must agree",
	})
}
