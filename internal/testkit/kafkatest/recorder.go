package kafkatest

import (
	"context"
	"fmt"
	"sync"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
)

// Event is one thing a Recorder saw pass between the runtime and a source.
type Event struct {
	// Op is "assign" (Host.Assign), "revoking" (Host.Revoke called),
	// "revoked" (Host.Revoke returned), "lost" (Host.Lost), "commit" (a
	// Source.Commit that succeeded), "commit-failed" or "seek".
	Op   string
	Name string // the partition's name
	// Pos is an assign's start, a commit's position or a seek's target; -1
	// otherwise.
	Pos checkpoint.Position
}

func (e Event) String() string { return fmt.Sprintf("%s %s@%d", e.Op, e.Name, e.Pos) }

// Recorder wraps a source that runs under the real runtime and records, in
// order, the Host calls the source makes and the Commit and Seek calls the
// runtime makes, so that tests can say what was committed and when.
type Recorder struct {
	connector.Source

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every event
	events  []Event
	names   map[checkpoint.Partition]string
	revokes [][]string // the partitions of each Host.Revoke call
}

// NewRecorder wraps src.
func NewRecorder(src connector.Source) *Recorder {
	return &Recorder{Source: src, changed: make(chan struct{}), names: map[checkpoint.Partition]string{}}
}

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Recorder) name(p checkpoint.Partition) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.names[p]; ok {
		return n
	}
	return fmt.Sprint(p)
}

// Open implements connector.Source, handing the source a recording Host.
func (r *Recorder) Open(ctx context.Context, h connector.Host) error {
	return r.Source.Open(ctx, &recHost{Host: h, r: r})
}

// Commit implements connector.Source.
func (r *Recorder) Commit(ctx context.Context, commits []connector.Commit) error {
	err := r.Source.Commit(ctx, commits)
	op := "commit"
	if err != nil {
		op = "commit-failed"
	}
	for _, c := range commits {
		r.add(Event{op, r.name(c.Partition), c.Position})
	}
	return err
}

// Seek implements connector.Source.
func (r *Recorder) Seek(ctx context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	r.add(Event{"seek", r.name(p), pos})
	return r.Source.Seek(ctx, p, pos)
}

// Events returns the events so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// RevokeCalls returns the partitions of each Host.Revoke call the source
// made, by name, in order.
func (r *Recorder) RevokeCalls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.revokes))
	for i, c := range r.revokes {
		out[i] = append([]string(nil), c...)
	}
	return out
}

// Find returns the events with op for the partition name ("" for any).
func (r *Recorder) Find(op, name string) []Event {
	var out []Event
	for _, e := range r.Events() {
		if e.Op == op && (name == "" || e.Name == name) {
			out = append(out, e)
		}
	}
	return out
}

// WaitFor blocks until cond, evaluated after every event, holds, or ctx is
// done.
func (r *Recorder) WaitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; events: %v", what, ctx.Err(), r.Events())
		}
	}
}

// recHost is the runtime's Host as the wrapped source sees it.
type recHost struct {
	connector.Host
	r *Recorder
}

func (h *recHost) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	p := h.Host.Assign(name, start)
	h.r.mu.Lock()
	h.r.names[p] = name
	h.r.mu.Unlock()
	h.r.add(Event{"assign", name, start})
	return p
}

func (h *recHost) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = h.r.name(p)
	}
	h.r.mu.Lock()
	h.r.revokes = append(h.r.revokes, names)
	h.r.mu.Unlock()
	for _, name := range names {
		h.r.add(Event{"revoking", name, -1})
	}
	err := h.Host.Revoke(ctx, ps...)
	for _, p := range ps {
		h.r.add(Event{"revoked", h.r.name(p), -1})
	}
	return err
}

func (h *recHost) Lost(ps ...checkpoint.Partition) {
	h.Host.Lost(ps...)
	for _, p := range ps {
		h.r.add(Event{"lost", h.r.name(p), -1})
	}
}
