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
// connector.Host is safe from any goroutine, but the order of the calls
// matters: a batch of a partition revoked before the batch reached the
// runtime stops the run, so a partition must not be revoked between Poll
// returning its batch and the runtime issuing it. franz-go reports
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
// until the in-flight batches of the partitions are resolved and the final
// watermarks are committed, so the next owner starts exactly there. One call
// names every partition of the rebalance that was handed out, so they drain
// together under one deadline (Lost likewise). A graceful stop of the
// pipeline while such a Revoke waits does not cut it short.
//
// # Across a reload
//
// Detach and Reattach (connector.Detacher) hand the member from one run of
// the pipeline to the next without leaving the group: between them there is
// no Host, every partition is taken back and handed to the next run again at
// its last committed offset, and a partition lost meanwhile is forgotten.
//
// # Partition ids
//
// The runtime's id of a partition comes from Host.Assign, at its first batch;
// a partition assigned by the group but never read from has none. The
// runtime numbers partitions from 0, so the zero id is a real partition and
// cannot mean "none": the bookkeeping (owned.go) carries "handed out"
// explicitly and removes an id only for the assignment that holds it.
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/internal/kafkaclient"
	"github.com/weir-etl/weir/record"
)

// ErrClosed is returned by Poll, Commit and Seek after Close.
var ErrClosed = errors.New("kafka: source closed")

// fetched is one partition's records from one poll of the client.
type fetched struct {
	tp   tp
	recs []*kgo.Record
}

// Source is the Kafka source. Create it with New.
type Source struct {
	name string
	cfg  Config

	cl  *kgo.Client
	log *slog.Logger

	// hostMu guards host, which a run's Reattach replaces and Detach takes
	// away (nil: detached). The rebalance callbacks hold it for reading
	// while they call the Host, so that Detach waits for a call to the old
	// run's Host to return before the source is handed on.
	hostMu sync.RWMutex
	host   connector.Host

	closed atomic.Bool

	// inFlightBytes is the pipeline's in-flight byte limit, which sizes the
	// client's fetches (readahead.go); 0 until LimitReadAhead.
	inFlightBytes int64

	// mu guards the partition bookkeeping, the pending seeks and
	// pollCancel. It is never held while calling the client or the Host.
	mu         sync.Mutex
	parts      owned
	seeks      map[tp]int64
	pollCancel context.CancelFunc

	// commitMu orders commits, so that "never lower than committed" holds
	// for what reaches the broker, not only for what was asked.
	commitMu sync.Mutex

	// Owned by the polling goroutine.
	queue   []fetched
	holding bool // the client is blocking rebalances for our last poll
	// behind holds the partitions whose last fetched record was below the
	// partition's high watermark: more of them is available now. caughtUp
	// says that the last poll of the client emptied its buffer and that no
	// partition is behind; the batch that empties the queue then says so
	// (connector.Batch.CaughtUp). See caughtup.go.
	behind   map[tp]struct{}
	caughtUp bool

	// ends holds, by partition name, the high-water mark of the partition's
	// last fetch, for Ends (connector.LagReporter): written once per
	// partition per fetch, never per record.
	endsMu sync.Mutex
	ends   map[string]connector.Position

	// reach follows whether the client reaches its cluster, for Failing
	// (pipeline.FailureReporter): the client retries an unreachable
	// cluster by itself, and Poll returns nothing meanwhile.
	reach kafkaclient.Reach
}

// New returns a source for cfg, which must be valid.
func New(name string, cfg *Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kafka: source %s: %w", name, err)
	}
	return &Source{
		name:   name,
		cfg:    *cfg,
		parts:  newOwned(),
		seeks:  map[tp]int64{},
		behind: map[tp]struct{}{},
	}, nil
}

