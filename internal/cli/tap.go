package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/weir-etl/weir/internal/words"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/weir-etl/weir/pipeline"
)

const tapDoc = `Prints a sample of the records leaving COMPONENT of a running weir, one
JSON object a line on stdout: the component, where the record was read
(source, partition, offset), its time, key and headers, and its value
(embedded as JSON when it is one JSON value on one line, base64 otherwise).
COMPONENT is a source (the records it read), a transform (the records it
emitted; a route's every record it routes), a route output
(<route>.<output>) or a sink (the records handed to it to write).

It reads http://ADDRESS/api/v1/tap/COMPONENT, which weir serves where its
metrics are (metrics.address, or run --metrics-addr): with the endpoints
off there is nothing to tap. At most -rate records a second are taken; a
reader slower than that loses records, which the last message counts; the
pipeline never waits for a tap. It ends after -n records, on an interrupt,
or when the pipeline stops (or reloads). Exits with 3 when the tap cannot
be opened.`

func (c *command) tap(args []string) int {
	fs := c.flagSet("tap")
	addr := fs.String("a", pipeline.DefaultMetricsAddress, "the `ADDRESS` weir serves its endpoints on (metrics.address)")
	count := fs.Int64("n", 0, "stop after `COUNT` records; 0 for no limit")
	rate := fs.Float64("rate", pipeline.DefaultTapRate, "take at most `N` records a second")
	if code, ok := c.parse(fs, args, "weir tap COMPONENT [-a ADDRESS] [-n COUNT] [-rate N]", tapDoc); !ok {
		return code
	}
	switch {
	case fs.NArg() == 0:
		return c.usageErr(fs.Name(), "name the component to tap: a source, transform, route output or sink")
	case fs.NArg() > 1:
		return c.usageErr(fs.Name(), fmt.Sprintf("one component at a time, not %q", strings.Join(fs.Args(), " ")))
	case *count < 0:
		return c.usageErr(fs.Name(), fmt.Sprintf("-n %d: give a count of records, or 0 for no limit", *count))
	case !(*rate > 0) || *rate > pipeline.MaxTapRate:
		return c.usageErr(fs.Name(), fmt.Sprintf("-rate %v: give records a second, more than 0 and at most %d", *rate, pipeline.MaxTapRate))
	}
	q := url.Values{"rate": {strconv.FormatFloat(*rate, 'f', -1, 64)}}
	if *count > 0 {
		q.Set("count", strconv.FormatInt(*count, 10))
	}
	u := "http://" + strings.TrimPrefix(*addr, "http://") + "/api/v1/tap/" + url.PathEscape(fs.Arg(0)) + "?" + q.Encode()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := c.signals
	if sigs == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-stopped:
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return c.usageErr(fs.Name(), err.Error())
	}
	withToken(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(c.stderr, "weir: tap: %v (is weir running, with its endpoints at %s?)\n", err, *addr)
		return ExitRuntime
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(c.stderr, "weir: tap: %s: %s\n", resp.Status, strings.TrimSpace(string(b)))
		return ExitRuntime
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	out := bufio.NewWriter(c.stdout)
	defer out.Flush()
	for sc.Scan() {
		line := sc.Bytes()
		var end struct {
			End     *string `json:"tap_end"`
			Sent    int64   `json:"sent"`
			Dropped int64   `json:"dropped"`
		}
		// The server writes its last line so; a record's line starts with
		// its component.
		if bytes.HasPrefix(line, []byte(`{"tap_end":`)) && json.Unmarshal(line, &end) == nil && end.End != nil {
			out.Flush()
			fmt.Fprintf(c.stderr, "weir: tap ended (%s): %s", *end.End, words.Plural(end.Sent, "record"))
			if end.Dropped > 0 {
				fmt.Fprintf(c.stderr, ", %d more sampled but dropped: this reader was too slow for -rate", end.Dropped)
			}
			fmt.Fprintln(c.stderr)
			return ExitOK
		}
		out.Write(line)
		out.WriteByte('\n')
		out.Flush() // each record as it comes: a tap is watched live

	}
	out.Flush()
	if ctx.Err() != nil {
		return ExitOK // interrupted
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(c.stderr, "weir: tap: %v\n", err)
	} else {
		fmt.Fprintln(c.stderr, "weir: tap: the connection closed (the pipeline stopped or reloaded)")
	}
	return ExitRuntime
}
