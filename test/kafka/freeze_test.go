//go:build integration

package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weir-etl/weir/internal/testkit/kafkatest"
	"github.com/weir-etl/weir/internal/testkit/weirtest"
)

// freezeYAML reads through a proxy (%[2]s) that the test freezes, and writes
// to the broker itself (%[1]s): only the source's side stops answering, its
// fetches, heartbeats and commits. The session outlasts the freeze, so the
// group keeps its partitions.
const freezeYAML = `
sources:
  in:
    type: kafka
    brokers: [%[2]q]
    group: %[3]s
    topics: [%[4]s]
    session_timeout: 45s
    rebalance_timeout: 60s
    max_poll_records: 500
sinks:
  out:
    type: kafka
    inputs: [in]
    brokers: [%[1]q]
    topic: %[5]s
    compression: none
    batch: { max_records: 2000, max_age: 50ms }
checkpoint:
  commit_interval: 100ms
  stall_warning: %[6]s
  shutdown_timeout: 15s
metrics:
  address: %[7]q
`

// freezeWarn is the stall_warning of the frozen broker runs; freezeMargin
// what a busy machine may add before the stall shows: the next commit
// interval, scheduling, the polling of /readyz.
const (
	freezeWarn   = 5 * time.Second
	freezeMargin = 3 * time.Second
)

// freezeResult is what a frozen broker run saw.
type freezeResult struct {
	to503, toWarn time.Duration // from the freeze; 0 when not seen in time
	reasons       string        // the body of the 503
	warnLine      string
	dups          int
}

// runFrozenBroker runs weir (bin, with env) reading 4 partitions of 50,000
// records through a proxy, freezes the proxy once a tenth is committed,
// watches /readyz and the log for freezeWarn+freezeMargin, thaws, and checks
// that the run commits everything and every record is in the output. It
// fails t for what a run must never do (exit, lose records); what it saw of
// the stall it returns.
func runFrozenBroker(t *testing.T, bin string, env []string) freezeResult {
	brokers := kafkatest.Brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := kafkatest.Client(t, brokers)
	const parts, perPart = 4, 50000
	in := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-freeze-in", parts)
	out := kafkatest.CreateTopic(ctx, t, cl, "weir-e2e-freeze-out", parts)
	group := "weir-e2e-" + in
	produce(ctx, t, cl, in, parts, perPart)
	px := kafkatest.NewProxy(t, brokers[0])
	addr := fmt.Sprintf("127.0.0.1:%d", kafkatest.FreePort(t))
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(freezeYAML, brokers[0], px.Addr, group, in, out, freezeWarn, addr))
	p := startWeir(t, bin, cfg, "w", env)
	s := &sampler{adm: kadm.NewClient(cl), group: group, in: in, out: out, inParts: parts, outPart: parts}
	const all = parts * perPart

	// Running and ready, a tenth committed: freeze, with most of the input
	// still to read, so that commits are due during the freeze.
	for {
		sm, err := s.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := readyz(addr)
		if done := total(sm.committed); done >= all/10 && code == http.StatusOK {
			if done == all {
				t.Fatal("everything was committed before the freeze: nothing left to stall")
			}
			break
		}
		select {
		case <-p.Done:
			t.Fatalf("weir exited: %v", p.Err)
		case <-ctx.Done():
			t.Fatalf("committed %v: %v", sm.committed, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling an external process
		}
	}
	px.Freeze()
	frozen := time.Now()
	t.Logf("proxy frozen")
	var res freezeResult
	for time.Since(frozen) < freezeWarn+freezeMargin && (res.to503 == 0 || res.toWarn == 0) {
		if res.to503 == 0 {
			if code, body := readyz(addr); code == http.StatusServiceUnavailable && strings.Contains(body, "commit") {
				res.to503, res.reasons = time.Since(frozen), body
			}
		}
		if res.toWarn == 0 {
			if l := logLine(p.Log, "level=WARN", "commit stalled"); l != "" {
				res.toWarn, res.warnLine = time.Since(frozen), l
			}
		}
		select {
		case <-p.Done:
			t.Fatalf("weir exited while the broker was frozen: %v", p.Err)
		case <-time.After(50 * time.Millisecond): // polling an external process
		}
	}
	px.Thaw()
	t.Logf("proxy thawed after %v", time.Since(frozen).Round(time.Millisecond))

	// Thawed: the run goes on, commits everything and is ready again.
	for {
		sm, err := s.take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		code, body := readyz(addr)
		if total(sm.committed) == all && code == http.StatusOK {
			break
		}
		select {
		case <-p.Done:
			t.Fatalf("weir exited after the thaw: %v", p.Err)
		case <-ctx.Done():
			t.Fatalf("after the thaw: committed %v of %d, /readyz %d %s: %v", sm.committed, all, code, body, ctx.Err())
		case <-time.After(50 * time.Millisecond): // polling an external process
		}
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("weir after SIGTERM: %v", err)
	}
	count := make([][]int, parts)
	for i := range count {
		count[i] = make([]int, perPart)
	}
	for _, r := range consumeAll(ctx, t, brokers, out) {
		count[r.src][r.srcOff]++
	}
	missing := 0
	for i := range count {
		for o, n := range count[i] {
			if n == 0 {
				missing++
				if missing <= 5 {
					t.Errorf("input record %d:%d is missing from the output", i, o)
				}
			}
			res.dups += max(n-1, 0)
		}
	}
	t.Logf("%d records, %d missing, %d duplicates", all, missing, res.dups)
	return res
}

