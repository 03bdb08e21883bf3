// Package kafka is weir's Kafka source: a consumer group member whose
// committed offsets are decided by the pipeline's watermarks alone.
//
// The client never commits by itself and never marks records: franz-go's
// marks do not enforce contiguity, and weir's promise is that a committed
// offset has everything before it durably written. The runtime calls Commit
// with the watermarks; Commit sends exactly those offsets, under the member's
// current generation, so a member that has been fenced out cannot commit.
//
// # Who calls the Host, and when
//
// connector.Host must be called from the goroutine that polls, because the
// runtime issues acknowledgement references for a returned batch on that
// goroutine right after Poll returns, with no lock. franz-go reports
// rebalances from its own goroutine, so the source uses
// kgo.BlockRebalanceOnPoll to order the two:
//
//   - The client blocks rebalance callbacks from the moment a poll of the
//     client returns records until AllowRebalance.
//   - Poll hands out the polled records one partition batch per call and calls
//     AllowRebalance only when its buffer is empty, at the start of the Poll
//     that is about to fetch again. So while the runtime holds a batch it has
//     not issued yet, no callback runs; while a callback runs, the polling
//     goroutine is parked inside Poll, waiting for the client.
//   - Assign is called by Poll itself when a newly assigned partition's first
//     batch is handed out. Revoke and Lost are called from the client's
//     callbacks, which the client runs between AllowRebalance and the next
//     poll result: the polling goroutine is parked, and the client's lock
//     hand-off orders the callback after the last issue and before the next.
//
// Revoke is called inside OnPartitionsRevoked on purpose: the rebalance waits
// until the in-flight batches of the partition are resolved and the final
// watermark is committed, so the next owner starts exactly there.
//
// The price of the block is that a rebalance waits while the runtime holds a
// polled batch without asking for the next (backpressure). The rebalance
// timeout must cover that, and the pipeline's drain timeout.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// ErrClosed is returned by Poll, Commit and Seek after Close.
var ErrClosed = errors.New("kafka: source closed")

type tp struct {
	topic string
	part  int32
}

func (t tp) name() string { return t.topic + "/" + strconv.Itoa(int(t.part)) }

// partState is one partition this member owns.
type partState struct {
	// start is where the assignment starts reading: the committed offset, or
	// -1 when there is none and the first record read decides.
	start int64
	// host is true once Host.Assign was called for this assignment.
	host bool
	id   checkpoint.Partition
	// next is the offset after the last record handed out; records below it
	// (a fetch that raced a seek) are never handed out again.
	next int64
	// committed is the highest offset this member committed for the
	// partition in this assignment; Commit never sends a lower one.
	committed int64
	// name is the partition's name for Origin ("orders/3"), and meta the
	// metadata every record of it carries, shared by all of them (capacity
	// 1, so an append copies), so that a batch allocates neither.
	name string
	meta []record.Meta
}

// fetched is one partition's records from one poll of the client.
type fetched struct {
	tp   tp
	recs []*kgo.Record
}

// Source is the Kafka source. Create it with New.
type Source struct {
	name string
	cfg  Config

	cl   *kgo.Client
	host connector.Host
	log  *slog.Logger

	closed atomic.Bool

	// mu guards the partition maps, the pending seeks and pollCancel. It is
	// never held while calling the client or the Host.
	mu         sync.Mutex
	parts      map[tp]*partState
	byID       map[checkpoint.Partition]tp
	seeks      map[tp]int64
	pollCancel context.CancelFunc

	// commitMu orders commits, so that "never lower than committed" holds
	// for what reaches the broker, not only for what was asked.
	commitMu sync.Mutex

	// Owned by the polling goroutine.
	queue   []fetched
	holding bool // the client is blocking rebalances for our last poll
}

// New returns a source for cfg, which must be valid.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Source{
		name:  name,
		cfg:   *cfg,
		parts: map[tp]*partState{},
		byID:  map[checkpoint.Partition]tp{},
		seeks: map[tp]int64{},
	}, nil
}

// Open joins the group. Partitions are reported to h as their data arrives
// in Poll (see the package comment).
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.host = h
	s.log = h.Logger()
	opts, err := s.opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: source %s: %w", s.name, err)
	}
	// Fail fast on unreachable brokers or bad credentials instead of polling
	// an empty client forever.
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return fmt.Errorf("kafka: source %s: reaching brokers %v: %w", s.name, s.cfg.Brokers, err)
	}
	s.cl = cl
	return nil
}

