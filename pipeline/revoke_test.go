package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/connector/conformance"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/record"
)

// twoParts is a finite source of two partitions, "a" and "b", of batches of
// ten records, polled in turn. At poll giveUpAt it gives "b" up, by Revoke or
// Lost, from inside Poll as a Kafka source does in a rebalance callback, and
// calls after; then it reads "a" alone to its end.
type twoParts struct {
	h        connector.Host
	ids      [2]checkpoint.Partition
	next     [2]int64
	aLimit   int64
	polls    int
	giveUpAt int
	lost     bool
	after    func()

	mu        sync.Mutex
	commits   []connector.Commit
	given     bool  // b was given up
	commitsAt int   // len(commits) when Revoke or Lost returned
	revokeErr error // what Revoke returned
	bLastEnd  int64 // End of the last batch of b polled
}

func (s *twoParts) Open(ctx context.Context, h connector.Host) error {
	s.h = h
	s.ids[0] = h.Assign("a", 0)
	s.ids[1] = h.Assign("b", 0)
	return nil
}

func (s *twoParts) Poll(ctx context.Context, b *connector.Batch) error {
	s.polls++
	if s.polls == s.giveUpAt {
		var err error
		if s.lost {
			s.h.Lost(s.ids[1])
		} else {
			err = s.h.Revoke(ctx, s.ids[1])
		}
		s.mu.Lock()
		s.given, s.revokeErr, s.commitsAt = true, err, len(s.commits)
		s.mu.Unlock()
		if s.after != nil {
			s.after()
		}
	}
	k := s.polls % 2
	s.mu.Lock()
	given := s.given
	s.mu.Unlock()
	if given {
		k = 0
	}
	if k == 0 && s.next[0] >= s.aLimit {
		return connector.ErrEndOfInput
	}
	name := []string{"a", "b"}[k]
	for range 10 {
		r := record.New(fmt.Appendf(nil, `{"p":%q,"seq":%d}`, name, s.next[k]))
		r.Origin.Offset = s.next[k]
		b.Records = append(b.Records, r)
		s.next[k]++
	}
	b.Partition, b.End = s.ids[k], checkpoint.Position(s.next[k])
	if k == 1 {
		s.mu.Lock()
		s.bLastEnd = s.next[1]
		s.mu.Unlock()
	}
	return nil
}

func (s *twoParts) Commit(ctx context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits = append(s.commits, cs...)
	return nil
}

func (s *twoParts) Seek(ctx context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	return fmt.Errorf("unexpected seek of %d to %d", p, pos)
}

func (s *twoParts) Close(ctx context.Context) error { return nil }

// committedB returns the positions committed for b before and after it was
// given up.
func (s *twoParts) committedB() (before, after []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.commits {
		if c.Partition != s.ids[1] {
			continue
		}
		if i < s.commitsAt {
			before = append(before, int64(c.Position))
		} else {
			after = append(after, int64(c.Position))
		}
	}
	return before, after
}

// Guarantee: Revoke commits the partition's final watermark before it
// returns, and does not wait for the sinks' MaxAge to get there: the sinks are
// asked to flush at once. Nothing of the partition is committed afterwards.
func TestRevokeCommitsFinalWatermarkWithoutWaitingForMaxAge(t *testing.T) {
	src := &twoParts{aLimit: 100, giveUpAt: 9}
	mem := &conformance.MemSink{}
	// Neither size nor age would flush the group before the run ends; if
	// the revoke did not ask for a flush, it would wait out DrainTimeout and
	// commit nothing of b.
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: mem,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
	sp.Checkpoint.DrainTimeout = 5 * time.Second
	start := time.Now()
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if src.revokeErr != nil {
		t.Fatalf("Revoke: %v", src.revokeErr)
	}
	before, after := src.committedB()
	if len(before) == 0 || before[len(before)-1] != src.bLastEnd {
		t.Errorf("b committed %v before Revoke returned, want ending at its final watermark %d", before, src.bLastEnd)
	}
	if len(after) > 0 {
		t.Errorf("b committed %v after it was revoked", after)
	}
	if el := time.Since(start); el >= sp.Checkpoint.DrainTimeout {
		t.Errorf("run took %v: the revoke waited out its drain timeout", el)
	}
}

// gate blocks until it is opened.
type gatedSink struct {
	conformance.MemSink
	open chan struct{}
}

