package pipeline_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// heldSource is an endless one-partition source that, like a group member,
// owns its partition from Open to Close and can be handed from one run to
// the next. Its records are numbered by offset; it remembers the position
// committed last, and calls to it are counted.
type heldSource struct {
	mu        sync.Mutex
	host      connector.Host
	id        connector.Partition
	next      int64
	committed int64
	// A Host call after Detach breaks the contract.
	detached bool

	opens, reattaches, detaches, closes atomic.Int32
	misuse                              atomic.Value // string
}

func (s *heldSource) assign(h connector.Host) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.host, s.detached = h, false
	// From the committed position: what was read past it is read again.
	s.next = s.committed
	s.id = h.Assign("p", connector.Position(s.committed))
}

func (s *heldSource) Open(_ context.Context, h connector.Host) error {
	s.opens.Add(1)
	s.assign(h)
	return nil
}

func (s *heldSource) Reattach(_ context.Context, h connector.Host) error {
	s.reattaches.Add(1)
	s.assign(h)
	return nil
}

func (s *heldSource) Detach(context.Context) error {
	s.detaches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detached = true
	return nil
}

func (s *heldSource) Poll(ctx context.Context, b *connector.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detached {
		s.misuse.Store("Poll after Detach")
	}
	b.Reset()
	b.Partition = s.id
	for range 10 {
		r := record.New([]byte(strconv.FormatInt(s.next, 10)))
		r.Origin = record.Origin{Source: "held", Partition: "p", Offset: s.next}
		b.Records = append(b.Records, r)
		s.next++
	}
	b.End = connector.Position(s.next)
	return nil
}

func (s *heldSource) Commit(_ context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detached {
		s.misuse.Store("Commit after Detach")
	}
	for _, c := range cs {
		if c.Partition == s.id {
			s.committed = max(s.committed, int64(c.Position))
		}
	}
	return nil
}

func (s *heldSource) Seek(_ context.Context, _ connector.Partition, pos connector.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = int64(pos)
	return nil
}

func (s *heldSource) Close(context.Context) error {
	s.closes.Add(1)
	return nil
}

func (s *heldSource) committedAt() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// heldSpec is one run's spec: src into a MemSink sharing out's store.
func heldSpec(src connector.Source, out *conformance.MemSink, settings any) *pipeline.Spec {
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"held"}, Sink: out.Reopen()})
	sp.Sources[0].Name = "held"
	sp.Sources[0].Settings = settings
	return sp
}

// startRun runs sp until the returned stop is called, which returns Run's
// error.
func startRun(t *testing.T, sp *pipeline.Spec, opts ...pipeline.Option) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, append(opts, quiet)...) }()
	return func() error { cancel(); return <-done }
}

func waitCommitted(t *testing.T, src *heldSource, atLeast int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for src.committedAt() < atLeast {
		if time.Now().After(deadline) {
			t.Fatalf("committed %d after 10 s, want %d", src.committedAt(), atLeast)
		}
		time.Sleep(time.Millisecond) // polling the source's commits
	}
}

// Guarantee: a source a reload keeps is detached at the end of one run and
// reattached by the next, never closed and opened in between; the next
// run's own instance of it is closed unused; nothing is lost on the way;
// and the last run closes it.
func TestHandoverKeepsTheSource(t *testing.T) {
	out := &conformance.MemSink{}
	held := &heldSource{}
	h := pipeline.NewHandover()
	settings := map[string]int{"a": 1}

	stop := startRun(t, heldSpec(held, out, settings), pipeline.WithHandover(h))
	waitCommitted(t, held, 500)
	h.Keep("held")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if held.detaches.Load() != 1 || held.closes.Load() != 0 {
		t.Fatalf("after the first run: %d detaches, %d closes; want 1 and 0", held.detaches.Load(), held.closes.Load())
	}
	if got := h.Kept(); len(got) != 1 || got[0] != "held" {
		t.Fatalf("kept %v, want [held]", got)
	}

	fresh := &heldSource{}
	stop = startRun(t, heldSpec(fresh, out, settings), pipeline.WithHandover(h))
	from := held.committedAt()
	waitCommitted(t, held, from+500)
	if err := stop(); err != nil { // no Keep: nothing is handed on
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := [4]int32{held.opens.Load(), held.reattaches.Load(), held.detaches.Load(), held.closes.Load()}; got != [4]int32{1, 1, 1, 1} {
		t.Errorf("the kept source: opens, reattaches, detaches, closes = %v, want one of each", got)
	}
	if fresh.opens.Load() != 0 || fresh.closes.Load() != 1 {
		t.Errorf("the new run's own instance: %d opens, %d closes; want it closed unused", fresh.opens.Load(), fresh.closes.Load())
	}
	if m, _ := held.misuse.Load().(string); m != "" {
		t.Errorf("the source was used while detached: %s", m)
	}
	checkContiguous(t, out, held.committedAt())
}

// Guarantee: a run that does not stop cleanly hands nothing on: its kept
// source is closed, as without a reload.
func TestHandoverNotAfterAFailure(t *testing.T) {
	held := &heldSource{}
	h := pipeline.NewHandover()
	sp := heldSpec(held, &conformance.MemSink{}, 1)
	// The first flush waits until the run was asked to hand the source on
	// (as a reload asks while the run goes), then fails: the run halts.
	flushing, kept := make(chan struct{}), make(chan struct{})
	var once sync.Once
	sp.Sinks[0].Sink = &conformance.FaultSink{Sink: &conformance.MemSink{}, OnFlush: func() error {
		once.Do(func() { close(flushing); <-kept })
		return errors.New("flush refused")
	}}
	sp.Sinks[0].OnFailure = pipeline.Halt
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(context.Background(), sp, quiet, pipeline.WithHandover(h)) }()
	<-flushing
	h.Keep("held")
	close(kept)
	if err := <-done; err == nil {
		t.Fatal("the run did not fail")
	}
	if held.detaches.Load() != 0 || held.closes.Load() != 1 || len(h.Kept()) != 0 {
		t.Errorf("after a failed run: %d detaches, %d closes, kept %v; want it closed", held.detaches.Load(), held.closes.Load(), h.Kept())
	}
}

