package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
	"github.com/weir-etl/weir/source/generate"
)

// stuckCommits is a generate source whose Commit does not answer while it is
// frozen, as a broker stopped mid-request does: it returns only when thawed
// (and then commits) or when its context ends (and then fails, committing
// nothing).
type stuckCommits struct {
	*generate.Source
	thaw     chan struct{}  // closed to thaw
	entered  chan time.Time // when the first frozen commit began
	timeouts atomic.Int32   // frozen commits ended by their context
	mu       sync.Mutex
	deadline time.Duration // the longest deadline a commit's context had from its call
}

func newStuckCommits(src *generate.Source) *stuckCommits {
	return &stuckCommits{Source: src, thaw: make(chan struct{}), entered: make(chan time.Time, 1)}
}

func (s *stuckCommits) Commit(ctx context.Context, cs []connector.Commit) error {
	if d, ok := ctx.Deadline(); ok {
		s.mu.Lock()
		s.deadline = max(s.deadline, time.Until(d))
		s.mu.Unlock()
	}
	select {
	case <-s.thaw:
	default:
		select {
		case s.entered <- time.Now():
		default:
		}
		select {
		case <-s.thaw:
		case <-ctx.Done():
			s.timeouts.Add(1)
			return ctx.Err()
		}
	}
	return s.Source.Commit(ctx, cs)
}

// warnLog records every warning with its attributes and the time it was
// logged.
type warnLog struct {
	*warnStore
	attrs string // of WithAttrs
}

type warnStore struct {
	mu    sync.Mutex
	at    []time.Time
	lines []string // message, then key=value attributes
}

func newWarnLog() *warnLog { return &warnLog{warnStore: &warnStore{}} }

func (h *warnLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level != slog.LevelWarn {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message + h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at = append(h.at, time.Now())
	h.lines = append(h.lines, b.String())
	return nil
}
func (h *warnLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := &warnLog{warnStore: h.warnStore, attrs: h.attrs}
	for _, a := range as {
		c.attrs += " " + a.String()
	}
	return c
}
func (h *warnLog) WithGroup(string) slog.Handler { return h }

// first returns the first warning that starts with prefix, and when it was
// logged.
func (h *warnStore) first(prefix string) (time.Time, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, l := range h.lines {
		if strings.HasPrefix(l, prefix) {
			return h.at[i], l, true
		}
	}
	return time.Time{}, "", false
}

func (h *warnStore) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func (h *warnStore) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines...)
}

// stallMargin is what a busy machine may add to stall_warning before a
// stall shows: scheduling, not the design, which shows it at stall_warning.
const stallMargin = 3 * time.Second

