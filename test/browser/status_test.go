//go:build browser

package browser_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The ten components of the pipeline under test. Partition gen/0 goes to
// sink stuck, whose template names a directory that is a regular file, so
// every write fails ("not a directory", root or not); the other partitions
// flow to healthy sinks.
var tenComponents = []string{"gen", "tagged", "split", "even", "odd", "doubled", "stuck", "evens", "odds", "audit"}

const tenYAML = `
sources:
  gen:
    type: generate
    partitions: 4
    rate: 400
    batch_size: 20
transforms:
  tagged:
    type: map
    inputs: [gen]
    set:
      part: '@origin.partition'
  split:
    type: route
    inputs: [tagged]
    outputs:
      held: part == "gen/0"
      flowing: part != "gen/0"
  even:
    type: filter
    inputs: [split.flowing]
    condition: seq %% 2 == 0
  odd:
    type: filter
    inputs: [split.flowing]
    condition: seq %% 2 == 1
  doubled:
    type: map
    inputs: [even]
    set:
      double: seq * 2
sinks:
  stuck:
    type: file
    inputs: [split.held]
    path: %[1]s/stuck
    template: blocked/part
    batch: { max_records: 100, max_age: 200ms }
    retry: { max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms }
    give_up_after: 1h
  evens:
    type: file
    inputs: [doubled]
    path: %[1]s/evens
    template: part
    batch: { max_records: 500, max_age: 500ms }
  odds:
    type: blackhole
    inputs: [odd]
  audit:
    type: blackhole
    inputs: [tagged]
checkpoint:
  commit_interval: 500ms
  stall_warning: 2s
  shutdown_timeout: 5s
metrics:
  address: 127.0.0.1:0
`

// The window sizes the page must be readable at.
var sizes = []struct {
	name          string
	width, height int
	layout        string // how the graph must be drawn
}{
	{"1280x800", 1280, 800, "across"},
	{"390x844", 390, 844, "down"},
}

