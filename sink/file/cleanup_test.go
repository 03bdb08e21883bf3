package file

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openAt opens a file sink on dir and closes it at the end of the test.
func openAt(t testing.TB, dir string, mutate func(*Config)) *Sink {
	t.Helper()
	c := NewConfig()
	c.Path = dir
	if mutate != nil {
		mutate(c)
	}
	s, err := New("out", c)
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	return s
}

// put creates the files under dir, with their directories.
func put(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// exist reports which of names exist under dir.
func exist(dir string, names ...string) (present, absent []string) {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(n))); err == nil {
			present = append(present, n)
		} else {
			absent = append(absent, n)
		}
	}
	return present, absent
}

const deadRun = "20250102T030405-0badcafe"

// Open removes a dead run's temporary files (its lock file is there but
// nobody holds it), in the output directory and below, then its lock file,
// and touches nothing else.
func TestOpenRemovesDeadRunsTemporaryFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	gone := []string{
		".part-" + deadRun + "-000001.ndjson.tmp",
		"2026-03-04/eu/.part-" + deadRun + "-000002.ndjson.zst.tmp",
		"2026-03-04/.p-a-rt-" + deadRun + "-1234567.parquet.tmp",
		".weir-" + deadRun + ".lock",
		".weir-20240101T000000-00c0ffee.lock", // a dead run that left no temporary file
	}
	kept := []string{
		".keep.tmp",
		"part-" + deadRun + "-000003.ndjson",        // a published chunk
		".part-" + deadRun + "-000004.csv.tmp",      // not a chunk's extension
		".part-" + deadRun + "-00005.ndjson.tmp",    // sequence too short
		".part-" + deadRun + "-000006.ndjson.tmp.x", // not a temporary name
		".part-20250102T030405-0BADCAFE-000007.ndjson.tmp",
		"." + deadRun + "-000008.ndjson.tmp", // no template path
		"2026-03-04/.keep.tmp",
		".weir-notarun.lock",
		"2026-03-04/.weir-" + deadRun + ".lockx",
		"weir-" + deadRun + ".lock",
	}
	put(t, dir, gone...)
	put(t, dir, kept...)
	// A symbolic link is not a file weir made, whatever its name.
	link := ".part-" + deadRun + "-000009.ndjson.tmp"
	if err := os.Symlink("part-"+deadRun+"-000003.ndjson", filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, link)

	s := openAt(t, dir, nil)
	if present, _ := exist(dir, gone...); len(present) > 0 {
		t.Errorf("left the dead run's files %v", present)
	}
	if _, absent := exist(dir, kept...); len(absent) > 0 {
		t.Errorf("removed %v, which are not a dead run's temporary or lock files", absent)
	}
	if want := dir + ": 0 chunks, 0 records, 3 temporary files of ended runs removed"; s.Describe() != want {
		t.Errorf("Describe() = %q, want %q", s.Describe(), want)
	}
}

