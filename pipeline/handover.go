package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/weir-etl/weir/connector"
)

// Handover carries sources from one run of a pipeline to the next, for a
// reload: a source whose settings did not change is detached at the end of
// the running run instead of closed, and the next run reattaches it instead
// of opening the new configuration's instance, so that it keeps what it owns
// (a Kafka member keeps its group membership and partitions). Only a source
// that implements connector.Detacher can be handed on; the others are closed
// and opened as in any stop and start.
//
// Pass the same Handover to every run with WithHandover. Before stopping a
// run for a reload, name the sources to hand on with Keep; the run detaches
// them only when it stops cleanly (no failure, nothing left behind by its
// final commit), and the next run takes them. Close the Handover when no run
// follows, to close what is still detached.
type Handover struct {
	mu   sync.Mutex
	keep map[string]bool             // asked of the running run
	kept map[string]connector.Source // detached, waiting for the next run
}

// NewHandover returns an empty Handover.
func NewHandover() *Handover {
	return &Handover{keep: map[string]bool{}, kept: map[string]connector.Source{}}
}

// WithHandover makes the run hand sources on to, and take them from, h.
func WithHandover(h *Handover) Option { return func(o *options) { o.handover = h } }

// Keep asks the running run to hand the named sources on when it stops,
// replacing what an earlier Keep asked.
func (h *Handover) Keep(names ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.keep)
	for _, n := range names {
		h.keep[n] = true
	}
}

// Kept returns the names of the detached sources waiting for the next run,
// sorted.
func (h *Handover) Kept() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.kept))
	for n := range h.kept {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Close closes every source still detached.
func (h *Handover) Close(ctx context.Context) error {
	h.mu.Lock()
	kept := h.kept
	h.kept = map[string]connector.Source{}
	clear(h.keep)
	h.mu.Unlock()
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(kept)) {
		if err := kept[n].Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("pipeline: source %s: close: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// wants reports whether the running run should hand the source on.
func (h *Handover) wants(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keep[name]
}

// put keeps a detached source for the next run.
func (h *Handover) put(name string, src connector.Source) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kept[name] = src
}

// begin starts a run: nothing is asked of it yet.
func (h *Handover) begin() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.keep)
}

// take returns the detached source called name, if any, and forgets it.
func (h *Handover) take(name string) connector.Source {
	h.mu.Lock()
	defer h.mu.Unlock()
	src, ok := h.kept[name]
	if !ok {
		return nil
	}
	delete(h.kept, name)
	return src
}

// SameSource reports whether a reload may hand the running source old on in
// place of new: the same name, type and in-flight limits, settings known and
// equal, and a source that can be detached.
func SameSource(old, new SourceSpec) bool {
	if _, ok := old.Source.(connector.Detacher); !ok {
		return false
	}
	return old.Name == new.Name &&
		old.Settings != nil && new.Settings != nil &&
		reflect.TypeOf(old.Source) == reflect.TypeOf(new.Source) &&
		old.MaxInFlightBatches == new.MaxInFlightBatches &&
		old.MaxInFlightBytes == new.MaxInFlightBytes &&
		reflect.DeepEqual(old.Settings, new.Settings)
}

// takeHandedOn gives each source the run before handed on its place: the
// new configuration's instance, never opened, is closed unused.
func (rt *runtime) takeHandedOn(ctx context.Context) {
	h := rt.o.handover
	if h == nil {
		return
	}
	for _, s := range rt.sources {
		kept := h.take(s.spec.Name)
		if kept == nil {
			continue
		}
		if err := s.src.Close(context.WithoutCancel(ctx)); err != nil {
			s.log.Warn("closing the unused instance of a source handed on", "err", err)
		}
		s.src, s.spec.Source, s.reattach = kept, kept, true
		rt.g.spec.Sources[s.idx].Source = kept
		s.log.Info("source handed on from the previous run: it keeps what it owns")
	}
}

// closeHandedOn closes the sources taken from the run before, when this run
// fails before it started them.
func (rt *runtime) closeHandedOn(ctx context.Context) {
	for _, s := range rt.sources {
		if s.reattach {
			if err := s.src.Close(context.WithoutCancel(ctx)); err != nil {
				s.log.Warn("closing a source handed on", "err", err)
			}
		}
	}
}

// handOn detaches s for the next run when the Handover asks for it, and
// reports whether it did; a source it could not detach is left to Close.
func (rt *runtime) handOn(ctx context.Context, s *sourceRunner) bool {
	h := rt.o.handover
	if h == nil || !h.wants(s.spec.Name) || !s.opened.Load() {
		return false
	}
	d, ok := s.src.(connector.Detacher)
	if !ok {
		return false
	}
	if err := d.Detach(ctx); err != nil {
		s.log.Warn("source not handed on: detaching failed; closing it", "err", err)
		return false
	}
	h.put(s.spec.Name, s.src)
	return true
}

// UnchangedSources names the sources of next that a reload can hand on
// from the running configuration: same name and settings (SameSource).
func UnchangedSources(running, next *Spec) []string {
	keep := []string{}
	for _, n := range next.Sources {
		for _, o := range running.Sources {
			if o.Name == n.Name && SameSource(o, n) {
				keep = append(keep, n.Name)
			}
		}
	}
	return keep
}