// Guarantee: the status page, served by a running weir, loads with no
// console error, draws every component of a ten-component pipeline, marks
// the sink that fails for good as failing with its error text, lists the
// partition it holds as stalled, saying why, and updates by itself; at
// 1280x800 and on a narrow window alike, the page never scrolls sideways and
// the graph keeps its text at full size. The quickstart pipeline is drawn the
// same way. When weir stops, the page says so.
func TestStatusPageInABrowser(t *testing.T) {
	chrome := chromium(t)
	bin := weirtest.BuildTemp(t, "")
	shots := artifactDir(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "stuck"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A file where the sink wants a directory.
	if err := os.WriteFile(filepath.Join(dir, "stuck", "blocked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ten.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(tenYAML, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWeir(t, bin, cfg)

	for _, sz := range sizes {
		t.Run("ten/"+sz.name, func(t *testing.T) {
			ctx := browser(t, chrome, sz.width, sz.height)
			console := watchConsole(ctx)
			defer noConsoleErrors(t, console)
			navigate(t, ctx, w.base)
			p := waitPage(t, ctx, "the failing sink and its stuck partition", func(p page) string {
				if p.Node["stuck"].State != "failing" {
					return fmt.Sprintf("sink stuck drawn as %q", p.Node["stuck"].State)
				}
				if !p.PartStalled {
					return "partition gen/0 not listed as stalled"
				}
				return ""
			})
			checkLayout(t, p, tenComponents, sz.width, sz.layout)
			if p.StuckStroke != "rgb(198, 40, 40)" {
				t.Errorf("the failing sink's outline is %q, want the failing red: the style sheet did not apply", p.StuckStroke)
			}
			if !strings.Contains(p.Node["stuck"].Text, "failing") || !strings.Contains(p.Node["stuck"].Text, "not a dir") {
				t.Errorf("the failing sink's node reads %q: want it failing, with the start of its error", p.Node["stuck"].Text)
			}
			if !strings.Contains(p.StuckRow, "failing since") || !strings.Contains(p.StuckRow, "not a directory") {
				t.Errorf("the failing sink's row reads %q: want failing since a time, and its error", p.StuckRow)
			}
			if !strings.Contains(p.PartRow, "stuck") || !strings.Contains(p.PartRow, "not a directory") || !strings.Contains(p.PartRow, "has not moved") {
				t.Errorf("partition gen/0's row reads %q: want why it waits, naming sink stuck and its error", p.PartRow)
			}
			if p.OtherStalled {
				t.Error("partition gen/1, routed to healthy sinks, is listed as stalled")
			}
			if !strings.Contains(p.Events, "rewind") || !strings.Contains(p.Events, "sink failing") {
				t.Errorf("recent events %q: want the rewinds and the sink's failures", p.Events)
			}
			// The page updates by itself: the server's time and the stuck
			// partition's stall age change from one read to the next.
			before := p
			waitPage(t, ctx, "a change between two reads", func(p page) string {
				if p.Updated == before.Updated || p.Stall == before.Stall {
					return fmt.Sprintf("last update %q and stall %q as before", p.Updated, p.Stall)
				}
				return ""
			})
			screenshot(t, ctx, filepath.Join(shots, "ten-"+sz.name+".png"))
		})
	}

	t.Run("quickstart", func(t *testing.T) {
		q := startWeir(t, bin, quickstart(t))
		names := []string{"orders", "paid", "priced", "paid_orders", "by_region"}
		for _, sz := range sizes {
			t.Run(sz.name, func(t *testing.T) {
				ctx := browser(t, chrome, sz.width, sz.height)
				console := watchConsole(ctx)
				defer noConsoleErrors(t, console)
				navigate(t, ctx, q.base)
				p := waitPage(t, ctx, "the quickstart's graph", func(p page) string {
					if len(p.Nodes) != len(names) {
						return fmt.Sprintf("%d nodes", len(p.Nodes))
					}
					return ""
				})
				checkLayout(t, p, names, sz.width, sz.layout)
				screenshot(t, ctx, filepath.Join(shots, "quickstart-"+sz.name+".png"))
			})
		}
	})

	t.Run("stopped", func(t *testing.T) {
		ctx := browser(t, chrome, 1280, 800)
		navigate(t, ctx, w.base)
		waitPage(t, ctx, "the page running", func(p page) string {
			if p.Conn != "up" || !p.ReadyShown {
				return fmt.Sprintf("conn %q, readiness shown %v", p.Conn, p.ReadyShown)
			}
			return ""
		})
		w.stop(t)
		p := waitPage(t, ctx, "the stopped state", func(p page) string {
			if p.Conn != "down" || (p.RunState != "stopped" && p.RunState != "not answering") || p.Banner == "" {
				return fmt.Sprintf("conn %q, state %q, banner %q", p.Conn, p.RunState, p.Banner)
			}
			return ""
		})
		if !strings.Contains(p.Banner, "stopped") && !strings.Contains(p.Banner, "not answering") {
			t.Errorf("banner %q: want it to say weir stopped or does not answer", p.Banner)
		}
		if p.ReadyShown {
			t.Error("the readiness badge is still shown for a weir that does not answer")
		}
		screenshot(t, ctx, filepath.Join(shots, "stopped-1280x800.png"))
	})
}

// chromium returns the browser to drive. It skips the test when there is
// none, unless WEIR_REQUIRE_BROWSER=1 (CI) makes that a failure.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WEIR_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium is not installed (apt-get install chromium), and WEIR_REQUIRE_BROWSER=1 requires it")
	}
	t.Skip("chromium is not installed: apt-get install chromium to run the browser test (WEIR_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// artifactDir returns where screenshots go: WEIR_BROWSER_ARTIFACTS, or a new
// directory under the system's temporary directory, kept after the test so
// that they can be looked at.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WEIR_BROWSER_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "weir-browser-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// quickstart writes the quickstart pipeline with its source following its
// files (mode tail) instead of reading them once, so that it keeps running,
// and its output under the test's directory.
func quickstart(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "examples", "quickstart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	dir := t.TempDir()
	for old, new := range map[string]string{"mode: once": "mode: tail", "examples/data/": root + "/examples/data/", "./out": dir + "/out"} {
		if !strings.Contains(y, old) {
			t.Fatalf("examples/quickstart.yaml no longer has %q: update this test", old)
		}
		y = strings.ReplaceAll(y, old, new)
	}
	if strings.Contains(y, "\nmetrics:") {
		t.Fatal("examples/quickstart.yaml has a metrics section: update this test")
	}
	y += "\nmetrics:\n  address: 127.0.0.1:0\n"
	cfg := filepath.Join(dir, "quickstart.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// weirProcess is a running weir.
type weirProcess struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	mu   sync.Mutex
	logs bytes.Buffer
}

var listenRE = regexp.MustCompile(`msg="metrics listening" address=(\S+)`)

// startWeir runs `weir run -c cfg` and waits until its endpoints listen. It
// is stopped when the test ends; its log is shown if the test failed.
func startWeir(t *testing.T, bin, cfg string) *weirProcess {
	t.Helper()
	w := &weirProcess{cmd: exec.Command(bin, "run", "-c", cfg), done: make(chan struct{})}
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.cmd.Stdout = io.Discard
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			w.mu.Lock()
			w.logs.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_ = w.cmd.Wait()
	}()
	t.Cleanup(func() {
		w.stop(t)
		if t.Failed() {
			w.mu.Lock()
			t.Logf("weir's log (%s):\n%s", cfg, weirtest.Last(w.logs.String(), 60))
			w.mu.Unlock()
		}
	})
	select {
	case a := <-addr:
		w.base = "http://" + a
	case <-w.done:
		t.Fatalf("weir exited before it listened:\n%s", w.logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("weir did not listen within 30s")
	}
	return w
}

// stop sends SIGTERM (a graceful stop) and waits for the process to end,
// killing it if it takes more than a minute.
func (w *weirProcess) stop(t *testing.T) {
	select {
	case <-w.done:
		return
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		_ = w.cmd.Process.Kill()
		<-w.done
		t.Error("weir did not stop within a minute of SIGTERM")
	}
}

// browser starts a headless chromium with a window of w x h and a fresh
// profile, stopped when the test ends.
func browser(t *testing.T, chrome string, w, h int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w), int64(h))); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/")); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
}

// console keeps the errors the page's console shows: calls of
// console.error, uncaught exceptions, and the browser's own error entries
// (a resource that failed to load, a request the page's policy refused).
type console struct {
	mu   sync.Mutex
	errs []string
}

func watchConsole(ctx context.Context) *console {
	c := &console{}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.errs = append(c.errs, m.String()+" ("+m.URL+")")
				c.mu.Unlock()
			}
		}
	}()
	return c
}