// Guarantee: a commit that does not answer is a stall, seen from outside
// within stall_warning although the checkpointer goroutine waits in it:
// /readyz turns 503 naming the source and the commit, the warning is logged
// once, and /debug/stalls lists the waiting commit with its age counted to
// now. When the commit answers, the pipeline is ready again and goes on.
// Before, the stall refresh ran on the goroutine that waited in the commit:
// /readyz answered 200 and the stalls stayed as they were until the commit
// returned.
func TestBlockedCommitIsAStallWithinStallWarning(t *testing.T) {
	const warn = 2 * time.Second
	src := newStuckCommits(gen(t, 0, 1, 20))
	bh := blackhole.New()
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: bh})
	sp.Checkpoint.StallWarning = warn
	sp.Checkpoint.CommitTimeout = time.Hour // the commit waits: nothing ends it but the thaw
	sp.Metrics.Address = "127.0.0.1:0"
	logs := newWarnLog()
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(logs)), pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	var t0 time.Time
	select {
	case t0 = <-src.entered:
	case err := <-done:
		t.Fatalf("Run returned before any commit: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no commit within 30s")
	}
	limit := t0.Add(warn + stallMargin)

	// /readyz: 503, naming the source's commit.
	var ready pipeline.Readiness
	for {
		code, body := httpGet(t, base+"/readyz")
		ready = pipeline.Readiness{}
		if err := json.Unmarshal([]byte(body), &ready); err != nil {
			t.Fatalf("/readyz: %v: %s", err, body)
		}
		if code == 503 && hasReason(ready, "source", "commit") {
			t.Logf("/readyz 503 %v after the commit began (stall_warning %v): %s", time.Since(t0).Round(time.Millisecond), warn, body)
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("/readyz %d %s %v after a commit that does not answer, stall_warning %v: want 503 naming the source's commit", code, body, time.Since(t0).Round(time.Millisecond), warn)
		}
		time.Sleep(20 * time.Millisecond) // polling an external view
	}
	if time.Since(t0) < warn-100*time.Millisecond {
		t.Errorf("/readyz 503 after %v, before stall_warning %v", time.Since(t0), warn)
	}

	// The warning, once, within stall_warning.
	for {
		if at, msg, ok := logs.first("commit stalled"); ok {
			if d := at.Sub(t0); d > warn+stallMargin {
				t.Errorf("warning %q logged %v after the commit began, want within stall_warning %v", msg, d, warn)
			}
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("no warning %v after a commit that does not answer (stall_warning %v); warnings: %v", time.Since(t0), warn, logs.all())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// /debug/stalls: the waiting commit, its age counted to now.
	var stalls []pipeline.Stall
	_, body := httpGet(t, base+"/debug/stalls")
	if err := json.Unmarshal([]byte(body), &stalls); err != nil {
		t.Fatalf("/debug/stalls: %v: %s", err, body)
	}
	var commit *pipeline.Stall
	for i := range stalls {
		if stalls[i].Status == "commit_waiting" {
			commit = &stalls[i]
		}
	}
	if commit == nil || commit.Source != "gen" || time.Duration(commit.AgeMillis)*time.Millisecond < warn {
		t.Fatalf("/debug/stalls %s: want the waiting commit of source gen, at least %v old", body, warn)
	}
	age1 := commit.AgeMillis
	time.Sleep(300 * time.Millisecond) // the age must grow with the clock, not with refreshes
	_, body = httpGet(t, base+"/debug/stalls")
	stalls = nil
	if err := json.Unmarshal([]byte(body), &stalls); err != nil {
		t.Fatalf("/debug/stalls: %v: %s", err, body)
	}
	grew := false
	for _, st := range stalls {
		grew = grew || (st.Status == "commit_waiting" && st.AgeMillis >= age1+250)
	}
	if !grew {
		t.Errorf("/debug/stalls %s 300ms later: want the waiting commit's age grown from %dms by the time passed", body, age1)
	}

	// The status: the source failing, saying why, although its
	// checkpointer cannot take a fresh snapshot.
	st, raw := getStatus(t, base, "")
	var node *pipeline.StatusNode
	for i := range st.Nodes {
		if st.Nodes[i].Name == "gen" {
			node = &st.Nodes[i]
		}
	}
	if node == nil || node.State != "failing" || !strings.Contains(node.Error, "commit") {
		t.Errorf("status %s: want the source gen failing, naming its commit", raw)
	}

	// Thawed: the commit answers, the pipeline is ready again and commits on.
	close(src.thaw)
	before := src.Offsets().Get("gen/0")
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGet(t, base+"/readyz")
		if code == 200 && src.Offsets().Get("gen/0") > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the thaw: /readyz %d %s, committed %d: want ready and committing", code, body, src.Offsets().Get("gen/0"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := logs.count("commit stalled"); n != 1 {
		t.Errorf("%d commit stall warnings for one stall, want 1", n)
	}
	if c, f := src.Offsets().Get("gen/0"), bh.Flushed(); int64(c) > f {
		t.Errorf("committed %d, past the %d records made durable", c, f)
	}
}

func hasReason(r pipeline.Readiness, kind, word string) bool {
	for _, x := range r.Reasons {
		if x.Kind == kind && strings.Contains(x.Message, word) {
			return true
		}
	}
	return false
}

