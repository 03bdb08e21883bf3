package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
	_ "github.com/weir-etl/weir/sink/blackhole"
	_ "github.com/weir-etl/weir/sink/stdout"
	_ "github.com/weir-etl/weir/source/generate"
)

// syncBuffer is a buffer safe for the pipeline's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gate is the sink of the "cli_test_gate" type: its first Write closes
// gateEntered, and every Write waits for gateRelease. Tests set both before
// running a pipeline that uses it.
var gateEntered, gateRelease chan struct{}

type gate struct {
	entered, release chan struct{}
	once             sync.Once
}

func (g *gate) Open(context.Context) error { return nil }
func (g *gate) Write(ctx context.Context, _ []record.Record) error {
	g.once.Do(func() { close(g.entered) })
	<-g.release
	return nil
}
func (g *gate) Flush(context.Context) error { return nil }
func (g *gate) Abort(context.Context) error { return nil }
func (g *gate) Close(context.Context) error { return nil }

func init() {
	connector.RegisterSink(connector.SinkDef[struct{}]{
		Name: "cli_test_gate",
		Doc:  "blocks writes until the test opens it",
		Build: func(string, *struct{}) (connector.Sink, error) {
			return &gate{entered: gateEntered, release: gateRelease}, nil
		},
	})
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "weir.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const okConfig = `
sources:
  in: { type: generate, count: 1000, partitions: 2, batch_size: 50 }
sinks:
  out: { type: blackhole, inputs: [in] }
checkpoint: { commit_interval: 10ms }
metrics: { address: "off" }
`

// Every problem of the file is printed, not only the first.
const badConfig = `
sources:
  in: { type: nosuch }
sinks:
  out: { type: blackhole, inputs: [in], colour: red }
`

// A filter comparing a missing field with a number fails on every record:
// the record is rejected, the sink's policy is rewind, and replay cannot help.
const haltConfig = `
sources:
  in: { type: generate, count: 100, batch_size: 10 }
transforms:
  f: { type: filter, inputs: [in], condition: 'missing > 1' }
sinks:
  out: { type: blackhole, inputs: [f] }
metrics: { address: "off" }
`

const gateConfig = `
sources:
  in: { type: generate, batch_size: 10 }
sinks:
  out: { type: cli_test_gate, inputs: [in] }
checkpoint: { shutdown_timeout: 1h }
metrics: { address: "off" }
`

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb syncBuffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	ok, bad, halt := writeConfig(t, okConfig), writeConfig(t, badConfig), writeConfig(t, haltConfig)
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		quietOut   bool // nothing on stdout
		quietError bool // nothing on stderr
	}{
		{"validate ok", []string{"validate", "-c", ok}, ExitOK, []string{ok + ": ok"}, nil, false, true},
		{"run to the end", []string{"run", "-c", ok}, ExitOK, nil, []string{"all input read and committed"}, true, false},
		{"validate config error", []string{"validate", "-c", bad}, ExitConfig, nil,
			[]string{"2 problems", `unknown source type "nosuch"`, `unknown option "colour"`}, true, false},
		{"run config error", []string{"run", "-c", bad}, ExitConfig, nil,
			[]string{"2 problems", `unknown source type "nosuch"`, `unknown option "colour"`}, true, false},
		{"missing file", []string{"validate", "-c", filepath.Join(t.TempDir(), "none.yaml")}, ExitConfig, nil, []string{"none.yaml"}, true, false},
		{"runtime halt", []string{"run", "-c", halt}, ExitRuntime, nil, []string{"weir: pipeline: halted", "f rejected a record"}, true, false},
		{"no command", nil, ExitUsage, nil, []string{"Usage:"}, true, false},
		{"unknown command", []string{"rnu"}, ExitUsage, nil, []string{`unknown command "rnu"`, `Run "weir --help" for usage.`}, true, false},
		{"run without -c", []string{"run"}, ExitUsage, nil, []string{"-c FILE is required", `Run "weir run --help" for usage.`}, true, false},
		{"unknown flag", []string{"validate", "-x"}, ExitUsage, nil, []string{"flag provided but not defined: -x", `Run "weir validate --help"`}, true, false},
		{"extra argument", []string{"run", "-c", ok, "more"}, ExitUsage, nil, []string{`unexpected argument "more"`, `Run "weir run --help"`}, true, false},
		{"version argument", []string{"version", "now"}, ExitUsage, nil, []string{`unexpected argument "now"`}, true, false},
		{"help topic", []string{"help", "sinks"}, ExitUsage, nil, []string{`unknown help topic "sinks"`, `Run "weir help --help"`}, true, false},
		{"version", []string{"version"}, ExitOK, []string{"weir (devel)\n", runtime.Version()}, nil, false, true},
		{"--version", []string{"--version"}, ExitOK, []string{"weir (devel)\n", runtime.Version()}, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
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
			if tc.quietOut && stdout != "" {
				t.Errorf("stdout not empty: %s", stdout)
			}
			if tc.quietError && stderr != "" {
				t.Errorf("stderr not empty: %s", stderr)
			}
		})
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"run", "--help"}, {"validate", "-h"}, {"version", "--help"}, {"help", "--help"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != ExitOK || stderr != "" || !strings.Contains(stdout, "Usage:") {
			t.Errorf("weir %s: exit %d, stdout %q, stderr %q; want 0 and usage on stdout", strings.Join(args, " "), code, stdout, stderr)
		}
		if len(args) == 2 && !strings.Contains(stdout, "weir "+args[0]) {
			t.Errorf("weir %s: usage does not name the command:\n%s", strings.Join(args, " "), stdout)
		}
	}
	_, stdout, _ := runCLI("run", "--help")
	if !strings.Contains(stdout, "-c FILE") {
		t.Errorf("run --help does not list -c:\n%s", stdout)
	}
}

func TestHelpListsTypes(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "types"}} {
		code, stdout, _ := runCLI(args...)
		if code != ExitOK {
			t.Fatalf("weir %v: exit %d", args, code)
		}
		for _, want := range []string{
			`(?m)^  generate +generates records from a JSON template`,
			`(?m)^  blackhole +discards records, counting them$`,
			`(?m)^  cli_test_gate +blocks writes`,
		} {
			if !regexp.MustCompile(want).MatchString(stdout) {
				t.Errorf("weir %v lacks %q:\n%s", args, want, stdout)
			}
		}
		if usage := strings.Contains(stdout, "Exit codes:"); usage != (len(args) == 1) {
			t.Errorf("weir %v: usage printed %v", args, usage)
		}
	}
}

// runGate starts "weir run" on the gate pipeline with injected signals, and
// returns once the sink is writing.
func runGate(t *testing.T) (sigs chan os.Signal, code chan int, stderr *syncBuffer, clock *stepClock) {
	t.Helper()
	gateEntered, gateRelease = make(chan struct{}), make(chan struct{})
	entered := gateEntered
	path := writeConfig(t, gateConfig)
	sigs, code, stderr = make(chan os.Signal), make(chan int, 1), &syncBuffer{}
	clock = &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := &command{stdout: &syncBuffer{}, stderr: stderr, signals: sigs, now: clock.now}
	go func() { code <- c.main([]string{"run", "-c", path}) }()
	<-entered
	return sigs, code, stderr, clock
}

// waitFor waits until the command wrote s on stderr: it handled a signal.
func waitFor(t *testing.T, stderr *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q:\n%s", s, stderr)
		}
		time.Sleep(time.Millisecond) // polling another goroutine's output
	}
}

// stepClock is a clock the test moves.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Guarantee: the first interrupt shuts down gracefully (exit 0 once the
// pipeline stopped); a second one, a second or more later, exits at once
// with 130, without waiting for a sink that holds shutdown up; one within a
// second of the first (the same stop delivered twice, as coreutils timeout
// does) and a SIGHUP while shutting down change nothing.
func TestSignals(t *testing.T) {
	t.Run("one", func(t *testing.T) {
		sigs, code, stderr, _ := runGate(t)
		release := gateRelease
		sigs <- os.Interrupt
		close(release)
		if c := <-code; c != ExitOK {
			t.Errorf("exit %d after one interrupt, want 0\n%s", c, stderr)
		}
	})
	t.Run("the same twice", func(t *testing.T) {
		sigs, code, stderr, clock := runGate(t)
		release := gateRelease
		sigs <- syscall.SIGTERM
		waitFor(t, stderr, "shutting down gracefully")
		clock.add(10 * time.Millisecond)
		sigs <- syscall.SIGTERM
		sigs <- syscall.SIGHUP
		close(release)
		if c := <-code; c != ExitOK {
			t.Errorf("exit %d after one SIGTERM delivered twice and a SIGHUP, want 0 (graceful)\n%s", c, stderr)
		}
		if s := stderr.String(); !strings.Contains(s, "the same interrupt again") || !strings.Contains(s, "reload ignored: shutting down") {
			t.Errorf("stderr does not tell of the repeat and the SIGHUP:\n%s", s)
		}
	})
	t.Run("two", func(t *testing.T) {
		sigs, code, stderr, clock := runGate(t)
		release := gateRelease
		defer close(release) // let the abandoned pipeline finish
		sigs <- os.Interrupt
		waitFor(t, stderr, "shutting down gracefully")
		clock.add(2 * time.Second)
		sigs <- os.Interrupt
		if c := <-code; c != ExitSignal {
			t.Errorf("exit %d after two interrupts, want 130", c)
		}
		if s := stderr.String(); !strings.Contains(s, "shutting down gracefully") || !strings.Contains(s, "second interrupt") {
			t.Errorf("stderr does not tell of both interrupts:\n%s", s)
		}
	})
}

func TestProgressOnlyOnATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f, "pipe": w} {
		if got := progressTo(out); got != nil {
			t.Errorf("progress shown on a %s", name)
		}
	}
	// Nor on a character device that is not a terminal.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if progressTo(null) != nil {
		t.Errorf("progress shown on %s", os.DevNull)
	}
}

// The example pipeline runs and ends by itself once its input is committed.
func TestGenerateExampleRuns(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "generate.yaml")
	if code, _, stderr := runCLI("validate", "-c", path); code != ExitOK {
		t.Fatalf("validate %s: exit %d\n%s", path, code, stderr)
	}
	code, _, stderr := runCLI("run", "-c", path)
	if code != ExitOK || !strings.Contains(stderr, "all input read and committed") {
		t.Errorf("run %s: exit %d\n%s", path, code, stderr)
	}
}

// weir run ends with a summary on stderr, never on stdout, where a stdout
// sink's records go.
func TestRunPrintsSummaryOnStderr(t *testing.T) {
	cfg := writeConfig(t, `
sources:
  in: { type: generate, count: 1000, partitions: 2, batch_size: 50 }
transforms:
  even: { type: filter, inputs: [in], condition: 'seq % 2 == 0' }
sinks:
  out: { type: blackhole, inputs: [even] }
checkpoint: { commit_interval: 10ms }
metrics: { address: "off" }
`)
	code, stdout, stderr := runCLI("run", "-c", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stdout != "" {
		t.Fatalf("stdout should stay free for sinks, got:\n%s", stdout)
	}
	for _, want := range []string{"run summary", "source  in", "1000 records read", "committed 2 partitions, positions summing to 1000",
		"filter  even", "500 out, 500 dropped", "sink    out", "500 written"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// --cpuprofile writes a profile of the run; an unwritable path is a runtime
// error before the pipeline starts.
func TestRunCPUProfile(t *testing.T) {
	cfg := writeConfig(t, okConfig)
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	if code, _, stderr := runCLI("run", "-c", cfg, "--cpuprofile", prof); code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if fi, err := os.Stat(prof); err != nil {
		t.Fatal(err)
	} else if fi.Size() == 0 {
		t.Fatalf("profile %s is empty", prof)
	}
	bad := filepath.Join(t.TempDir(), "missing", "cpu.pprof")
	if code, _, stderr := runCLI("run", "-c", cfg, "--cpuprofile", bad); code != ExitRuntime || !strings.Contains(stderr, "cpuprofile") {
		t.Fatalf("exit %d, stderr %q; want %d naming cpuprofile", code, stderr, ExitRuntime)
	}
}

// --memprofile writes the run's allocations (a gzipped profile naming the
// allocations' sample types and the pipeline's own functions); an
// unwritable path is a runtime error before the pipeline starts.
func TestRunMemProfile(t *testing.T) {
	cfg := writeConfig(t, okConfig)
	prof := filepath.Join(t.TempDir(), "mem.pprof")
	if code, _, stderr := runCLI("run", "-c", cfg, "--memprofile", prof); code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not a gzipped profile: %v", prof, err)
	}
	b, err := io.ReadAll(gz)
	if err != nil {
		t.Fatalf("%s: %v", prof, err)
	}
	for _, want := range []string{"alloc_space", "inuse_space", "weir/pipeline."} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the profile does not name %q", want)
		}
	}
	bad := filepath.Join(t.TempDir(), "missing", "mem.pprof")
	if code, _, stderr := runCLI("run", "-c", cfg, "--memprofile", bad); code != ExitRuntime || !strings.Contains(stderr, "memprofile") {
		t.Fatalf("exit %d, stderr %q; want %d naming memprofile", code, stderr, ExitRuntime)
	}
}
