// Package kafkatest helps test weir's Kafka connectors: a connector.Host that
// records what a source tells it, a poll loop, and the address of a real
// broker for integration tests.
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// BrokersEnv names the variable holding a real broker's address.
const BrokersEnv = "WEIR_KAFKA_BROKERS"

// Brokers returns the real broker's address from WEIR_KAFKA_BROKERS, and skips
// the test when it is unset (start one with `bash .ci/kafka.sh start`).
func Brokers(t testing.TB) []string {
	t.Helper()
	b := os.Getenv(BrokersEnv)
	if b == "" {
		t.Skipf("%s is not set; start a broker with .ci/kafka.sh start and export %s=127.0.0.1:9092", BrokersEnv, BrokersEnv)
	}
	return []string{b}
}

// Call is one call a source made to the Host.
type Call struct {
	Op   string // "assign", "revoke" or "lost"
	Name string
	// Pos is the start of an assign, and the position committed by a revoke
	// (-1 when it had nothing to commit).
	Pos checkpoint.Position
}

func (c Call) String() string { return fmt.Sprintf("%s %s@%d", c.Op, c.Name, c.Pos) }

// Host is a connector.Host that records calls. Like the runtime, its Revoke
// commits the partitions' delivered positions through the source's Commit
// before forgetting them; tests mark positions delivered with Deliver.
//
// Like the runtime, it numbers partitions from 0, in the order they are first
// assigned, and keeps a name's id for good: a source that takes the zero
// value of an id for "none" meets a real partition 0 here. It also records
// every call that names a partition it does not hold (a Revoke or Lost of a
// partition never assigned, or already given up), as Misuse reports.
type Host struct {
	// Source receives Revoke's final commit. Set it before Open.
	Source connector.Source
	// Log, if set, is what Logger returns.
	Log *slog.Logger

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	calls     []Call
	ids       map[string]checkpoint.Partition
	names     map[checkpoint.Partition]string
	owned     map[checkpoint.Partition]bool
	delivered map[checkpoint.Partition]checkpoint.Position
	records   map[string][]int64 // offsets handed out, by partition name
	revokeErr error
	revokes   [][]string // the partitions of each Revoke call
	misuse    []error
}

// NewHost returns an empty Host.
func NewHost() *Host {
	return &Host{
		changed:   make(chan struct{}),
		ids:       map[string]checkpoint.Partition{},
		names:     map[checkpoint.Partition]string{},
		owned:     map[checkpoint.Partition]bool{},
		delivered: map[checkpoint.Partition]checkpoint.Position{},
		records:   map[string][]int64{},
	}
}

func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Assign implements connector.Host. A name keeps its id across assignments.
func (h *Host) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[name]
	if !ok {
		id = checkpoint.Partition(len(h.ids))
		h.ids[name] = id
		h.names[id] = name
	}
	h.owned[id] = true
	delete(h.delivered, id)
	h.calls = append(h.calls, Call{"assign", name, start})
	h.notifyLocked()
	return id
}

// Revoke implements connector.Host: for each partition it commits the
// delivered position, if any, through Source.Commit, then forgets it.
func (h *Host) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	h.mu.Lock()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = h.names[p]
		h.checkOwnedLocked("Revoke", p)
	}
	h.revokes = append(h.revokes, names)
	h.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, h.revoke(ctx, p))
	}
	return errors.Join(errs...)
}

func (h *Host) checkOwnedLocked(op string, p checkpoint.Partition) {
	if name, ok := h.names[p]; !ok {
		h.misuse = append(h.misuse, fmt.Errorf("%s of partition %d, which was never assigned", op, p))
	} else if !h.owned[p] {
		h.misuse = append(h.misuse, fmt.Errorf("%s of %s (partition %d), which is not held", op, name, p))
	}
}

