package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weir-etl/weir/internal/fleet"
	"github.com/weir-etl/weir/pipeline"
)

const pipelinesDoc = `A client of the pipelines API of a running weir run -d (docs/pipelines.md):

  weir pipelines list                     every pipeline, its state and counts
  weir pipelines get NAME                 its configuration and state (JSON)
  weir pipelines apply -f FILE [NAME]     create it, or replace its configuration
                                          (NAME defaults to FILE's name)
  weir pipelines pause NAME               stop polling; what is in flight is committed
  weir pipelines resume NAME              poll again
  weir pipelines delete NAME              stop it gracefully and forget it
  weir pipelines reset NAME SOURCE --yes  while paused, move SOURCE's state aside

The token is read from ` + fleet.TokenEnvVar + ` or --token-file. A configuration
the server refuses is printed problem by problem, and exits 1.`

func (c *command) pipelines(args []string) int {
	fs := c.flagSet("pipelines")
	addr := fs.String("addr", pipeline.DefaultMetricsAddress, "the `ADDRESS` (host:port, or an http:// URL) weir run -d serves on")
	tokenFile := fs.String("token-file", "", "read the API token from `FILE` (else from "+fleet.TokenEnvVar+")")
	file := fs.String("f", "", "apply: the pipeline configuration `FILE`")
	yes := fs.Bool("yes", false, "reset: confirm that the source reads again from its start")
	if code, ok := c.parse(fs, args, "weir pipelines list|get|apply|pause|resume|delete|reset [ARGS] [flags]", pipelinesDoc); !ok {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return c.usageErr(fs.Name(), "say what to do: list, get, apply, pause, resume, delete or reset")
	}
	token := os.Getenv(fleet.TokenEnvVar)
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return c.usageErr(fs.Name(), fmt.Sprintf("--token-file: %v", err))
		}
		token = strings.TrimSpace(string(b))
	}
	base := *addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/") + "/api/v1/pipelines"
	cl := &apiClient{c: c, base: base, token: token}
	op, rest := rest[0], rest[1:]
	needs := func(n int, what string) bool {
		if len(rest) != n {
			c.usageErr(fs.Name(), fmt.Sprintf("%s takes %s", op, what))
			return false
		}
		return true
	}
	switch op {
	case "list":
		if !needs(0, "no argument") {
			return ExitUsage
		}
		return cl.list()
	case "get":
		if !needs(1, "a pipeline's NAME") {
			return ExitUsage
		}
		return cl.show("GET", "/"+rest[0], nil, "")
	case "apply":
		if *file == "" || len(rest) > 1 {
			return c.usageErr(fs.Name(), "apply takes -f FILE and, optionally, the pipeline's NAME")
		}
		data, err := os.ReadFile(*file)
		if err != nil {
			fmt.Fprintln(c.stderr, "weir:", err)
			return ExitConfig
		}
		name := strings.TrimSuffix(filepath.Base(*file), filepath.Ext(*file))
		if len(rest) == 1 {
			name = rest[0]
		}
		return cl.show("PUT", "/"+name, data, "application/yaml")
	case "pause", "resume":
		if !needs(1, "a pipeline's NAME") {
			return ExitUsage
		}
		return cl.show("POST", "/"+rest[0]+"/"+op, nil, "")
	case "delete":
		if !needs(1, "a pipeline's NAME") {
			return ExitUsage
		}
		return cl.show("DELETE", "/"+rest[0], nil, "")
	case "reset":
		if !needs(2, "a pipeline's NAME and a SOURCE") {
			return ExitUsage
		}
		if !*yes {
			return c.usageErr(fs.Name(), fmt.Sprintf("reset makes source %s read again from its start: add --yes to do it", rest[1]))
		}
		body, _ := json.Marshal(fleet.ResetRequest{Source: rest[1], Confirm: rest[1]})
		return cl.show("POST", "/"+rest[0]+"/reset", body, "application/json")
	}
	return c.usageErr(fs.Name(), fmt.Sprintf("unknown pipelines command %q: use list, get, apply, pause, resume, delete or reset", op))
}

type apiClient struct {
	c     *command
	base  string
	token string
}

// do sends the request; on a refusal it prints the error (and every
// problem) and returns the exit code.
func (a *apiClient) do(method, path string, body []byte, ctype string) ([]byte, int) {
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(a.c.stderr, "weir:", err)
		return nil, ExitUsage
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := (&http.Client{Timeout: 3 * time.Minute}).Do(req)
	if err != nil {
		fmt.Fprintf(a.c.stderr, "weir: %v (is weir run -d serving there? --addr says where)\n", err)
		return nil, ExitRuntime
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 {
		return out, ExitOK
	}
	var e struct {
		Error    string   `json:"error"`
		Problems []string `json:"problems"`
	}
	if json.Unmarshal(out, &e) != nil || e.Error == "" {
		e.Error = strings.TrimSpace(string(out))
	}
	fmt.Fprintf(a.c.stderr, "weir: %s: %s\n", resp.Status, e.Error)
	for _, p := range e.Problems {
		fmt.Fprintln(a.c.stderr, p)
	}
	if len(e.Problems) > 0 {
		return nil, ExitConfig
	}
	return nil, ExitRuntime
}

func (a *apiClient) show(method, path string, body []byte, ctype string) int {
	out, code := a.do(method, path, body, ctype)
	if code == ExitOK {
		_, _ = a.c.stdout.Write(out)
	}
	return code
}

func (a *apiClient) list() int {
	out, code := a.do("GET", "", nil, "")
	if code != ExitOK {
		return code
	}
	var l struct {
		Pipelines []fleet.Info `json:"pipelines"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		fmt.Fprintln(a.c.stderr, "weir: the answer is not the pipelines list:", err)
		return ExitRuntime
	}
	tw := tabwriter.NewWriter(a.c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tREAD\tWRITTEN\tERRORS\tRELOADS\tORIGIN")
	for _, p := range l.Pipelines {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", p.Name, p.State, p.Counts.Read, p.Counts.Written, p.Counts.Errors, p.Reloads, p.Origin)
	}
	_ = tw.Flush()
	return ExitOK
}
