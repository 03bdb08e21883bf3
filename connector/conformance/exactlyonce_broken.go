package conformance

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// BrokenRun is a test of the same test binary that runs a suite against a
// connector broken in one way, and what it must make the suite say. A suite
// check that no broken connector fails proves nothing: each connector's
// deliberately broken variant (behind a build tag, in a file of its own)
// is run this way.
type BrokenRun struct {
	// Test names the test function to run (its -test.run pattern is
	// ^Test$), which runs the suite against the broken connector; it should
	// skip unless Env is set, so that an ordinary run of the package passes.
	Test string
	// Env is added to the child process's environment (KEY=value): what
	// switches the broken variant on.
	Env []string
	// Fails lists the checks that must fail, as paths below Test
	// ("CrashAtEveryStep", "CrashAtEveryStep/data"): exactly these, so that
	// each is what catches the connector.
	Fails []string
	// Says is a part of the failure's text, so that it fails for the reason
	// the check is for.
	Says string
}

// ExpectBroken runs r.Test in a child process of the test binary and fails t
// unless it fails exactly r.Fails, saying r.Says.
func ExpectBroken(t *testing.T, r BrokenRun) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+r.Test+"$", "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), r.Env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed the broken connector (%s with %v):\n%s", r.Test, r.Env, out)
	}
	failLine := regexp.MustCompile(`--- FAIL: ` + regexp.QuoteMeta(r.Test) + `/(\S+)`)
	var failed []string
	for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
		failed = append(failed, m[1])
	}
	slices.Sort(failed)
	failed = slices.Compact(failed)
	want := slices.Sorted(slices.Values(r.Fails))
	if !slices.Equal(failed, want) {
		t.Fatalf("failed checks %v, want exactly %v:\n%s", failed, want, out)
	}
	if !strings.Contains(string(out), r.Says) {
		t.Fatalf("the failure does not say %q:\n%s", r.Says, out)
	}
}