// Open joins the group. Partitions are reported to h as their data arrives
// in Poll (see the package comment).
//
// When no broker answers, Open waits and retries with backoff, logging every
// attempt, for up to connect_timeout, and then fails with an error that says
// so; bad credentials or certificates fail at once.
func (s *Source) Open(ctx context.Context, h connector.Host) error {
	s.hostMu.Lock()
	s.host = h
	s.hostMu.Unlock()
	s.log = h.Logger()
	opts, err := s.opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: source %s: %w", s.name, err)
	}
	if err := kafkaclient.WaitForBrokers(ctx, cl, &s.cfg.Conn, "source "+s.name, s.logger()); err != nil {
		cl.Close()
		return err
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
	ra := readAheadFor(s.inFlightBytes, c.FetchMaxBytes)
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
		kafkaclient.Logger(s.logger()),
		kgo.ConsumerGroup(c.Group),
		kgo.Balancers(bal),
		kgo.ConsumeResetOffset(start),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxBytes(ra.fetchBytes),
		kgo.FetchMaxPartitionBytes(ra.partitionBytes),
		kgo.MaxConcurrentFetches(ra.fetches),
		kgo.SessionTimeout(c.SessionTimeout),
		kgo.HeartbeatInterval(c.HeartbeatInterval),
		kgo.RebalanceTimeout(c.RebalanceTimeout),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.AdjustFetchOffsetsFn(s.adjustOffsets),
		kgo.WithHooks(&s.reach),
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

// Failing reports since when the client has reached no broker, how many
// dials and reads failed since, and the last error (pipeline.FailureReporter):
// /readyz, /debug/stalls and the status name the source once that has
// lasted stall_warning.
func (s *Source) Failing() (time.Time, int, error) {
	since, n, err := s.reach.Failing()
	if err != nil {
		err = fmt.Errorf("kafka: source %s: no broker answers: %w", s.name, err)
	}
	return since, n, err
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
			// Only an eager rebalance re-assigns a partition we hold,
			// after revoking it; assign replaces it safely if it ever
			// does not.
			s.parts.assign(t, start)
			delete(s.seeks, t) // a seek of an earlier assignment does not apply
		}
	}
	return offsets, nil
}

// onRevoked gives partitions up gracefully. It runs inside the rebalance, so
// the next owner starts only after the final watermarks are committed.
//
// Every partition of the rebalance that was handed out goes to the Host in
// one Revoke call: they drain together, under one deadline, so a rebalance
// waits at most one drain timeout however many partitions it takes. A
// partition that was never handed out has nothing in flight and no id; it is
// only forgotten.
func (s *Source) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	if s.closed.Load() {
		// The runtime commits before Close; the Host is no longer polled.
		return
	}
	var ids []connector.Partition
	var states []*partState
	s.mu.Lock()
	for topic, ps := range revoked {
		for _, p := range ps {
			t := tp{topic, p}
			delete(s.seeks, t)
			st := s.parts.get(t)
			switch {
			case st == nil:
			case st.id.ok:
				// Kept while Revoke commits its final watermark through
				// Commit, which commits only partitions held.
				ids = append(ids, st.id.p)
				states = append(states, st)
			default:
				s.parts.drop(t)
			}
		}
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	s.hostMu.RLock()
	if s.host != nil { // detached: Detach took every id back, so never nil here
		if err := s.host.Revoke(ctx, ids...); err != nil {
			s.logger().Warn("kafka: revoked partitions not drained", "partitions", names(states), "err", kafkaclient.Explain(err).Error())
		}
	}
	s.hostMu.RUnlock()
	s.mu.Lock()
	for _, st := range states {
		s.parts.dropIf(st)
	}
	s.mu.Unlock()
}

// onLost forgets partitions whose ownership ended without a revoke (the
// session expired, the member was fenced). Nothing is committed for them.
// Like onRevoked, it tells the Host of all of them in one call.
func (s *Source) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if s.closed.Load() {
		return
	}
	var ids []connector.Partition
	s.mu.Lock()
	for topic, ps := range lost {
		for _, p := range ps {
			t := tp{topic, p}
			delete(s.seeks, t)
			// Dropped before telling the Host, so that no Commit racing
			// with this sends an offset for a partition we do not own.
			if st := s.parts.drop(t); st != nil && st.id.ok {
				ids = append(ids, st.id.p)
			}
		}
	}
	s.mu.Unlock()
	if len(ids) > 0 {
		s.hostMu.RLock()
		if s.host != nil {
			s.host.Lost(ids...)
		}
		s.hostMu.RUnlock()
	}
}