func noConsoleErrors(t *testing.T, c *console) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Errorf("console error: %s", e)
	}
}

// page is what the test reads of the page.
type page struct {
	Nodes []struct {
		Name, State, Text        string
		Left, Right, Top, Bottom float64
	}
	Node         map[string]struct{ State, Text string }
	Layout       string
	SVGWidth     float64 // on screen
	ViewBoxWidth float64 // in the drawing's own units
	StuckStroke  string
	StuckRow     string
	PartRow      string
	PartStalled  bool
	OtherStalled bool
	Stall        string
	Updated      string
	Events       string
	ScrollWidth  float64
	ClientWidth  float64
	Conn         string
	RunState     string
	Banner       string
	ReadyShown   bool
	TooWide      []string // the innermost elements past the window's width
}

const readPage = `(() => {
  const q = (s) => document.querySelector(s);
  const text = (s) => { const e = q(s); return e ? e.textContent : ""; };
  const svg = q("#graph svg");
  const nodes = [...document.querySelectorAll("#graph g.node")].map((g) => {
    const r = g.getBoundingClientRect();
    return { Name: g.dataset.name, State: g.dataset.state, Text: g.textContent, Left: r.left, Right: r.right, Top: r.top, Bottom: r.bottom };
  });
  const node = {};
  for (const n of nodes) node[n.Name] = { State: n.State, Text: n.Text };
  const part = q('.source[data-source="gen"] tr[data-partition="gen/0"]');
  const other = q('.source[data-source="gen"] tr[data-partition="gen/1"]');
  const rect = q('#graph g.node[data-name="stuck"] rect');
  const banner = q("#banner");
  return {
    Nodes: nodes, Node: node,
    Layout: svg ? svg.dataset.layout : "",
    SVGWidth: svg ? svg.getBoundingClientRect().width : 0,
    ViewBoxWidth: svg ? svg.viewBox.baseVal.width : 0,
    StuckStroke: rect ? getComputedStyle(rect).stroke : "",
    StuckRow: text('#nodes tr[data-name="stuck"]'),
    PartRow: part ? part.textContent : "",
    PartStalled: !!part && part.classList.contains("stalled"),
    OtherStalled: !!other && other.classList.contains("stalled"),
    Stall: part ? part.querySelector('td[data-label="stalled for"]').textContent : "",
    Updated: q("#updated").dataset.serverTime || "",
    Events: text("#events"),
    ScrollWidth: document.documentElement.scrollWidth,
    ClientWidth: document.documentElement.clientWidth,
    Conn: document.body.dataset.conn,
    RunState: text("#run-state"),
    Banner: banner.hidden ? "" : banner.textContent,
    ReadyShown: getComputedStyle(q("#ready")).display !== "none",
    TooWide: ` + tooWide + `,
  };
})()`

