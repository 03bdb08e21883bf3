package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name: content under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const evensYAML = `
sources:
  in: { type: generate, count: 10 }
transforms:
  even: { type: filter, inputs: [in], condition: 'seq % 2 == 0' }
sinks:
  out: { type: blackhole, inputs: [even] }
`

// Guarantee: weir test runs the tests beside configurations, exits 0 when
// they pass, 5 with a diff when one fails, 1 when a test file or its
// configuration does not load or there is no test at all, and 2 for bad
// usage; the examples' tests pass.
func TestTestCommand(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"good/p.yaml": evensYAML,
		"good/p_test.yaml": `
tests:
  - name: evens pass
    inputs: { in: ['{"seq":1}', '{"seq":2}'] }
    outputs: { even: ['{"seq":2}'], out: { count: 1, each: ['seq % 2 == 0'] } }
`,
		"bad/p.yaml": evensYAML,
		"bad/p_test.yaml": `
tests:
  - name: evens pass
    inputs: { in: ['{"seq":1}', '{"seq":2}'] }
    outputs: { even: ['{"seq":2}'] }
  - name: odds do not
    inputs: { in: ['{"seq":1}', '{"seq":2}', '{"seq":4}'] }
    outputs: { even: ['{"seq":1}', '{"seq":4}'] }
`,
		"broken/p.yaml":      evensYAML,
		"broken/p_test.yaml": "tests:\n  - name: x\n",
		"badconfig/p.yaml":   "sources:\n  in: { type: nosuch }\n",
		"badconfig/p_test.yaml": `
tests:
  - name: x
    outputs: { out: [] }
`,
		"empty/readme.txt": "nothing",
	})
	at := func(p string) string { return filepath.Join(dir, p) }
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"the examples pass", []string{"test", filepath.Join("..", "..", "examples")}, ExitOK,
			[]string{"ok    ../../examples/quickstart_test.yaml", "ok    ../../examples/generate_test.yaml"}, nil},
		{"a passing file", []string{"test", "-v", at("good")}, ExitOK, []string{"ok    " + at("good/p_test.yaml") + "  1 of 1 tests passed", "--- PASS: evens pass"}, nil},
		{"by its configuration", []string{"test", at("good/p.yaml")}, ExitOK, []string{"1 of 1 tests passed"}, nil},
		{"-c and -t", []string{"test", "-c", at("good/p.yaml"), "-t", at("bad/p_test.yaml")}, ExitTestFailed, []string{"1 of 2 tests passed"}, nil},
		{"a failing test shows a diff", []string{"test", at("bad")}, ExitTestFailed, []string{
			"FAIL  " + at("bad/p_test.yaml") + "  1 of 2 tests passed",
			"--- FAIL: odds do not (" + at("bad/p_test.yaml") + ":6",
			"outputs.even (line 8): the records differ (- want, + got):",
			`  - {"seq":1}`, `    {"seq":4}`, `  + {"seq":2}`}, nil},
		{"-run picks tests", []string{"test", "-run", "evens", at("bad")}, ExitOK, []string{"1 of 1 tests passed"}, nil},
		{"a broken test file", []string{"test", at("broken")}, ExitConfig, []string{"the test file has 1 problem(s)", `test "x" checks nothing`}, nil},
		{"a broken configuration", []string{"test", at("badconfig")}, ExitConfig, []string{"it could not run", `unknown source type "nosuch"`}, nil},
		{"the worst wins", []string{"test", at("bad"), at("broken")}, ExitConfig, nil, nil},
		{"no tests", []string{"test", at("empty")}, ExitConfig, nil, []string{"no test files (*_test.yaml) in " + at("empty")}},
		{"a configuration without tests", []string{"test", at("empty/readme.txt")}, ExitConfig, nil, []string{"has no test file"}},
		{"-c alone", []string{"test", "-c", at("good/p.yaml")}, ExitUsage, nil, []string{"-c FILE and -t TESTFILE go together"}},
		{"-run bad", []string{"test", "-run", "(", at("good")}, ExitUsage, nil, []string{"-run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}