func (g *gatedSink) Write(ctx context.Context, recs []record.Record) error {
	<-g.open
	return g.MemSink.Write(ctx, recs)
}

// Guarantee: acknowledgements that arrive after Revoke returned (its drain
// timeout passed) are stale: the revoked partition is never committed past
// what was delivered when Revoke returned, even though its data is written
// later.
func TestAcksAfterRevokeAreNeverCommitted(t *testing.T) {
	gs := &gatedSink{open: make(chan struct{})}
	src := &twoParts{aLimit: 100, giveUpAt: 5, after: func() { close(gs.open) }}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: gs})
	sp.Checkpoint.DrainTimeout = 10 * time.Millisecond
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	if src.revokeErr != nil {
		t.Fatalf("Revoke: %v", src.revokeErr)
	}
	before, after := src.committedB()
	if len(before) > 0 || len(after) > 0 {
		t.Errorf("b committed %v before and %v after Revoke returned; nothing of it was durable by then", before, after)
	}
	if got := countOf(gs.Values(), "b"); got != int(src.bLastEnd) {
		t.Fatalf("%d records of b written, want %d (the late acknowledgements must exist)", got, src.bLastEnd)
	}
	for _, c := range src.commits {
		if c.Partition == src.ids[0] && c.Position > 100 {
			t.Errorf("a committed %d, past its end", c.Position)
		}
	}
}

// Guarantee: Lost forgets a partition at once: nothing of it is committed
// afterwards, even when its data is written and acknowledged later.
func TestLostCommitsNothingMore(t *testing.T) {
	src := &twoParts{aLimit: 100, giveUpAt: 9, lost: true}
	mem := &conformance.MemSink{}
	// The group is flushed only at the end of input, after b was lost.
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: mem,
		Batch: pipeline.BatchSettings{MaxRecords: 1 << 20, MaxAge: time.Hour}})
	if err := pipeline.Run(context.Background(), sp, quiet); err != nil {
		t.Fatal(err)
	}
	before, after := src.committedB()
	if len(before) > 0 || len(after) > 0 {
		t.Errorf("b committed %v before and %v after it was lost; want nothing", before, after)
	}
	if bWritten := countOf(mem.Values(), "b"); bWritten != int(src.bLastEnd) {
		t.Errorf("%d records of b written, want %d (its acknowledgements must arrive, late)", bWritten, src.bLastEnd)
	}
	var aEnd int64
	for _, c := range src.commits {
		if c.Partition == src.ids[0] {
			aEnd = int64(c.Position)
		}
	}
	if aEnd != 100 {
		t.Errorf("a committed to %d, want 100", aEnd)
	}
}

// countOf counts the values of twoParts partition p.
func countOf(vals [][]byte, p string) int {
	n := 0
	for _, v := range vals {
		if bytes.HasPrefix(v, []byte(`{"p":"`+p+`"`)) {
			n++
		}
	}
	return n
}

// closeRevoker is an endless source of many partitions that gives them all
// up in Close, as a Kafka client does when it leaves its group: Revoke comes
// after polling stopped and the runtime closed its workers' inputs.
type closeRevoker struct {
	h    connector.Host
	ids  []checkpoint.Partition
	next []int64
	turn int

	revoked chan struct{} // closed once every Revoke in Close returned
}

func (s *closeRevoker) Open(ctx context.Context, h connector.Host) error {
	s.h = h
	for i := range 16 {
		s.ids = append(s.ids, h.Assign(fmt.Sprintf("p%d", i), 0))
		s.next = append(s.next, 0)
	}
	return nil
}

func (s *closeRevoker) Poll(ctx context.Context, b *connector.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	i := s.turn % len(s.ids)
	s.turn++
	b.Partition = s.ids[i]
	for range 10 {
		r := record.New([]byte(fmt.Sprintf(`{"p":%d,"n":%d}`, i, s.next[i])))
		r.Origin.Offset = s.next[i]
		b.Records = append(b.Records, r)
		s.next[i]++
	}
	b.End = checkpoint.Position(s.next[i])
	return nil
}

func (s *closeRevoker) Commit(ctx context.Context, cs []connector.Commit) error { return nil }
func (s *closeRevoker) Seek(ctx context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	return nil
}

func (s *closeRevoker) Close(ctx context.Context) error {
	for _, p := range s.ids {
		_ = s.h.Revoke(ctx, p) // the pipeline has stopped: an error is expected
	}
	close(s.revoked)
	return nil
}