// A live run's temporary files stay: sink B opening on sink A's directory
// leaves A's unflushed chunk, which A then publishes.
func TestOpenKeepsLiveRunsTemporaryFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	a := openAt(t, dir, nil)
	if err := a.Write(ctx, recs(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	_, before := files(t, dir)
	if len(before) != 1 {
		t.Fatalf("A's temporary files: %v, want one", before)
	}
	b := openAt(t, dir, nil)
	if _, after := files(t, dir); !slices.Equal(after, before) {
		t.Fatalf("after B's Open the temporary files are %v, want A's %v", after, before)
	}
	if _, err := os.Stat(a.lockName); err != nil {
		t.Fatalf("A's lock file: %v", err)
	}
	if strings.Contains(b.Describe(), "removed") {
		t.Fatalf("B's Describe() = %q: it removed something", b.Describe())
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatalf("A's flush after B's Open: %v", err)
	}
	vis, hid := files(t, dir)
	if len(hid) != 0 || strings.Join(readAll(t, dir, vis), ",") != `{"a":1}` {
		t.Fatalf("after A's flush: visible %v holding %v, hidden %v", vis, readAll(t, dir, vis), hid)
	}
}

// A run's lock file is in its own path, which may be above or below another
// sink's: its temporary files stay while it is live either way.
func TestOpenKeepsLiveRunsOfNestedPaths(t *testing.T) {
	for name, nested := range map[string]bool{"inner sink opens": true, "outer sink opens": false} {
		t.Run(name, func(t *testing.T) {
			outer := filepath.Join(t.TempDir(), "out")
			inner := filepath.Join(outer, "in")
			var w *Sink
			if nested {
				// The outer sink writes into the inner one's directory.
				w = openAt(t, outer, func(c *Config) { c.Template = "in/x/part" })
			} else {
				w = openAt(t, inner, func(c *Config) { c.Template = "x/part" })
			}
			if err := w.Write(ctx, recs(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			_, before := files(t, outer)
			if nested {
				openAt(t, inner, nil)
			} else {
				openAt(t, outer, nil)
			}
			if _, after := files(t, outer); len(before) != 1 || !slices.Equal(after, before) {
				t.Fatalf("temporary files %v before the other sink's Open, %v after", before, after)
			}
			if err := w.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Temporary files whose run has no lock file (it ended, or was an older weir
// that took none) are leftovers: Open removes them.
func TestOpenRemovesTemporaryFilesWithoutLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	gone := []string{
		".part-" + deadRun + "-000001.ndjson.gz.tmp",
		"a/b/.part-" + deadRun + "-000002.ndjson.tmp",
	}
	put(t, dir, gone...)
	s := openAt(t, dir, nil)
	if present, _ := exist(dir, gone...); len(present) > 0 {
		t.Fatalf("left %v, whose run has no lock file", present)
	}
	if want := ", 2 temporary files of ended runs removed"; !strings.HasSuffix(s.Describe(), want) {
		t.Fatalf("Describe() = %q, want it to end with %q", s.Describe(), want)
	}
}

// The sink holds its lock file locked from Open and removes it on Close.
func TestCloseRemovesLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s := openAt(t, dir, nil)
	lock := filepath.Join(dir, ".weir-"+s.runID+".lock")
	f, err := os.Open(lock)
	if err != nil {
		t.Fatalf("lock file after Open: %v", err)
	}
	locked, err := tryLock(f)
	f.Close()
	if err != nil || locked {
		t.Fatalf("the lock file could be locked by another (%v, %v): the sink does not hold it", locked, err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(lock); !os.IsNotExist(err) {
		t.Fatalf("lock file after Close: %v, want it gone", err)
	}
}

// The names the cleaning looks for are the ones the sink makes, for every
// format and compression.
func TestTemporaryNamesMatch(t *testing.T) {
	for _, mutate := range []func(*Config){
		nil,
		func(c *Config) { c.Compression = "gzip" },
		func(c *Config) { c.Compression = "zstd"; c.Template = `{{field "r"}}/a-b` },
		func(c *Config) { c.Format = "parquet" },
	} {
		s, dir := newSink(t, mutate)
		if err := s.Write(ctx, recs(`{"r":"x-1"}`)); err != nil {
			t.Fatal(err)
		}
		_, hid := files(t, dir)
		if len(hid) != 1 {
			t.Fatalf("temporary files %v, want one", hid)
		}
		if id, ok := tempRunID(filepath.Base(hid[0])); !ok || id != s.runID {
			t.Errorf("%s: run id %q, %v; want %q", hid[0], id, ok, s.runID)
		}
		if id, ok := lockRunID(filepath.Base(s.lockName)); !ok || id != s.runID {
			t.Errorf("%s: run id %q, %v; want %q", s.lockName, id, ok, s.runID)
		}
	}
}

// A sink whose lock file is held by another sink's cleaning (which found it
// before it was locked) waits for that to end, and then holds a lock file
// that is in the directory.
func TestOpenWaitsForACleaningOfItsLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	c := NewConfig()
	c.Path = dir
	s, err := New("out", c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, ".weir-"+s.runID+".lock")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := tryLock(f); !ok {
		t.Fatal(ok, err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		os.Remove(name)
		f.Close()
	}()
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	g, err := os.Open(name)
	if err != nil {
		t.Fatalf("lock file after Open: %v", err)
	}
	defer g.Close()
	if locked, err := tryLock(g); err != nil || locked {
		t.Fatalf("the lock file at its name could be locked (%v, %v): the sink holds another", locked, err)
	}
}

// TestHelperProcess is the other process of TestOpenAcrossProcesses: it opens
// a sink on the directory it is given, writes a record without flushing and
// waits to be killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("WEIR_FILE_SINK_HELPER_DIR")
	if dir == "" {
		t.Skip("only run by TestOpenAcrossProcesses")
	}
	s := openAt(t, dir, nil)
	if err := s.Write(ctx, recs(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
}

// Another process's run is live until it dies: its temporary file stays while
// it runs and is removed once it was killed.
func TestOpenAcrossProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "WEIR_FILE_SINK_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	ready := false
	for sc := bufio.NewScanner(out); !ready && sc.Scan(); {
		ready = sc.Text() == "ready"
	}
	if !ready {
		t.Fatal("the helper process did not start its sink")
	}
	_, temps := files(t, dir)
	if len(temps) != 1 {
		t.Fatalf("the helper's temporary files: %v, want one", temps)
	}
	openAt(t, dir, nil)
	if _, after := files(t, dir); !slices.Equal(after, temps) {
		t.Fatalf("with the helper live, Open left %v of its %v", after, temps)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	s := openAt(t, dir, nil)
	if _, after := files(t, dir); len(after) != 0 {
		t.Fatalf("with the helper killed, Open left %v", after)
	}
	if !strings.HasSuffix(s.Describe(), ", 1 temporary file of ended runs removed") {
		t.Fatalf("Describe() = %q", s.Describe())
	}
	locks, _ := filepath.Glob(filepath.Join(dir, ".weir-*.lock"))
	if len(locks) != 2 {
		t.Fatalf("lock files %v, want the two open sinks' only", locks)
	}
}