func names(states []*partState) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = st.name
	}
	return out
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
		case kafkaclient.Refused(err):
			// No retry or rejoin fixes a refusal: stop rather than log the
			// same refusal forever.
			if ferr == nil {
				ferr = fmt.Errorf("kafka: source %s: fetching %s/%d: %w", s.name, topic, p, kafkaclient.Explain(err))
			}
		default:
			// The client recovers from everything else by itself: a group
			// error leads to a rejoin (and Lost or Revoke), a partition error
			// to a retry or an offset reset.
			s.logger().Warn("kafka: fetch error, the client retries", "topic", topic, "partition", p, "err", kafkaclient.Explain(err).Error())
		}
	})
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.Err == nil && fp.HighWatermark >= 0 {
			s.noteEnd(tp{fp.Topic, fp.Partition}, fp.HighWatermark)
		}
		if n := len(fp.Records); n > 0 {
			t := tp{fp.Topic, fp.Partition}
			s.queue = append(s.queue, fetched{t, fp.Records})
			s.noteFetched(t, fp.Records[n-1].Offset, fp.HighWatermark)
		}
	})
	s.caughtUp = s.isCaughtUp()
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
		if st := s.parts.get(t); st != nil {
			st.next = pos
		}
		delete(s.seeks, t)
		s.behind[t] = struct{}{} // read again from pos: not caught up until fetched
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
		st := s.parts.get(f.tp)
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
		if !st.id.ok {
			start := st.start
			if start < 0 {
				start = recs[0].Offset
			}
			s.hostMu.RLock()
			id := s.host.Assign(st.name, connector.Position(start))
			s.hostMu.RUnlock()
			s.mu.Lock()
			st.committed = start
			s.parts.handOut(st, id)
			s.mu.Unlock()
		}
		s.fill(b, st, recs)
		st.next = recs[len(recs)-1].Offset + 1
		b.CaughtUp = s.caughtUp && len(s.queue) == 0
		return true
	}
	s.queue = s.queue[:0]
	return false
}

func (s *Source) fill(b *connector.Batch, st *partState, recs []*kgo.Record) {
	b.Reset()
	b.Partition = st.id.p
	b.End = connector.Position(recs[len(recs)-1].Offset + 1)
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
		r.SetOrigin(s.name, st.name, kr.Offset)
		b.Records = append(b.Records, r)
	}
}

// Commit commits exactly the given positions (the next offset to read) for the
// partitions this member holds, under its current generation. A position
// below one already committed in this assignment is not sent: commits never
// regress, and the broker already holds more than was asked.
//
// A commit is never skipped without a word: a partition this member does not
// hold (revoked, lost, or never handed out), a negative position and a
// partition the broker refused each make Commit return an error that names
// the partition, so that the runtime neither counts the position as committed
// nor stops trying. The positions of the other partitions are sent all the
// same; the runtime sends them again with its retry, which is harmless.
func (s *Source) Commit(ctx context.Context, commits []connector.Commit) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()

	s.mu.Lock()
	plan := s.planCommit(commits)
	s.mu.Unlock()
	errs := plan.errs
	if len(plan.offsets) > 0 {
		errs = append(errs, s.send(ctx, plan)...)
	}
	if err := kafkaclient.Join(errs...); err != nil {
		return fmt.Errorf("kafka: source %s: committing offsets of group %s: %w", s.name, s.cfg.Group, err)
	}
	return nil
}

// commitPlan is what one Commit sends, and the problems found on the way.
type commitPlan struct {
	offsets map[string]map[int32]kgo.EpochOffset
	sent    map[tp]sentOffset
	errs    []error
}

type sentOffset struct {
	st  *partState
	pos int64
}

// planCommit decides what commits turns into. Called with mu held.
func (s *Source) planCommit(commits []connector.Commit) commitPlan {
	plan := commitPlan{offsets: map[string]map[int32]kgo.EpochOffset{}, sent: map[tp]sentOffset{}}
	for _, c := range commits {
		st := s.parts.byHost(c.Partition)
		pos := int64(c.Position)
		switch {
		case st == nil:
			plan.errs = append(plan.errs, fmt.Errorf("%s@%d not committed: this member does not hold it (revoked, lost, or never handed out)", s.parts.describe(c.Partition), pos))
			continue
		case pos < 0:
			plan.errs = append(plan.errs, fmt.Errorf("%s@%d not committed: a negative offset", st.name, pos))
			continue
		case pos < st.committed:
			continue
		}
		if plan.offsets[st.t.topic] == nil {
			plan.offsets[st.t.topic] = map[int32]kgo.EpochOffset{}
		}
		plan.offsets[st.t.topic][st.t.part] = kgo.EpochOffset{Epoch: -1, Offset: pos}
		plan.sent[st.t] = sentOffset{st, pos}
	}
	return plan
}