// waitPage reads the page until ok returns "" and returns that reading; it
// fails with ok's last complaint after 30 seconds.
func waitPage(t *testing.T, ctx context.Context, what string, ok func(page) string) page {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := chromedp.Run(ctx, chromedp.Evaluate[page](readPage))
		why := ""
		if err != nil {
			why = err.Error()
		} else {
			why = ok(p)
		}
		if why == "" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed %s: %s", what, why)
		}
		time.Sleep(200 * time.Millisecond) // polling the browser for a condition, with a deadline
	}
}

// checkLayout checks that the graph has exactly the components names, all
// inside the window, drawn at full size in the expected layout, and that
// the page does not scroll sideways.
func checkLayout(t *testing.T, p page, names []string, width int, layout string) {
	t.Helper()
	var got []string
	for _, n := range p.Nodes {
		got = append(got, n.Name)
		if n.Left < 0 || n.Right > p.ClientWidth {
			t.Errorf("node %s spans x %.0f..%.0f, outside the window's %.0f", n.Name, n.Left, n.Right, p.ClientWidth)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Errorf("the graph draws %v, want %v", got, want)
	}
	if p.ScrollWidth > p.ClientWidth {
		t.Errorf("at %d px the page is %.0f px wide and scrolls sideways (window %.0f): %v", width, p.ScrollWidth, p.ClientWidth, p.TooWide)
	}
	if p.Layout != layout {
		t.Errorf("at %d px the graph is laid out %q, want %q", width, p.Layout, layout)
	}
	if p.SVGWidth < p.ViewBoxWidth-1 || p.SVGWidth > p.ViewBoxWidth+1 {
		t.Errorf("the graph is drawn %.0f px wide for %.0f units: scaled, its text no longer full size", p.SVGWidth, p.ViewBoxWidth)
	}
}

func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// brokenWords finds, in the page's text outside the graph, every word that
// the layout breaks across lines: for each whitespace-separated word, the
// line each character is drawn on. A word may go on after a "/" or a "-" on
// the next line (a long path or name wraps where it has a boundary); a
// number (digits, commas, dots) never breaks, nor does a word elsewhere.
// Text cut short with an ellipsis stays on one line and passes.
const brokenWords = `(() => {
  const bad = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest("svg, [hidden], noscript, option")) continue;
    const text = n.data;
    const re = /\S+/g;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const word = m[0];
      if (word.length < 2) continue;
      let prevTop = null, breakAt = -1;
      for (let i = 0; i < word.length; i++) {
        range.setStart(n, m.index + i);
        range.setEnd(n, m.index + i + 1);
        const r = range.getClientRects();
        if (!r.length || r[0].width === 0) continue;
        const top = Math.round(r[0].top);
        if (prevTop !== null && Math.abs(top - prevTop) > 2) { breakAt = i; break; }
        prevTop = top;
      }
      if (breakAt < 0) continue;
      const before = word[breakAt - 1];
      const numeric = /^[\d.,]+$/.test(word.replace(/[^\w.,]/g, ""));
      if (numeric || !(before === "/" || before === "-")) {
        bad.push(word.slice(0, breakAt) + " | " + word.slice(breakAt) + " (in " + n.parentElement.tagName.toLowerCase() +
          (n.parentElement.dataset.label ? " " + n.parentElement.dataset.label : "") + ")");
      }
    }
  }
  return bad;
})()`

// tooWide names the innermost elements that reach past the window's width.
const tooWide = `(() => {
  const w = document.documentElement.clientWidth, out = [];
  for (const e of document.querySelectorAll("body *")) {
    const r = e.getBoundingClientRect();
    if (r.right > w + 1 && ![...e.children].some((c) => c.getBoundingClientRect().right > w + 1)) {
      out.push({ right: r.right, text: e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." + e.className : "") +
        (e.dataset.label ? "[" + e.dataset.label + "]" : "") + " to " + Math.round(r.right) + ": " + e.textContent.slice(0, 40) });
    }
  }
  out.sort((a, b) => b.right - a.right);
  return out.slice(0, 6).map((o) => o.text);
})()`

// Guarantee: at 800 and 1400 px wide, no word of the page is broken across
// lines in the middle ("order|s", "transfor|m", "19,5|00"): names, kinds,
// states and numbers stay whole; a long path or name wraps only after a "/"
// or "-", or is cut short with an ellipsis, its whole text in its title. The
// page still never scrolls sideways.
func TestStatusPageBreaksNoWord(t *testing.T) {
	chrome := chromium(t)
	bin := weirtest.BuildTemp(t, "")
	shots := artifactDir(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "stuck"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stuck", "blocked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ten.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(tenYAML, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []struct {
		name  string
		w     *weirProcess
		ready func(page) string
	}{
		{"ten", startWeir(t, bin, cfg), func(p page) string {
			if p.Node["stuck"].State != "failing" || !p.PartStalled || !strings.Contains(p.PartRow, "has not moved") {
				return fmt.Sprintf("sink stuck %q, gen/0 stalled %v, explained %v", p.Node["stuck"].State, p.PartStalled, strings.Contains(p.PartRow, "has not moved"))
			}
			return ""
		}},
		{"quickstart", startWeir(t, bin, quickstart(t)), func(p page) string {
			if len(p.Nodes) != 5 || !strings.Contains(p.Events, "assigned") {
				return fmt.Sprintf("%d nodes, events %q", len(p.Nodes), p.Events)
			}
			return ""
		}},
	}
	for _, r := range runs {
		for _, width := range []int{800, 1400} {
			t.Run(fmt.Sprintf("%s/%d", r.name, width), func(t *testing.T) {
				ctx := browser(t, chrome, width, 900)
				navigate(t, ctx, r.w.base)
				p := waitPage(t, ctx, "the pipeline drawn", r.ready)
				if p.ScrollWidth > p.ClientWidth {
					wide, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](tooWide))
					t.Errorf("at %d px the page is %.0f px wide and scrolls sideways: %v", width, p.ScrollWidth, wide)
				}
				bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](brokenWords))
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range bad {
					t.Errorf("at %d px a word is broken across lines: %s", width, b)
				}
				screenshot(t, ctx, filepath.Join(shots, fmt.Sprintf("words-%s-%d.png", r.name, width)))
			})
		}
	}
}