// Guarantee: checkpoint.commit_timeout ends a commit that does not answer:
// the commit's context has that deadline, the commit counts as failed
// (nothing is marked committed, the committed position stays) and is retried
// with backoff; once the source answers again the run commits everything
// and ends. Before, Commit had no deadline of its own and the checkpointer
// waited in it as long as the source did.
func TestCommitTimeoutEndsABlockedCommit(t *testing.T) {
	const n = 1000
	src := newStuckCommits(gen(t, n, 1, 20))
	bh := blackhole.New()
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: bh})
	sp.Checkpoint.CommitTimeout = 200 * time.Millisecond
	sp.Checkpoint.StallWarning = time.Hour
	sp.Metrics.Address = "127.0.0.1:0"
	logs := &countingLog{}
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(context.Background(), sp, pipeline.WithLogger(slog.New(logs)), pipeline.WithListening(func(a string) { addr <- a }))
	}()
	base := "http://" + <-addr
	deadline := time.Now().Add(30 * time.Second)
	for src.timeouts.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d frozen commits ended after 30s with commit_timeout 200ms, want 2 (one, and its retry)", src.timeouts.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	src.mu.Lock()
	d := src.deadline
	src.mu.Unlock()
	if d <= 0 || d > 200*time.Millisecond {
		t.Errorf("a commit's context had %v left at its call, want at most commit_timeout 200ms", d)
	}
	// Timed out commits mark nothing committed.
	_, body := httpGet(t, base+"/metrics")
	if c, ok := metric(body, "weir_partition_committed_position", "source", "gen", "partition", "gen/0"); !ok || c != 0 {
		t.Errorf("committed position %v (present %v) after commits that timed out, want 0", c, ok)
	}
	if w, ok := metric(body, "weir_partition_watermark_position", "source", "gen", "partition", "gen/0"); ok && int64(w) > bh.Flushed() {
		t.Errorf("watermark %v past the %d records made durable", w, bh.Flushed())
	}
	if logs.count("commit failed; retrying with backoff") == 0 {
		t.Error("a commit that timed out was not logged as failed")
	}
	close(src.thaw)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end after the source answered again")
	}
	if got := src.Offsets().Get("gen/0"); got != n {
		t.Errorf("committed %d, want %d", got, n)
	}
	if bh.Flushed() != n {
		t.Errorf("flushed %d, want %d", bh.Flushed(), n)
	}
}

// Guarantee: a sink with on_failure dead_letter that keeps failing is
// logged once when it has failed for stall_warning, as docs/config.md says:
// its records go to the dead letter sink, so no partition stalls and no
// partition warning names it. Before, only the failed writes were logged, at
// doubling counts, and never the stall.
func TestDeadLetterSinkFailingPastStallWarningIsLogged(t *testing.T) {
	src := gen(t, 0, 1, 20)
	dead := &conformance.MemSink{}
	sp := fastSpec(src,
		pipeline.SinkSpec{Name: "lake", Inputs: []string{"gen"}, Sink: brokenSink(errors.New("disk quota exceeded")),
			OnFailure: pipeline.DeadLetter, DeadLetter: "dead"},
		pipeline.SinkSpec{Name: "dead", Sink: dead})
	const warn = 300 * time.Millisecond
	sp.Checkpoint.StallWarning = warn
	logs := newWarnLog()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- pipeline.Run(ctx, sp, pipeline.WithLogger(slog.New(logs))) }()
	deadline := start.Add(30 * time.Second)
	for logs.count("sink failing") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no warning for a dead_letter sink failing for 30s, stall_warning %v; warnings: %v", warn, logs.all())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, msg, _ := logs.first("sink failing")
	if !strings.Contains(msg, "lake") || !strings.Contains(msg, "disk quota exceeded") {
		t.Errorf("warning %q: want the sink lake and its error", msg)
	}
	// Still failing well past it: logged once for the one run of failures.
	for len(dead.Values()) < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters after 30s", len(dead.Values()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * warn) // more time for a second warning to show, if there were one
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := logs.count("sink failing"); n != 1 {
		t.Errorf("%d sink failing warnings for one run of failures, want 1: %v", n, logs.all())
	}
}