// send commits plan's offsets and records what the broker confirmed. It
// returns one error per partition that was not committed.
func (s *Source) send(ctx context.Context, plan commitPlan) []error {
	var errs []error
	confirmed := make([]sentOffset, 0, len(plan.sent))
	s.cl.CommitOffsetsSync(ctx, plan.offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			errs = append(errs, kafkaclient.Explain(err))
			return
		}
		for _, t := range resp.Topics {
			topic := t.Topic
			if topic == "" {
				// From version 10 on, a response names topics by id only.
				for _, rt := range req.Topics {
					if rt.TopicID == t.TopicID {
						topic = rt.Topic
					}
				}
			}
			for _, p := range t.Partitions {
				x, ok := plan.sent[tp{topic, p.Partition}]
				if !ok {
					continue
				}
				if err := kafkaclient.ForCode(p.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("%s@%d: %w", x.st.name, x.pos, err))
					continue
				}
				confirmed = append(confirmed, x)
			}
		}
	})
	if len(errs) == 0 && len(confirmed) < len(plan.sent) {
		errs = append(errs, fmt.Errorf("the broker's answer left out %d of the %d partitions sent", len(plan.sent)-len(confirmed), len(plan.sent)))
	}
	s.mu.Lock()
	for _, x := range confirmed {
		x.st.committed = max(x.st.committed, x.pos)
	}
	s.mu.Unlock()
	return errs
}

// Seek makes the next batches of p start at pos. It takes effect in Poll
// (the client wants offsets set from the polling goroutine): buffered records
// of p are dropped, and a Poll waiting for data is woken to apply it.
func (s *Source) Seek(_ context.Context, p connector.Partition, pos connector.Position) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.parts.byHost(p)
	if st == nil {
		return fmt.Errorf("kafka: source %s: seek of %s, which this member does not hold", s.name, s.parts.describe(p))
	}
	if pos < 0 {
		return fmt.Errorf("kafka: source %s: seek of %s to negative offset %d", s.name, st.name, pos)
	}
	s.seeks[st.t] = int64(pos)
	if s.pollCancel != nil {
		s.pollCancel()
	}
	return nil
}

// Detach hands the member on to the next run of the pipeline
// (connector.Detacher): it stays in its group and keeps its partitions, so
// the group does not rebalance. The runtime calls it after the last Poll
// and the final commit. Every partition this run was handed is taken back,
// to be handed to the next run (through Host.Assign, at its first batch)
// from the offset committed last: what was polled past it, and what is
// buffered and not handed out yet, is fetched again. While the client blocks
// a rebalance for our last poll, Detach moves the offsets at once and lets
// the rebalance go on; a partition the group takes away before the next run
// is only forgotten (its final watermark is committed already).
func (s *Source) Detach(context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	// Waits for a rebalance callback still calling the old Host.
	s.hostMu.Lock()
	s.host = nil
	s.hostMu.Unlock()
	s.mu.Lock()
	for t, st := range s.parts.byTP {
		if st.id.ok {
			if st.committed < st.next {
				s.seeks[t] = st.committed
			}
			st.start = st.committed
		}
	}
	for _, f := range s.queue {
		st := s.parts.get(f.tp)
		if st == nil {
			continue
		}
		if _, ok := s.seeks[f.tp]; !ok {
			s.seeks[f.tp] = max(st.next, f.recs[0].Offset)
		}
	}
	s.parts.takeBack()
	s.mu.Unlock()
	if s.holding {
		// The polling goroutine is gone and the rebalance is blocked: the
		// offsets may be set here, as Poll would.
		s.applySeeks()
		s.release()
	}
	return nil
}

// Reattach gives the member to a new run of the pipeline: partitions are
// handed to h as their data arrives, as after Open.
func (s *Source) Reattach(_ context.Context, h connector.Host) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.hostMu.Lock()
	s.host = h
	s.hostMu.Unlock()
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

var _ connector.Detacher = (*Source)(nil)
var _ connector.LagReporter = (*Source)(nil)
