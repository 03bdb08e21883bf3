//go:build unsafe_stable_names

package http_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestStableNamesAreCaught runs the conformance suite against the source
// broken to name its partitions the same in every run: the restart check
// must fail, and say why.
func TestStableNamesAreCaught(t *testing.T) {
	if os.Getenv("WEIR_UNSAFE_STABLE_NAMES") == "1" {
		t.Skip("the child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestConformance$/FailedBatchesAreReplayedAfterRestart", "-test.v")
	cmd.Env = append(os.Environ(), "WEIR_UNSAFE_STABLE_NAMES=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed a source whose partition names outlive its positions:\n%s", out)
	}
	if !strings.Contains(string(out), "as the instance before it did") {
		t.Fatalf("the suite failed for another reason:\n%s", out)
	}
}
