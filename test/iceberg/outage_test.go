//go:build integration

package iceberg_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An unreachable catalog at start: weir waits up to connect_timeout, with
// a WARN naming the catalog and the reason at every attempt, then exits
// with code 3 and an error in the same words.
func TestUnreachableCatalogExits3(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "in"), 0o755)
	os.WriteFile(filepath.Join(dir, "in", "a.ndjson"), []byte(`{"id":1}`+"\n"), 0o644)
	cfg := fmt.Sprintf(`
sources:
  in: { type: file, paths: [%[1]s/in/*.ndjson], format: ndjson, mode: once, data_dir: %[1]s/state }
sinks:
  lake:
    type: iceberg
    inputs: [in]
    catalog: { type: sql, uri: "postgres://weir@%[2]s/cat", password_env: "", warehouse: %[1]s/wh }
    namespace: db
    table: t
    create_table: true
    columns: [{ name: id, type: long }]
    connect_timeout: 3s
metrics: { address: "off" }
`, dir, addr)
	path := filepath.Join(dir, "weir.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	cmd := exec.Command(bins.Build(t, ""), "run", "-c", path)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exit %v, want code 3:\n%s", err, out)
	}
	what := "sql catalog at postgres://" + addr + "/cat"
	log := string(out)
	if n := strings.Count(log, what+" is unreachable; retrying"); n < 2 {
		t.Errorf("%d WARN lines naming %q, want at least 2:\n%s", n, what, log)
	}
	for _, part := range []string{"connection refused", what + " did not answer within connect_timeout (3s)"} {
		if !strings.Contains(log, part) {
			t.Errorf("the output lacks %q:\n%s", part, log)
		}
	}
	t.Logf("exit 3 after %v", time.Since(start).Round(time.Millisecond))
}