func (s *Source) opts() ([]kgo.Opt, error) {
	c := &s.cfg
	opts, err := c.Conn.Opts()
	if err != nil {
		return nil, err
	}
	start := kgo.NewOffset().AtStart()
	if c.StartFrom == "latest" {
		start = kgo.NewOffset().AtEnd()
	}
	var bal kgo.GroupBalancer
	switch c.Balancer {
	case "sticky":
		bal = kgo.StickyBalancer()
	case "range":
		bal = kgo.RangeBalancer()
	case "round-robin":
		bal = kgo.RoundRobinBalancer()
	default:
		bal = kgo.CooperativeStickyBalancer()
	}
	opts = append(opts,
		LogAdapter(s.logger()),
		kgo.ConsumerGroup(c.Group),
		kgo.Balancers(bal),
		kgo.ConsumeResetOffset(start),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxBytes(c.FetchMaxBytes),
		kgo.SessionTimeout(c.SessionTimeout),
		kgo.RebalanceTimeout(c.RebalanceTimeout),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.AdjustFetchOffsetsFn(s.adjustOffsets),
	)
	if c.TopicRegex != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(c.TopicRegex))
	} else {
		opts = append(opts, kgo.ConsumeTopics(c.Topics...))
	}
	if c.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(c.InstanceID))
	}
	return opts, nil
}

func (s *Source) logger() *slog.Logger {
	if s.log != nil {
		return s.log
	}
	return slog.Default()
}

// adjustOffsets learns where each newly assigned partition starts. The client
// calls it after fetching the group's committed offsets and before it fetches
// any record of those partitions, so every record Poll sees has its start
// recorded. It does not call the Host: it runs outside the rebalance block.
func (s *Source) adjustOffsets(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range offsets {
		for p, o := range ps {
			t := tp{topic, p}
			start := o.EpochOffset().Offset
			if start < 0 {
				start = -1 // no commit: the reset offset applies, the first record decides
			}
			if old, ok := s.parts[t]; ok && old.host {
				// Only an eager rebalance re-assigns a partition we hold,
				// after revoking it; be safe if it ever does not.
				delete(s.byID, old.id)
			}
			s.parts[t] = &partState{start: start, next: start, committed: start,
				name: t.name(), meta: []record.Meta{{Key: "topic", Value: t.topic}}}
			delete(s.seeks, t) // a seek of an earlier assignment does not apply
		}
	}
	return offsets, nil
}

// onRevoked gives partitions up gracefully. It runs inside the rebalance, so
// the next owner starts only after the final watermark is committed.
func (s *Source) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if s.closed.Load() {
		// The runtime commits before Close; the Host is no longer polled.
		return
	}
	for topic, ps := range revoked {
		for _, p := range ps {
			t := tp{topic, p}
			s.mu.Lock()
			st := s.parts[t]
			delete(s.seeks, t)
			var known bool
			var id checkpoint.Partition
			if st != nil {
				known, id = st.host, st.id
			}
			s.mu.Unlock()
			if st == nil {
				continue
			}
			if known {
				// The partition stays in parts while Revoke commits its final
				// watermark through Commit, which only commits owned partitions.
				if err := s.host.Revoke(ctx, id); err != nil {
					s.logger().Warn("kafka: revoked partition not drained", "partition", t.name(), "err", err)
				}
			}
			s.mu.Lock()
			if s.parts[t] == st {
				delete(s.parts, t)
				delete(s.byID, st.id)
			}
			s.mu.Unlock()
		}
	}
}

// onLost forgets partitions whose ownership ended without a revoke (the
// session expired, the member was fenced). Nothing is committed for them.
func (s *Source) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if s.closed.Load() {
		return
	}
	for topic, ps := range lost {
		for _, p := range ps {
			t := tp{topic, p}
			s.mu.Lock()
			st := s.parts[t]
			var known bool
			var id checkpoint.Partition
			if st != nil {
				known, id = st.host, st.id
				// Removed before telling the Host, so that no Commit racing
				// with this sends an offset for a partition we do not own.
				delete(s.parts, t)
				delete(s.byID, st.id)
			}
			delete(s.seeks, t)
			s.mu.Unlock()
			if known {
				s.host.Lost(id)
			}
		}
	}
}