// checkContiguous checks that the sink holds every offset below upTo.
func checkContiguous(t *testing.T, out *conformance.MemSink, upTo int64) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range out.Values() {
		seen[string(v)] = true
	}
	for i := range upTo {
		if !seen[strconv.FormatInt(i, 10)] {
			t.Fatalf("offset %d committed but not in the sink (of %d committed)", i, upTo)
		}
	}
	t.Logf("%d offsets committed, %d values written", upTo, len(out.Values()))
}

// Guarantee: SameSource hands on only a source whose every setting is
// equal and which can be detached.
func TestSameSource(t *testing.T) {
	type cfg struct {
		Topics []string
		N      int
	}
	base := pipeline.SourceSpec{Name: "in", Source: &heldSource{}, Settings: &cfg{[]string{"a"}, 1}}
	for _, tc := range []struct {
		name string
		edit func(*pipeline.SourceSpec)
		want bool
	}{
		{"equal", func(*pipeline.SourceSpec) {}, true},
		{"a setting changed", func(s *pipeline.SourceSpec) { s.Settings = &cfg{[]string{"a", "b"}, 1} }, false},
		{"settings unknown", func(s *pipeline.SourceSpec) { s.Settings = nil }, false},
		{"renamed", func(s *pipeline.SourceSpec) { s.Name = "other" }, false},
		{"in-flight batches", func(s *pipeline.SourceSpec) { s.MaxInFlightBatches = 3 }, false},
		{"in-flight bytes", func(s *pipeline.SourceSpec) { s.MaxInFlightBytes = 3 }, false},
		{"another type", func(s *pipeline.SourceSpec) { s.Source = gen(t, 1, 1, 1) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := base
			n.Source = &heldSource{}
			n.Settings = &cfg{[]string{"a"}, 1}
			tc.edit(&n)
			if got := pipeline.SameSource(base, n); got != tc.want {
				t.Errorf("SameSource = %v, want %v", got, tc.want)
			}
		})
	}
	undetachable := pipeline.SourceSpec{Name: "in", Source: gen(t, 1, 1, 1), Settings: 1}
	if pipeline.SameSource(undetachable, undetachable) {
		t.Error("a source that cannot be detached is handed on")
	}
}

// openFails is a sink that cannot be opened.
type openFails struct{ conformance.MemSink }

func (*openFails) Open(context.Context) error { return errors.New("no such database") }

// Guarantee: a source taken from the run before is closed when the next run
// cannot start (a sink that does not open), never leaked.
func TestHandoverClosedWhenTheNextRunCannotStart(t *testing.T) {
	held := &heldSource{}
	h := pipeline.NewHandover()
	stop := startRun(t, heldSpec(held, &conformance.MemSink{}, 1), pipeline.WithHandover(h))
	waitCommitted(t, held, 10)
	h.Keep("held")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	sp := heldSpec(&heldSource{}, &conformance.MemSink{}, 1)
	sp.Sinks[0].Sink = &openFails{}
	if err := pipeline.Run(context.Background(), sp, quiet, pipeline.WithHandover(h)); err == nil {
		t.Fatal("the run started with a sink that does not open")
	}
	if held.closes.Load() != 1 || len(h.Kept()) != 0 {
		t.Errorf("%d closes, kept %v; want the source closed", held.closes.Load(), h.Kept())
	}
}
