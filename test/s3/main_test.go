//go:build integration

package s3

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

var ctx = context.Background()

// bins holds the binaries built for the tests, one per set of build tags:
// the tests share them.
var bins weirtest.Binaries

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// full reports whether the full sizes of the issue are asked for.
func full() bool { return os.Getenv("WEIR_S3_FULL") != "" }

// startWeir starts `weir run -c cfg` with extra after it, its log weir.log
// beside cfg: a kill loop's runs append to one log.
func startWeir(t *testing.T, bin, cfg string, extra ...string) *weirtest.Proc {
	t.Helper()
	return weirtest.Start(t, bin, filepath.Join(filepath.Dir(cfg), "weir.log"), nil, append([]string{"run", "-c", cfg}, extra...)...)
}

// secretIn fails the test if a log holds the server's secret key.
func secretIn(t *testing.T, logs ...string) {
	t.Helper()
	secret := os.Getenv("AWS_SECRET_ACCESS_KEY")
	if secret == "" {
		return
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("the secret key shows in %s", l)
		}
	}
}

// python runs a script with python3 and decodes its JSON output into out.
// Without boto3 or pyarrow the test fails when WEIR_REQUIRE_PYARROW is set
// (as in CI) and is skipped otherwise.
func python(t *testing.T, out any, script string, args ...string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import boto3, pyarrow.fs, pyarrow.parquet").Run()
	}
	if err != nil {
		if os.Getenv("WEIR_REQUIRE_PYARROW") != "" {
			t.Fatalf("boto3 and pyarrow are required (WEIR_REQUIRE_PYARROW is set): %v", err)
		}
		t.Skip("boto3 or pyarrow is not installed")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(cctx, py, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("python printed %q: %v", b, err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

var _ = fmt.Sprint
