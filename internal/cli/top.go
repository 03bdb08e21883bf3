package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/pipeline/view"
)

// weir top: the status page in a terminal. It reads a running weir's
// /api/v1/status (docs/status.md) and prints the components with their
// rates and states, the stalled partitions and why, and the last events;
// on a terminal it redraws every interval until interrupted, elsewhere (or
// with -once) it prints once.

const topDoc = `Shows a running weir's status in the terminal: every component with its
records per second, errors and state, the stalled partitions and why they
wait, and the last events, from http://ADDRESS/api/v1/status. On a terminal
it redraws every interval until interrupted; otherwise, or with -once, it
prints once. Exits with 3 when the status cannot be read.`

func (c *command) top(args []string) int {
	fs := c.flagSet("top")
	addr := fs.String("a", pipeline.DefaultMetricsAddress, "the `ADDRESS` weir serves its endpoints on (metrics.address)")
	every := fs.Duration("n", time.Second, "redraw every `INTERVAL`")
	once := fs.Bool("once", false, "print once and exit")
	if code, ok := c.parse(fs, args, "weir top [-a ADDRESS] [-n INTERVAL] [-once]", topDoc); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if *every <= 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("-n %v: the interval must be positive", *every))
	}
	url := "http://" + strings.TrimPrefix(*addr, "http://") + "/api/v1/status?partitions=10"
	client := &http.Client{Timeout: 5 * time.Second}
	redraw := !*once && progressTo(c.stdout) != nil
	if !redraw {
		st, err := fetchStatus(client, url)
		if err != nil {
			fmt.Fprintln(c.stderr, "weir:", err)
			return ExitRuntime
		}
		renderTop(c.stdout, st)
		return ExitOK
	}
	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		var b strings.Builder
		b.WriteString("\033[H\033[2J") // home, clear the screen
		if st, err := fetchStatus(client, url); err != nil {
			fmt.Fprintf(&b, "weir top: %s\n%v\n", time.Now().Format(time.TimeOnly), err)
		} else {
			renderTop(&b, st)
		}
		fmt.Fprint(c.stdout, b.String())
		select {
		case <-sigs:
			return ExitOK
		case <-tick.C:
		}
	}
}

// withToken adds the bearer token from pipeline.TokenEnvVar, when it is
// set: the one a weir whose metrics.token_env is set asks for.
func withToken(req *http.Request) {
	if tok := strings.TrimSpace(os.Getenv(pipeline.TokenEnvVar)); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
}

// fetchStatus reads and decodes the status document at url.
func fetchStatus(client *http.Client, url string) (*pipeline.Status, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("top: %w", err)
	}
	withToken(req)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("top: reading the status: %w (is weir running, with metrics.address at that address?)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("top: %s: %s %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	var st pipeline.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("top: decoding the status: %w", err)
	}
	if st.Version != pipeline.StatusVersion {
		return nil, fmt.Errorf("top: the status is version %d; this weir top reads version %d", st.Version, pipeline.StatusVersion)
	}
	return &st, nil
}

// renderTop writes one screen of st (view.Top).
func renderTop(w io.Writer, st *pipeline.Status) { view.Top(w, st) }