func (h *Host) revoke(ctx context.Context, p checkpoint.Partition) error {
	h.mu.Lock()
	pos, ok := h.delivered[p]
	name := h.names[p]
	h.mu.Unlock()
	var err error
	if ok {
		err = h.Source.Commit(ctx, []connector.Commit{{Partition: p, Position: pos}})
	} else {
		pos = -1
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && h.revokeErr == nil {
		h.revokeErr = err
	}
	delete(h.owned, p)
	delete(h.delivered, p)
	h.calls = append(h.calls, Call{"revoke", name, pos})
	h.notifyLocked()
	return err
}

// Lost implements connector.Host.
func (h *Host) Lost(ps ...checkpoint.Partition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		h.checkOwnedLocked("Lost", p)
		delete(h.owned, p)
		delete(h.delivered, p)
		h.calls = append(h.calls, Call{"lost", h.names[p], -1})
	}
	h.notifyLocked()
}

// Skip implements connector.Host; the Kafka source never skips.
func (h *Host) Skip(string, int64) {}

// Unread implements connector.Host; the Kafka source never leaves input unread.
func (h *Host) Unread(string, int64) {}

// Logger implements connector.Host: Log if set, else a logger that discards
// unless WEIR_TEST_LOG is set.
func (h *Host) Logger() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	if os.Getenv("WEIR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Deliver records b as handed out and delivered: its records' offsets are
// kept, and its End becomes the partition's position for Revoke and CommitAll.
func (h *Host) Deliver(b *connector.Batch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	name := h.names[b.Partition]
	for i := range b.Records {
		h.records[name] = append(h.records[name], b.Records[i].Origin.Offset)
	}
	if h.owned[b.Partition] {
		h.delivered[b.Partition] = b.End
	}
	h.notifyLocked()
}

// CommitAll commits every owned partition's delivered position.
func (h *Host) CommitAll(ctx context.Context) error {
	h.mu.Lock()
	var cs []connector.Commit
	for p, pos := range h.delivered {
		cs = append(cs, connector.Commit{Partition: p, Position: pos})
	}
	h.mu.Unlock()
	return h.Source.Commit(ctx, cs)
}

// ID returns the partition id of name, and whether it was ever assigned.
func (h *Host) ID(name string) (checkpoint.Partition, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[name]
	return id, ok
}

// Calls returns the calls so far.
func (h *Host) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call(nil), h.calls...)
}

// Owned returns the names of the partitions currently owned, sorted.
func (h *Host) Owned() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for p := range h.owned {
		out = append(out, h.names[p])
	}
	sort.Strings(out)
	return out
}

// Offsets returns the offsets handed out for a partition, in order.
func (h *Host) Offsets(name string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int64(nil), h.records[name]...)
}

// Count returns how many records were handed out in all.
func (h *Host) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		n += len(r)
	}
	return n
}

// RevokeCalls returns the partitions of each Revoke call so far, by name.
func (h *Host) RevokeCalls() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([][]string, len(h.revokes))
	for i, r := range h.revokes {
		out[i] = append([]string(nil), r...)
	}
	return out
}

// Misuse returns the calls so far that named a partition the Host did not
// hold, or nil.
func (h *Host) Misuse() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return errors.Join(h.misuse...)
}

// RevokeErr returns the first error of a Revoke's commit.
func (h *Host) RevokeErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.revokeErr
}

// WaitFor blocks until cond, evaluated after every change to the Host, holds,
// or ctx is done. cond may call the Host's accessors.
func (h *Host) WaitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// PollLoop polls src on a new goroutine until ctx is done, delivering every
// batch to h. The returned function waits for the loop to end and returns
// the error that ended it (nil for ctx).
func PollLoop(ctx context.Context, src connector.Source, h *Host) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		var b connector.Batch
		for {
			err := src.Poll(ctx, &b)
			if err != nil {
				if ctx.Err() != nil {
					err = nil
				}
				done <- err
				return
			}
			h.Deliver(&b)
		}
	}()
	return func() error { return <-done }
}