// A source read by a sink that fails for good and by a healthy one: the
// failing sink holds the partition, the source reaches its in-flight limit,
// and the healthy sink writes nothing.
const idleYAML = `
sources:
  gen:
    type: generate
    partitions: 1
    rate: 400
    batch_size: 20
    max_in_flight_batches: 4
sinks:
  stuck:
    type: file
    inputs: [gen]
    path: %[1]s/stuck
    template: blocked/part
    batch: { max_records: 100, max_age: 200ms }
    retry: { max_attempts: 2, initial_backoff: 100ms, max_backoff: 200ms }
    give_up_after: 1h
  healthy:
    type: blackhole
    inputs: [gen]
checkpoint:
  commit_interval: 500ms
  stall_warning: 2s
metrics:
  address: 127.0.0.1:0
`

// Guarantee: a healthy sink that writes nothing because its sibling holds
// back their source is drawn idle, not ok, saying what it waits on, in the
// graph and in the components table.
func TestStatusPageSaysWhatAnIdleSinkWaitsOn(t *testing.T) {
	chrome := chromium(t)
	bin := weirtest.BuildTemp(t, "")
	shots := artifactDir(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "stuck"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stuck", "blocked"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "idle.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(idleYAML, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startWeir(t, bin, cfg)
	ctx := browser(t, chrome, 1280, 800)
	console := watchConsole(ctx)
	defer noConsoleErrors(t, console)
	navigate(t, ctx, w.base)
	waitPage(t, ctx, "the healthy sink idle, waiting on the stuck one", func(p page) string {
		n := p.Node["healthy"]
		if n.State != "idle" || !strings.Contains(n.Text, "waiting on stuck") {
			return fmt.Sprintf("sink healthy drawn %q, reading %q", n.State, n.Text)
		}
		return ""
	})
	row, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#nodes tr[data-name="healthy"] td[data-label="state"]').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row, "idle: waiting on stuck") {
		t.Errorf("sink healthy's state in the table reads %q, want idle: waiting on stuck", row)
	}
	screenshot(t, ctx, filepath.Join(shots, "idle-1280x800.png"))
}
