package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// weir validate -d checks every pipeline file of the directory, names each
// pipeline (a name: of its own, else the file's name), skips weir test's
// files, and refuses two files that name the same pipeline.
func TestValidateDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "name: alpha\n"+okConfig)
	write("b.yml", badConfig)
	write("a_test.yaml", "not: a pipeline\n")
	code, stdout, stderr := runCLI("validate", "-d", dir)
	if code != ExitConfig || !strings.Contains(stdout, "a.yaml: ok (pipeline alpha)") || !strings.Contains(stderr, `unknown source type "nosuch"`) || strings.Contains(stdout+stderr, "a_test") {
		t.Errorf("validate -d: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	write("b.yml", "name: alpha\n"+okConfig)
	code, _, stderr = runCLI("validate", "-d", dir)
	if code != ExitUsage || !strings.Contains(stderr, `both name a pipeline "alpha"`) {
		t.Errorf("two files named alpha: exit %d\nstderr: %s", code, stderr)
	}
	write("b.yml", "name: 'no spaces'\n"+okConfig)
	code, _, stderr = runCLI("validate", "-d", dir)
	if code != ExitConfig || !strings.Contains(stderr, "name: must be 1 to 64 letters") {
		t.Errorf("a bad name: exit %d\nstderr: %s", code, stderr)
	}
}

// With --watch, a file is applied when it changes, not at every look: a
// configuration the API put in place of a file's holds until the file
// changes again, and a file with problems is refused once, not every time
// it is looked at.
func TestWatchAppliesWhatChanged(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "pipelines")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(pdir, "p.yaml")
	writeFile(t, file, reloadConfig(dir, 1))
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan string, 1)
	sigs, code, stderr := make(chan os.Signal, 1), make(chan int, 1), &syncBuffer{}
	c := &command{stdout: &syncBuffer{}, stderr: stderr, signals: sigs, watchEvery: 5 * time.Millisecond, listening: func(a string) { addrs <- a }}
	go func() {
		code <- c.main([]string{"run", "-d", pdir, "--watch", "--api", "--metrics-addr", "127.0.0.1:0"})
	}()
	base := "http://" + <-addrs + "/api/v1/pipelines/p"
	get := func() string {
		t.Helper()
		resp, err := http.Get(base)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	req, _ := http.NewRequest("PUT", base, strings.NewReader(reloadConfig(dir, 2)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("replace: %v %v\n%s", err, resp, stderr)
	}
	resp.Body.Close()
	// Many looks at the unchanged file (5ms apart) later, the API's
	// configuration is the one in place.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "reload: the previous configuration stopped") {
		if time.Now().After(deadline) {
			t.Fatalf("the replaced pipeline never started its new configuration:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond) // polling the log of a run in this process
	}
	time.Sleep(200 * time.Millisecond) // some 40 looks at the unchanged file
	if b := get(); !strings.Contains(b, `"origin": "api"`) || !strings.Contains(b, "v: '2'") {
		t.Fatalf("the unchanged file took its pipeline back from the API's configuration:\n%s", b)
	}
	// Written whole and renamed into place: a look at a half-written file
	// would be a second, different bad file, refused again.
	next := filepath.Join(dir, "p.yaml.next")
	writeFile(t, next, strings.Replace(reloadConfig(dir, 3), "batch_size: 50", "batch_size: lots", 1))
	if err := os.Rename(next, file); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "reload refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the bad file was never refused:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond) // polling the log
	}
	time.Sleep(200 * time.Millisecond) // some 40 more looks at the file
	if n := strings.Count(stderr.String(), "reload refused: the new configuration has problems"); n != 1 {
		t.Errorf("the bad file was refused %d times, want once", n)
	}
	sigs <- syscall.SIGTERM
	if c := <-code; c != ExitOK {
		t.Fatalf("exit %d\n%s", c, stderr)
	}
}
