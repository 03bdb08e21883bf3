package file

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/statestore"
)

// testHost is the runtime's side of connector.Host, recording what the source
// asked for. Revoke calls onRevoke (the harness commits the partitions' last
// batch ends there, as the runtime does once they are delivered) and forgets
// them.
type testHost struct {
	next     checkpoint.Partition
	names    map[checkpoint.Partition]string
	starts   map[checkpoint.Partition]checkpoint.Position
	live     map[checkpoint.Partition]bool // assigned and not revoked or lost
	revoked  []string
	skipped  map[string]int64
	unread   map[string]int64
	onRevoke func(ps []checkpoint.Partition) error
	log      *syncBuffer
}

func newHost() *testHost {
	return &testHost{names: map[checkpoint.Partition]string{}, starts: map[checkpoint.Partition]checkpoint.Position{},
		live: map[checkpoint.Partition]bool{}, skipped: map[string]int64{}, unread: map[string]int64{}, log: &syncBuffer{}}
}

func (h *testHost) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	h.next++
	h.names[h.next] = name
	h.starts[h.next] = start
	h.live[h.next] = true
	return h.next
}

func (h *testHost) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	var err error
	if h.onRevoke != nil {
		err = h.onRevoke(ps)
	}
	for _, p := range ps {
		h.revoked = append(h.revoked, h.names[p])
		delete(h.live, p)
	}
	return err
}

func (h *testHost) Lost(ps ...checkpoint.Partition) {
	for _, p := range ps {
		delete(h.live, p)
	}
}

func (h *testHost) Skip(reason string, n int64) { h.skipped[reason] += n }

func (h *testHost) Unread(reason string, n int64) { h.unread[reason] += n }

func (h *testHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(h.log, nil)) }

// syncBuffer is a log buffer safe for the source's goroutines and the test.
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

// harness opens a source over dir and remembers what it read.
type harness struct {
	t    *testing.T
	src  *Source
	host *testHost
	// lines read, by partition name, and each partition's last batch end
	lines map[string][]string
	ends  map[checkpoint.Partition]checkpoint.Position
}

func testConfig(dir string, mutate func(*Config)) *Config {
	c := NewConfig()
	c.Paths = []string{filepath.Join(dir, "*.log")}
	c.DataDir = filepath.Join(dir, "state")
	c.Format = "lines"
	c.PollInterval = time.Millisecond
	c.RotateWait = 0
	if mutate != nil {
		mutate(c)
	}
	return c
}

func open(t *testing.T, cfg *Config) *harness {
	t.Helper()
	src, err := New("in", cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, src: src, host: newHost(), lines: map[string][]string{}, ends: map[checkpoint.Partition]checkpoint.Position{}}
	h.host.onRevoke = func(ps []checkpoint.Partition) error {
		var cs []connector.Commit
		for _, p := range ps {
			if e, ok := h.ends[p]; ok {
				cs = append(cs, connector.Commit{Partition: p, Position: e})
			}
		}
		if len(cs) == 0 {
			return nil
		}
		return src.Commit(context.Background(), cs)
	}
	if err := src.Open(context.Background(), h.host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close(context.Background()) })
	return h
}

// poll returns one batch, failing the test if none comes within a bound (tail
// mode polls the file every millisecond until the data is there).
func (h *harness) poll() (connector.Batch, error) {
	h.t.Helper()
	return h.pollWithin(10 * time.Second)
}

// pollFor polls once for at most d; a Poll that finds nothing in that time
// returns context.DeadlineExceeded.
func (h *harness) pollFor(d time.Duration) error {
	h.t.Helper()
	_, err := h.pollWithin(d)
	return err
}

func (h *harness) pollWithin(d time.Duration) (connector.Batch, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var b connector.Batch
	err := h.src.Poll(ctx, &b)
	if err == nil {
		name := h.host.names[b.Partition]
		for _, r := range b.Records {
			v, err := r.Value()
			if err != nil {
				h.t.Fatal(err)
			}
			h.lines[name] = append(h.lines[name], string(v))
		}
		h.ends[b.Partition] = b.End
	}
	return b, err
}

// drain polls until end of input (mode once).
func (h *harness) drain() {
	h.t.Helper()
	for {
		_, err := h.poll()
		if errors.Is(err, connector.ErrEndOfInput) {
			return
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

// commitAll commits every partition's last batch end.
func (h *harness) commitAll() {
	h.t.Helper()
	var cs []connector.Commit
	for p, e := range h.ends {
		cs = append(cs, connector.Commit{Partition: p, Position: e})
	}
	if err := h.src.Commit(context.Background(), cs); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) close() {
	h.t.Helper()
	if err := h.src.Close(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// only returns the lines of the single partition read.
func (h *harness) only() []string {
	h.t.Helper()
	if len(h.lines) != 1 {
		h.t.Fatalf("read %d partitions, want 1: %v", len(h.lines), h.lines)
	}
	for _, l := range h.lines {
		return l
	}
	return nil
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func join(l []string) string { return strings.Join(l, ",") }

func openStore(t *testing.T, s *Source) (*statestore.Store, error) {
	t.Helper()
	return statestore.Open(StatePath(s.cfg.DataDir, s.name), statestore.Options{})
}

// lastWritten sets the modification time of path to ago before now: the
// file has not changed since, as a rotated file that is done.
func lastWritten(t *testing.T, path string, ago time.Duration) {
	t.Helper()
	when := time.Now().Add(-ago)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}
