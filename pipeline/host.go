package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/weir-etl/weir/checkpoint"
)

type hostReq struct {
	ps       []checkpoint.Partition
	lost     bool
	deadline time.Time  // a revoke's drain deadline
	done     chan error // capacity 1
}

// Assign implements connector.Host.
func (s *sourceRunner) Assign(name string, start checkpoint.Position) checkpoint.Partition {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	p, ok := s.host.byName[name]
	if !ok {
		if n := len(s.host.free); n > 0 {
			p, s.host.free = s.host.free[n-1], s.host.free[:n-1]
			s.host.names[p] = name
		} else {
			p = checkpoint.Partition(len(s.host.names))
			s.host.names = append(s.host.names, name)
			s.host.gens = append(s.host.gens, 0)
			s.host.starts = append(s.host.starts, 0)
			s.host.readTo = append(s.host.readTo, 0)
		}
		s.host.byName[name] = p
	}
	s.host.gens[p]++
	s.host.starts[p], s.host.readTo[p] = start, start
	s.host.iss.Assign(p, start)
	s.rt.events.add(Event{Kind: EventAssigned, Source: s.spec.Name, Partitions: []string{name}, Message: "assigned"})
	return p
}

// release gives a forgotten partition's id back for reuse. The checkpointer
// goroutine calls it once the Checkpointer forgot the partition: any
// acknowledgement still in flight for it is of an ended epoch, and epochs are
// never reused, so a new partition under the same id cannot be confused with
// it.
func (s *sourceRunner) release(p checkpoint.Partition) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if int(p) >= len(s.host.names) || s.host.byName[s.host.names[p]] != p {
		return // assigned again meanwhile, or already released
	}
	delete(s.host.byName, s.host.names[p])
	s.host.free = append(s.host.free, p)
}

// revokeIssuing stops issuing batches of ps.
func (s *sourceRunner) revokeIssuing(ps []checkpoint.Partition) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	for _, p := range ps {
		s.host.iss.Revoke(p)
	}
}

// Revoke implements connector.Host: the checkpointer goroutine waits until the
// partitions are drained (or DrainTimeout), commits their final watermarks,
// and forgets them.
//
// The sinks are asked to flush their current groups at once, behind each
// partition's last batch, so that the revoke waits for the writes rather than
// for the sinks' MaxAge.
//
// The drain timeout counts from the call and is shared by all the
// partitions: a worker stuck behind a stalled sink delays the flush requests
// only that long, and a rebalance revoking many partitions waits for one
// timeout, not one per partition.
func (s *sourceRunner) Revoke(ctx context.Context, ps ...checkpoint.Partition) error {
	if len(ps) == 0 {
		return nil
	}
	ctx, stop := s.hostCtx(ctx)
	defer stop()
	s.rt.events.add(Event{Kind: EventRevoking, Source: s.spec.Name, Partitions: s.partNames(ps), Message: "revoking: draining in-flight batches before the final commit"})
	s.revokeIssuing(ps)
	timeout := s.rt.g.spec.Checkpoint.DrainTimeout
	deadline := s.rt.now().Add(timeout)
	fctx, cancel := context.WithTimeout(ctx, timeout)
	s.rt.flushPartitions(fctx, s, ps)
	cancel()
	return s.hostRequest(ctx, hostReq{ps: slices.Clone(ps), deadline: deadline})
}

// errRewind is the cause with which a rewind request cancels the context of
// the Poll in progress.
var errRewind = errors.New("pipeline: poll interrupted to rewind a partition")

// hostCtx returns ctx minus the cancellation of a rewind request. A source
// calls Revoke from inside Poll with the Poll's context (a file source giving
// up a file); that context is cancelled to apply a rewind, which must not cut
// the revoke's wait short. The result is done when ctx is done for another
// reason (a Poll's context is when polling stops).
//
// Polling stopping does not end a revoke called from another goroutine (a
// Kafka client's rebalance callback) with a context of its own: a graceful
// stop that comes during a rebalance still drains and commits the revoked
// partitions before the rebalance gives them away. (It once did, and the
// next owner read again what had been written, beyond the bound of what a
// crash leaves uncommitted; test/kafka's TestE2EGroupKillJoinStop caught it.)
func (s *sourceRunner) hostCtx(ctx context.Context) (context.Context, func()) {
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop1 := context.AfterFunc(ctx, func() {
		if c := context.Cause(ctx); !errors.Is(c, errRewind) {
			cancel(c)
		}
	})
	return hctx, func() {
		stop1()
		cancel(nil)
	}
}

// Lost implements connector.Host: the partitions are forgotten, nothing committed.
func (s *sourceRunner) Lost(ps ...checkpoint.Partition) {
	if len(ps) == 0 {
		return
	}
	s.revokeIssuing(ps)
	s.rt.events.add(Event{Kind: EventLost, Source: s.spec.Name, Partitions: s.partNames(ps), Message: "lost: forgotten without a commit; what was not committed is read again by the next owner"})
	_ = s.hostRequest(context.Background(), hostReq{ps: slices.Clone(ps), lost: true})
}

// Skip implements connector.Host.
func (s *sourceRunner) Skip(reason string, records int64) {
	s.skips.add(&s.skips.skipped, reason, records)
	s.rt.m.skipped.WithLabelValues(s.spec.Name, reason).Add(float64(records))
}

// Unread implements connector.Host.
func (s *sourceRunner) Unread(reason string, bytes int64) {
	s.skips.add(&s.skips.unread, reason, bytes)
	s.rt.m.unread.WithLabelValues(s.spec.Name, reason).Add(float64(bytes))
}

// Logger implements connector.Host.
func (s *sourceRunner) Logger() *slog.Logger { return s.log }
func (s *sourceRunner) hostRequest(ctx context.Context, r hostReq) error {
	r.done = make(chan error, 1)
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.cpDone:
		return errors.New("pipeline: source stopped")
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
func (s *sourceRunner) partName(p checkpoint.Partition) string {
	name, _ := s.partInfo(p)
	return name
}

// partInfo returns a partition's name and assignment generation.
func (s *sourceRunner) partInfo(p checkpoint.Partition) (string, uint64) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if int(p) < len(s.host.names) {
		return s.host.names[p], s.host.gens[p]
	}
	return fmt.Sprint(p), 0
}

// committedOf returns p's last committed position, or -1 if none is known.
func (s *sourceRunner) committedOf(p checkpoint.Partition) checkpoint.Position {
	if c := s.committed.Load(); c != nil && int(p) < len(*c) {
		return (*c)[p]
	}
	return -1
}

// publishCommitted makes the committed positions of states visible to the
// sinks: a new slice, never changed once published. Only the checkpointer
// goroutine calls it.
func (s *sourceRunner) publishCommitted(states []checkpoint.PartitionState) {
	var pos []checkpoint.Position
	if c := s.committed.Load(); c != nil {
		pos = slices.Clone(*c)
	}
	for _, ps := range states {
		for int(ps.Partition) >= len(pos) {
			pos = append(pos, -1)
		}
		pos[ps.Partition] = ps.Committed
	}
	s.committed.Store(&pos)
}

// readBeyond reports whether batches of p were read past pos.
func (s *sourceRunner) readBeyond(p checkpoint.Partition, pos checkpoint.Position) bool {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	return int(p) < len(s.host.readTo) && s.host.readTo[p] > pos
}
