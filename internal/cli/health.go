package cli

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weir-etl/weir/pipeline"
)

// weir health: /healthz or /readyz of a running weir, as an exit code, for
// places that have no HTTP client of their own: the container image's
// HEALTHCHECK (the image is built from scratch: no shell, no curl) and
// Kubernetes exec probes.

const healthDoc = `Asks a running weir whether it is alive (GET /healthz) or, with -ready,
ready (GET /readyz: no partition stalled, no sink failing, not stopping), on
the address it serves its endpoints on (metrics.address). Exits with 0 when
the answer is 200 OK, and with 3 otherwise, printing the answer (the reasons
for a 503) or the error on stderr. The container image's HEALTHCHECK runs it.`

func (c *command) health(args []string) int {
	fs := c.flagSet("health")
	addr := fs.String("a", pipeline.DefaultMetricsAddress, "the `ADDRESS` weir serves its endpoints on (metrics.address)")
	ready := fs.Bool("ready", false, "ask /readyz instead of /healthz")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after `DURATION`")
	if code, ok := c.parse(fs, args, "weir health [-a ADDRESS] [-ready] [-timeout DURATION]", healthDoc); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if *timeout <= 0 {
		return c.usageErr(fs.Name(), fmt.Sprintf("-timeout %v: the timeout must be positive", *timeout))
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	url := "http://" + strings.TrimPrefix(*addr, "http://") + path
	resp, err := (&http.Client{Timeout: *timeout}).Get(url)
	if err != nil {
		fmt.Fprintf(c.stderr, "weir: %s: %v\n", path, err)
		return ExitRuntime
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(c.stderr, "weir: %s answered %s: %s\n", path, resp.Status, strings.TrimSpace(string(body)))
		return ExitRuntime
	}
	fmt.Fprintf(c.stdout, "%s: %s\n", path, strings.TrimSpace(string(body)))
	return ExitOK
}