// readyz returns /readyz's status and body (0 when it does not answer).
func readyz(addr string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// logLine returns the first line of the log at path holding every one of
// words, or "".
func logLine(path string, words ...string) string {
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return l
		}
	}
	return ""
}

// Guarantee: a broker that stops answering (a process under SIGSTOP, a
// network that drops everything) is a stall seen from outside within
// stall_warning: the source's commit does not answer, /readyz turns 503
// naming it and the warning is logged, although the checkpointer goroutine
// waits in that commit; after the thaw the run goes on, commits to the end
// and nothing is missing. Before, /readyz answered 200 and nothing was
// logged until the commit gave up.
func TestE2EFrozenBrokerIsAStall(t *testing.T) {
	res := runFrozenBroker(t, weirtest.BuildTemp(t, ""), nil)
	if res.to503 == 0 {
		t.Errorf("/readyz did not answer 503 naming the commit within %v of the freeze (stall_warning %v)", freezeWarn+freezeMargin, freezeWarn)
	} else {
		t.Logf("/readyz 503 %v after the freeze (stall_warning %v): %s", res.to503.Round(time.Millisecond), freezeWarn, strings.TrimSpace(res.reasons))
	}
	if res.toWarn == 0 {
		t.Errorf("no commit stall warning within %v of the freeze (stall_warning %v)", freezeWarn+freezeMargin, freezeWarn)
	} else {
		t.Logf("warning %v after the freeze: %s", res.toWarn.Round(time.Millisecond), res.warnLine)
	}
	var r struct {
		Reasons []struct{ Kind, Source, Message string } `json:"reasons"`
	}
	if res.reasons != "" {
		if err := json.Unmarshal([]byte(res.reasons), &r); err != nil || len(r.Reasons) == 0 || r.Reasons[0].Source != "in" {
			t.Errorf("/readyz body %s: want the reason naming the source in", res.reasons)
		}
	}
}

// The deliberately broken runtime (build tag unsafe_commit_stall,
// WEIR_UNSAFE_COMMIT_STALL=1: commits without a deadline, nobody watching
// the checkpointer goroutine, as before) must fail the test above: it shows
// neither the 503 nor the warning while the broker is frozen. It still loses
// nothing.
func TestE2EFrozenBrokerCatchesBlindCheckpointer(t *testing.T) {
	res := runFrozenBroker(t, weirtest.BuildTemp(t, "unsafe_commit_stall"), []string{"WEIR_UNSAFE_COMMIT_STALL=1"})
	if res.to503 != 0 || res.toWarn != 0 {
		t.Fatalf("the broken variant showed the stall (503 after %v, warning after %v): the test cannot tell it from the fixed runtime", res.to503, res.toWarn)
	}
	t.Logf("the broken variant: no 503 and no warning within %v of the freeze, as expected", freezeWarn+freezeMargin)
}
