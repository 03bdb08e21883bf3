package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/weir-etl/weir/internal/configtest"
)

const testDoc = `Runs the tests of pipeline configurations. A test file gives records for
the pipeline's sources and what must come out of its transforms, route
outputs and sinks: the exact records (a diff shows what differs), a count,
or conditions every record meets. Each test runs the pipeline in-process
with its real transforms, routes and failure policies; sources and sinks are
in-memory stand-ins, so no broker, database or file is needed.

A PATH is a test file (NAME_test.yaml), a configuration (its test file is
NAME_test.yaml beside it), or a directory (every *_test.yaml below it); by
default the current directory. A test file tests NAME.yaml beside it,
unless it names its configuration (config: path). -c and -t name both.

Exit codes: 0 every test passed; 1 a test file or configuration does not
load (every problem is printed); 2 usage; 5 a test failed.
docs/config.md (Testing a pipeline) describes the test file.`

func (c *command) test(args []string) int {
	fs := c.flagSet("test")
	cfgFile := fs.String("c", "", "the configuration `FILE` to test (with -t)")
	testFile := fs.String("t", "", "the test `FILE` (with -c)")
	run := fs.String("run", "", "run only the tests whose names match `REGEXP`")
	verbose := fs.Bool("v", false, "name every test and its result")
	if code, ok := c.parse(fs, args, "weir test [-run REGEXP] [-v] [PATH...]  or  weir test -c FILE -t TESTFILE", testDoc); !ok {
		return code
	}
	var match *regexp.Regexp
	if *run != "" {
		var err error
		if match, err = regexp.Compile(*run); err != nil {
			return c.usageErr(fs.Name(), fmt.Sprintf("-run %q: %v", *run, err))
		}
	}
	type job struct{ test, config string }
	var jobs []job
	switch {
	case *cfgFile != "" || *testFile != "":
		if *cfgFile == "" || *testFile == "" || fs.NArg() > 0 {
			return c.usageErr(fs.Name(), "-c FILE and -t TESTFILE go together, without paths")
		}
		jobs = append(jobs, job{*testFile, *cfgFile})
	default:
		paths := fs.Args()
		if len(paths) == 0 {
			paths = []string{"."}
		}
		for _, p := range paths {
			found, err := testFiles(p)
			if err != nil {
				fmt.Fprintln(c.stderr, "weir: test:", err)
				return ExitConfig
			}
			for _, f := range found {
				jobs = append(jobs, job{test: f})
			}
		}
		if len(jobs) == 0 {
			fmt.Fprintf(c.stderr, "weir: test: no test files (*_test.yaml) in %s\n", strings.Join(paths, ", "))
			return ExitConfig
		}
	}
	broken, failed := false, false
	for _, j := range jobs {
		switch c.testFile(j.test, j.config, match, *verbose) {
		case ExitConfig:
			broken = true
		case ExitTestFailed:
			failed = true
		}
	}
	switch {
	case broken:
		return ExitConfig
	case failed:
		return ExitTestFailed
	}
	return ExitOK
}

// testFiles returns the test files path names: itself, the one beside a
// configuration, or those below a directory.
func testFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if configtest.IsTestFile(path) {
			return []string{path}, nil
		}
		t := configtest.TestFileOf(path)
		if _, err := os.Stat(t); err != nil {
			return nil, fmt.Errorf("%s has no test file: write its tests in %s", path, t)
		}
		return []string{t}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != path && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && configtest.IsTestFile(p) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// testFile runs the tests of one file and prints what they found; it
// returns ExitOK, ExitTestFailed or ExitConfig.
func (c *command) testFile(path, cfg string, match *regexp.Regexp, verbose bool) int {
	f, errs := configtest.Load(path, cfg)
	if len(errs) > 0 {
		fmt.Fprintf(c.stdout, "FAIL  %s: the test file has %d problem(s)\n", path, len(errs))
		for _, e := range errs {
			fmt.Fprintf(c.stdout, "      %v\n", e)
		}
		return ExitConfig
	}
	start := time.Now()
	code, ran, passed := ExitOK, 0, 0
	var out strings.Builder
	for i := range f.Tests {
		t := &f.Tests[i]
		if match != nil && !match.MatchString(t.Name) {
			continue
		}
		ran++
		res := f.Run(context.Background(), t)
		switch {
		case res.Err != nil:
			code = ExitConfig
			fmt.Fprintf(&out, "  --- FAIL: %s (%s:%d): it could not run:\n", t.Name, path, t.Line)
			writeIndented(&out, "        ", res.Err.Error())
		case !res.Passed():
			if code == ExitOK {
				code = ExitTestFailed
			}
			fmt.Fprintf(&out, "  --- FAIL: %s (%s:%d, %s)\n", t.Name, path, t.Line, res.Elapsed.Round(time.Millisecond))
			for _, fl := range res.Failures {
				writeIndented(&out, "        ", fl.What+": "+fl.Msg)
				if fl.Diff != "" {
					writeIndented(&out, "        ", strings.TrimRight(fl.Diff, "\n"))
				}
			}
		default:
			passed++
			if verbose {
				fmt.Fprintf(&out, "  --- PASS: %s (%s)\n", t.Name, res.Elapsed.Round(time.Millisecond))
			}
		}
	}
	status := "ok  "
	if code != ExitOK {
		status = "FAIL"
	}
	fmt.Fprintf(c.stdout, "%s  %s  %d of %d tests passed (%s tests %s, %s)\n", status, path, passed, ran,
		filepath.Base(path), filepath.Base(f.Config), time.Since(start).Round(time.Millisecond))
	io.WriteString(c.stdout, out.String())
	return code
}

func writeIndented(w io.Writer, indent, s string) {
	for _, line := range strings.Split(s, "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, line)
	}
}
