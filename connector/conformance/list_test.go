package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// listSource is a small source for the suite's own tests: parts partitions
// ("list/0", ...) of n records each, a record's position its index. Like a
// Kafka client it fetches ahead, two batches of a partition at a time, and
// hands them out one per Poll. Its committed positions live in a listDest
// shared by the instances of one test, as a broker's would. broken, when
// set, breaks it in one way (see brokenCases).
type listSource struct {
	parts, n, batch int
	dest            *listDest
	broken          string

	host   connector.Host
	closed chan struct{} // closed by Close

	// mu guards what follows: Poll and Seek run on the polling goroutine,
	// Commit on the runtime's checkpointer goroutine.
	mu    sync.Mutex
	ids   []checkpoint.Partition // by partition index
	read  []int                  // next record to fetch, by partition index
	offs  []int                  // its offset: equal to read unless broken
	queue []fetched              // fetched ahead, in order
	next  int                    // partition to fetch next
	polls int
}

type fetched struct {
	part, first, off, count int
}

type listDest struct {
	mu        sync.Mutex
	committed map[string]checkpoint.Position
}

func newListSource(parts int, dest *listDest, broken string) *listSource {
	return &listSource{parts: parts, n: 1000, batch: 5, dest: dest, broken: broken, closed: make(chan struct{})}
}

func (s *listSource) name(i int) string { return fmt.Sprintf("list/%d", i) }

func (s *listSource) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = make([]checkpoint.Partition, s.parts)
	s.read = make([]int, s.parts)
	s.offs = make([]int, s.parts)
	for i := range s.parts {
		s.dest.mu.Lock()
		start := s.dest.committed[s.name(i)]
		s.dest.mu.Unlock()
		at := start
		if s.broken == "assign-at-zero" {
			at = 0 // reads from the committed position, says it starts at 0
		}
		s.ids[i] = h.Assign(s.name(i), at)
		s.read[i], s.offs[i] = int(start), int(start)
	}
	return nil
}

func (s *listSource) Poll(ctx context.Context, b *connector.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		switch s.broken {
		case "cancel-drops-buffer":
			s.queue = s.queue[:0]
		case "poll-ignores-cancel":
			// Waits for data it has no way to get, ignoring ctx, as a Poll
			// blocked in a client call without the context would; a time
			// limit lets the runtime's subtest end.
			t := time.NewTimer(500 * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-s.closed:
			}
		}
		return err
	}
	s.polls++
	if s.polls%3 == 0 {
		switch s.broken {
		case "empty-batch-goes-back":
			b.Partition, b.End = s.ids[0], 0
			return nil
		case "unassigned-partition":
			b.Partition, b.End = 99, 1
			return nil
		}
	}
	if len(s.queue) == 0 && !s.fetch() {
		return connector.ErrEndOfInput
	}
	f := s.queue[0]
	s.queue = s.queue[1:]
	for k := range f.count {
		r := record.New(fmt.Appendf(nil, `{"p":%d,"n":%d}`, f.part, f.first+k))
		r.Origin.Offset = int64(f.off + k)
		b.Records = append(b.Records, r)
	}
	b.Partition, b.End = s.ids[f.part], checkpoint.Position(f.off+f.count)
	return nil
}

// fetch queues up to two batches of the next partition with records left.
func (s *listSource) fetch() bool {
	for k := range s.parts {
		i := (s.next + k) % s.parts
		if s.read[i] == s.n {
			continue
		}
		s.next = i + 1
		for range 2 {
			c := min(s.batch, s.n-s.read[i])
			if c == 0 {
				break
			}
			s.queue = append(s.queue, fetched{part: i, first: s.read[i], off: s.offs[i], count: c})
			s.read[i] += c
			s.offs[i] += c
		}
		return true
	}
	return false
}

func (s *listSource) index(p checkpoint.Partition) (int, error) {
	i := slices.Index(s.ids, p)
	if i < 0 {
		return 0, fmt.Errorf("list: partition %d is not assigned", p)
	}
	return i, nil
}

func (s *listSource) Commit(ctx context.Context, cs []connector.Commit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dest.mu.Lock()
	defer s.dest.mu.Unlock()
	for _, c := range cs {
		i, err := s.index(c.Partition)
		if err != nil {
			return err
		}
		s.dest.committed[s.name(i)] = c.Position
	}
	return nil
}

func (s *listSource) Seek(ctx context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, err := s.index(p)
	if err != nil {
		return err
	}
	s.queue = slices.DeleteFunc(s.queue, func(f fetched) bool { return f.part == i })
	s.read[i] = int(pos)
	if s.broken != "seek-keeps-offsets" {
		s.offs[i] = int(pos)
	}
	return nil
}

func (s *listSource) Close(ctx context.Context) error {
	close(s.closed)
	return nil
}

// brokenSink is an in-memory sink over a destination that outlives it (as
// MemSink's does), broken in one way (see brokenCases).
type brokenSink struct {
	mode  string
	dest  *brokenDest
	group [][]byte
	// visible holds what flush-in-process flushed: readable by the
	// process, in the destination only after Close.
	visible [][]byte
	// groupStart is where write-through's current group begins in dest.
	groupStart int
}

type brokenDest struct {
	mu   sync.Mutex
	vals [][]byte
}

func (d *brokenDest) add(v ...[]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vals = append(d.vals, v...)
}

func (d *brokenDest) values() [][]byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.vals)
}

func (s *brokenSink) Open(ctx context.Context) error {
	s.groupStart = len(s.dest.values())
	return nil
}

func (s *brokenSink) Write(ctx context.Context, recs []record.Record) error {
	rejected := -1
	for i := range recs {
		err := recs[i].CheckJSON()
		v, _ := recs[i].Value()
		if err != nil {
			switch s.mode {
			case "reject-after-writing-the-rest":
				rejected = i
				continue
			case "reject-as-plain-error":
				return err
			}
			return &connector.RejectError{Index: i, Err: err}
		}
		if s.mode == "write-through" {
			s.dest.add(v)
			continue
		}
		s.group = append(s.group, v)
	}
	if rejected >= 0 {
		return &connector.RejectError{Index: rejected, Err: fmt.Errorf("record %d cannot be encoded", rejected)}
	}
	return nil
}

func (s *brokenSink) Flush(ctx context.Context) error {
	switch s.mode {
	case "flush-in-process":
		s.visible = append(s.visible, s.group...)
	case "write-through":
		s.groupStart = len(s.dest.values())
	default:
		s.dest.add(s.group...)
	}
	s.group = nil
	return nil
}

func (s *brokenSink) Abort(ctx context.Context) error {
	if s.mode == "write-through" {
		s.dest.mu.Lock()
		s.dest.vals = s.dest.vals[:s.groupStart]
		s.dest.mu.Unlock()
	}
	s.group = nil
	return nil
}

func (s *brokenSink) Close(ctx context.Context) error {
	switch s.mode {
	case "flush-in-process":
		s.dest.add(s.visible...)
		s.visible = nil
	case "close-flushes":
		s.dest.add(s.group...)
		s.group = nil
	}
	return nil
}

// written is what the sink shows: the destination, and for
// flush-in-process what it holds in memory too (a process reading its own
// buffered file sees its writes).
func (s *brokenSink) written() [][]byte {
	return append(s.dest.values(), s.visible...)
}