// Revoke may come after shutdown closed the workers' inputs (a source's Close
// leaving its group); it must not send them a flush request then.
func TestRevokeAfterShutdownSendsNothing(t *testing.T) {
	src := &closeRevoker{revoked: make(chan struct{})}
	mem := &conformance.MemSink{}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: mem})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := pipeline.Run(ctx, sp, quiet); err != nil {
		t.Fatal(err)
	}
	select {
	case <-src.revoked:
	default:
		t.Fatal("Close returned before its Revokes did")
	}
}

// parkedSource is one partition, "p", of three batches of ten records; then
// Poll waits for its context, as a Kafka client's poll waits while the
// client runs a rebalance callback.
type parkedSource struct {
	h     connector.Host
	id    checkpoint.Partition
	next  int64
	mu    sync.Mutex
	comms []connector.Commit
}

func (s *parkedSource) Open(_ context.Context, h connector.Host) error {
	id := h.Assign("p", 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h, s.id = h, id
	return nil
}

func (s *parkedSource) Poll(ctx context.Context, b *connector.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= 30 {
		s.mu.Unlock()
		<-ctx.Done()
		s.mu.Lock()
		return ctx.Err()
	}
	for range 10 {
		r := record.New(fmt.Appendf(nil, `{"seq":%d}`, s.next))
		r.Origin.Offset = s.next
		b.Records = append(b.Records, r)
		s.next++
	}
	b.Partition, b.End = s.id, checkpoint.Position(s.next)
	return nil
}

func (s *parkedSource) Commit(_ context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comms = append(s.comms, cs...)
	return nil
}

func (s *parkedSource) last() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.comms) == 0 {
		return -1
	}
	return int64(s.comms[len(s.comms)-1].Position)
}

func (s *parkedSource) Seek(context.Context, checkpoint.Partition, checkpoint.Position) error {
	return nil
}
func (s *parkedSource) Close(context.Context) error { return nil }

// Guarantee: a graceful stop that comes while a rebalance callback revokes
// a partition (Revoke called from another goroutine, with a context of its
// own) does not cut the revoke short: what is in flight is written, the
// final watermark is committed, and only then does Revoke return, so the
// partition's next owner starts after what was written.
func TestRevokeDuringGracefulStopCommitsFirst(t *testing.T) {
	gs := &gatedSink{open: make(chan struct{})}
	src := &parkedSource{}
	sp := fastSpec(src, pipeline.SinkSpec{Name: "out", Inputs: []string{"gen"}, Sink: gs})
	sp.Checkpoint.DrainTimeout = 30 * time.Second
	sp.Metrics.Address = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithListening(func(a string) { addr <- a })) }()
	base := "http://" + <-addr
	deadline := time.Now().Add(10 * time.Second)
	for func() bool { src.mu.Lock(); defer src.mu.Unlock(); return src.next < 30 }() {
		if time.Now().After(deadline) {
			t.Fatal("the source did not read its batches")
		}
		time.Sleep(time.Millisecond) // polling the source's progress
	}
	type result struct {
		err       error
		committed int64
	}
	revoked := make(chan result, 1)
	src.mu.Lock()
	h, id := src.h, src.id
	src.mu.Unlock()
	go func() {
		err := h.Revoke(context.Background(), id)
		revoked <- result{err, src.last()}
	}()
	// The stop must come while the revoke is in progress: once its event
	// shows (a revoke that comes after the stop is another case).
	for revoking := false; !revoking; {
		_, body := httpGet(t, base+"/api/v1/status")
		var st pipeline.Status
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatalf("status: %v: %s", err, body)
		}
		for _, e := range st.Events {
			revoking = revoking || e.Kind == pipeline.EventRevoking
		}
		if !revoking && time.Now().After(deadline.Add(20*time.Second)) {
			t.Fatalf("no revoking event: %s", body)
		}
		time.Sleep(time.Millisecond) // polling an external view
	}
	cancel()       // the graceful stop, while the revoke waits for the sink
	close(gs.open) // the sink writes what is in flight
	r := <-revoked
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.err != nil {
		t.Fatalf("Revoke = %v, want nil: the stop cut it short", r.err)
	}
	if r.committed != 30 {
		t.Fatalf("committed %d when Revoke returned, want 30, the final watermark", r.committed)
	}
}
