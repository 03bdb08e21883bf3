// Package testscript runs the data-driven tests of weir's pure cores (the
// checkpoint package, the commit policy): text files of command blocks,
// each followed by a "----" line and the output the commands must print.
//
// A file is a sequence of blocks separated by blank lines. Lines starting
// with "#" between blocks are comments. Each block is one or more command
// lines, a "----" line, and the expected output lines (possibly none). With
// rewrite set, the expected output is replaced by what the commands print,
// comments and commands kept as they are: run the tests with the package's
// -rewrite flag after a deliberate change, and review the diff.
package testscript

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// RunAll runs every file matching pattern (a filepath.Glob pattern) as a
// subtest named after the file. newExec is called once per file, for a
// fresh state, and returns the function that runs one command and returns
// its output lines. It fails when no file matches.
func RunAll(t *testing.T, pattern string, rewrite bool, newExec func(t *testing.T, file string) func(cmd string) []string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scripts match %s", pattern)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			Run(t, file, rewrite, newExec(t, file))
		})
	}
}

// Run runs the script in file with exec and reports every block whose
// output differs from what the file expects, or rewrites the file.
func Run(t *testing.T, file string, rewrite bool, exec func(cmd string) []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		if l := lines[i]; l == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			i++
			continue
		}
		first := i + 1
		var cmds []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			if lines[i] == "" {
				t.Fatalf("%s:%d: block has no ---- line", file, i+1)
			}
			cmds = append(cmds, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: block has no ---- line", file, first)
		}
		i++ // ----
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		var got []string
		for _, cmd := range cmds {
			got = append(got, exec(cmd)...)
		}
		if !rewrite && !slices.Equal(got, want) {
			t.Errorf("%s:%d:\n%s\ngot:\n%s\nwant:\n%s", file, first, strings.Join(cmds, "\n"),
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		out.WriteString(strings.Join(cmds, "\n") + "\n----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
	}
	if rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