// Poll returns the next partition batch of the last fetch, fetching again
// when none is left.
func (s *Source) Poll(ctx context.Context, b *connector.Batch) error {
	if s.closed.Load() {
		return ErrClosed
	}
	for {
		if s.holding {
			s.applySeeks()
			if s.pop(b) {
				return nil
			}
		}
		// Nothing buffered: the runtime has issued every batch we returned,
		// so a rebalance may run while we wait for the client.
		s.release()
		if err := ctx.Err(); err != nil {
			return err
		}
		pctx, cancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.pollCancel = cancel
		if len(s.seeks) > 0 {
			cancel() // apply them now rather than after the next record arrives
		}
		s.mu.Unlock()
		fetches := s.cl.PollRecords(pctx, s.cfg.MaxPollRecords)
		s.mu.Lock()
		s.pollCancel = nil
		s.mu.Unlock()
		cancel()
		// A poll that returns anything, errors included, blocks rebalances
		// until release.
		s.holding = true
		if err := s.buffer(ctx, fetches); err != nil {
			return err
		}
	}
}

// isFatal reports errors that no retry or rejoin can fix: the pipeline stops
// with them instead of logging the same refusal forever.
func isFatal(err error) bool {
	for _, e := range []error{
		kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.ClusterAuthorizationFailed, kerr.SaslAuthenticationFailed,
		kerr.UnsupportedSaslMechanism, kerr.InvalidGroupID,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// release lets a blocked rebalance proceed. Only called with an empty buffer.
func (s *Source) release() {
	if s.holding {
		s.holding = false
		s.cl.AllowRebalance()
	}
}

// buffer queues the records of fetches by partition and returns the first
// error that should stop the pipeline.
func (s *Source) buffer(ctx context.Context, fetches kgo.Fetches) error {
	var ferr error
	fetches.EachError(func(topic string, p int32, err error) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			// Our own interruption (a seek) or the caller's; ctx says which.
		case errors.Is(err, kgo.ErrClientClosed):
			if ferr == nil {
				ferr = ErrClosed
			}
		case isFatal(err):
			if ferr == nil {
				ferr = fmt.Errorf("kafka: source %s: fetching %s/%d: %w", s.name, topic, p, err)
			}
		default:
			// The client recovers from everything else by itself: a group
			// error leads to a rejoin (and Lost or Revoke), a partition error
			// to a retry or an offset reset.
			s.logger().Warn("kafka: fetch error, the client retries", "topic", topic, "partition", p, "err", err)
		}
	})
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) > 0 {
			s.queue = append(s.queue, fetched{tp{fp.Topic, fp.Partition}, fp.Records})
		}
	})
	if ferr != nil {
		return ferr
	}
	if len(s.queue) == 0 {
		if err := ctx.Err(); err != nil {
			s.release()
			return err
		}
	}
	return nil
}

