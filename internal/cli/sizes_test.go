package cli

import (
	"strings"
	"testing"

	_ "github.com/weir-etl/weir/source/file"
)

// Sizes accept the units docs/config.md names, in every option that is a
// number of bytes: max_line_bytes: 200MiB used to be "not a whole number".
func TestSizeOptionsTakeUnits(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, `
sources:
  in:
    type: file
    paths: [`+dir+`/*.log]
    data_dir: `+dir+`/state
    max_line_bytes: 200MiB
    batch_bytes: 1MB
    read_buffer_bytes: 64KiB
sinks:
  out: { type: blackhole, inputs: [in] }
`)
	code, stdout, stderr := runCLI("validate", "--offline", "-c", cfg) // the paths name nothing here
	if code != ExitOK || !strings.Contains(stdout, ": ok") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