// applySeeks moves partitions back as Seek asked. It runs on the polling
// goroutine with the rebalance blocked, as the client asks of SetOffsets, and
// drops what was buffered for those partitions before the seek; SetOffsets
// drops what the client buffered, so every record polled later is after it.
func (s *Source) applySeeks() {
	s.mu.Lock()
	if len(s.seeks) == 0 {
		s.mu.Unlock()
		return
	}
	set := make(map[string]map[int32]kgo.EpochOffset, len(s.seeks))
	for t, pos := range s.seeks {
		if set[t.topic] == nil {
			set[t.topic] = map[int32]kgo.EpochOffset{}
		}
		set[t.topic][t.part] = kgo.EpochOffset{Epoch: -1, Offset: pos}
		if st := s.parts[t]; st != nil {
			st.next = pos
		}
		delete(s.seeks, t)
	}
	s.mu.Unlock()
	kept := s.queue[:0]
	for _, f := range s.queue {
		if _, ok := set[f.tp.topic][f.tp.part]; !ok {
			kept = append(kept, f)
		}
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	s.cl.SetOffsets(set)
}

// pop fills b with the first buffered partition batch that still belongs to
// this member, telling the Host of a partition on its first batch.
func (s *Source) pop(b *connector.Batch) bool {
	for len(s.queue) > 0 {
		f := s.queue[0]
		s.queue[0] = fetched{}
		s.queue = s.queue[1:]

		s.mu.Lock()
		st := s.parts[f.tp]
		_, seeking := s.seeks[f.tp]
		s.mu.Unlock()
		if st == nil || seeking {
			continue // revoked, lost, or to be re-read from a seek position
		}
		recs := f.recs
		if st.next >= 0 {
			i := 0
			for i < len(recs) && recs[i].Offset < st.next {
				i++
			}
			recs = recs[i:]
		}
		if len(recs) == 0 {
			continue
		}
		if !st.host {
			start := st.start
			if start < 0 {
				start = recs[0].Offset
			}
			id := s.host.Assign(f.tp.name(), checkpoint.Position(start))
			s.mu.Lock()
			st.host, st.id, st.committed = true, id, start
			s.byID[id] = f.tp
			s.mu.Unlock()
		}
		s.fill(b, st, recs)
		st.next = recs[len(recs)-1].Offset + 1
		return true
	}
	s.queue = s.queue[:0]
	return false
}

func (s *Source) fill(b *connector.Batch, st *partState, recs []*kgo.Record) {
	b.Reset()
	b.Partition = st.id
	b.End = checkpoint.Position(recs[len(recs)-1].Offset + 1)
	// The record keeps the fetched key, value and header bytes rather than
	// copies: the client allocates them per fetch and never reuses them (no
	// decompression or record pools are configured), and nothing downstream
	// changes a record's bytes in place (record.New's rule).
	b.Records = slices.Grow(b.Records, len(recs))
	for _, kr := range recs {
		r := record.New(kr.Value)
		r.Key = kr.Key
		r.Time = kr.Timestamp
		if len(kr.Headers) > 0 {
			hs := make([]record.Header, len(kr.Headers))
			for j, h := range kr.Headers {
				hs[j] = record.Header{Key: h.Key, Value: h.Value}
			}
			r.Headers = hs
		}
		r.Meta = st.meta
		r.Origin = record.Origin{Source: s.name, Partition: st.name, Offset: kr.Offset}
		b.Records = append(b.Records, r)
	}
}

// Commit commits exactly the given positions (the next offset to read) for the
// partitions this member still owns, under its current generation. A position
// below one already committed in this assignment is skipped: commits never
// regress. Partitions no longer owned (revoked and forgotten, lost) are
// skipped, since their offsets are now another member's to commit.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()

	offsets := map[string]map[int32]kgo.EpochOffset{}
	type sent struct {
		st  *partState
		pos int64
	}
	var sents []sent
	s.mu.Lock()
	for _, c := range commits {
		t, ok := s.byID[c.Partition]
		if !ok {
			continue
		}
		st := s.parts[t]
		pos := int64(c.Position)
		if st == nil || pos < st.committed || pos < 0 {
			continue
		}
		if offsets[t.topic] == nil {
			offsets[t.topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[t.topic][t.part] = kgo.EpochOffset{Epoch: -1, Offset: pos}
		sents = append(sents, sent{st, pos})
	}
	s.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}

	var cerr error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
					cerr = fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
				}
			}
		}
	})
	if cerr != nil {
		return fmt.Errorf("kafka: source %s: committing offsets of group %s: %w", s.name, s.cfg.Group, cerr)
	}
	s.mu.Lock()
	for _, x := range sents {
		x.st.committed = max(x.st.committed, x.pos)
	}
	s.mu.Unlock()
	return nil
}

// Seek makes the next batches of p start at pos. It takes effect in Poll
// (the client wants offsets set from the polling goroutine): buffered records
// of p are dropped, and a Poll waiting for data is woken to apply it.
func (s *Source) Seek(_ context.Context, p checkpoint.Partition, pos checkpoint.Position) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byID[p]
	if !ok {
		return fmt.Errorf("kafka: source %s: seek of partition %d, which this member does not own", s.name, p)
	}
	if pos < 0 {
		return fmt.Errorf("kafka: source %s: seek of %s to negative offset %d", s.name, t.name(), pos)
	}
	s.seeks[t] = int64(pos)
	if s.pollCancel != nil {
		s.pollCancel()
	}
	return nil
}

// Close leaves the group without calling the Host: the runtime has committed
// what it could before calling Close.
func (s *Source) Close(ctx context.Context) error {
	if s.closed.Swap(true) || s.cl == nil {
		return nil
	}
	// A batch still buffered blocks rebalances, and leaving is one.
	s.cl.AllowRebalance()
	done := make(chan struct{})
	go func() {
		s.cl.Close()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kafka: source %s: closing: %w", s.name, ctx.Err())
	case <-time.After(s.cfg.SessionTimeout):
		// Leaving is best effort; the group expires the session anyway.
		return nil
	}
}

var _ connector.Source = (*Source)(nil)
