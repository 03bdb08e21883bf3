package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/policy"
	"github.com/weir-etl/weir/pipeline/internal/pollstep"
)

type batchInfo struct {
	bytes  int64
	issued time.Time
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
func (s *sourceRunner) putBatch(b *connector.Batch) {
	s.poller.batches.put(b)
}

// poll is the polling goroutine. It returns when pollCtx is done or the
// source fails; the runtime then closes the workers' input.
func (s *sourceRunner) poll(pollCtx, hardCtx context.Context) {
	s.poller.pollCtx = pollCtx
	if !s.open(pollCtx) {
		return
	}
	s.opened.Store(true)
	s.poller.rewindCtx = s.rewinds.newContext(pollCtx)
	defer s.rewinds.stop()
	for {
		if !s.rt.o.pause.wait(pollCtx) {
			return
		}
		if err := s.doRewinds(pollCtx, hardCtx); err != nil {
			s.rt.fail(err)
			return
		}
		// Backpressure: wait until in-flight batches and bytes are under the
		// limits; resolutions come back through the checkpointer goroutine.
		// At the end of input, wait for a rewind or the stop.
		if pollstep.Pause(pollstep.PauseView{EOF: s.eof.Load(), Batches: s.inflightBatches.Load(), Bytes: s.inflightBytes.Load(),
			MaxBatches: int64(s.spec.MaxInFlightBatches), MaxBytes: s.spec.MaxInFlightBytes}) {
			if h := s.rt.o.hooks.paused; h != nil && !s.eof.Load() {
				h(s.spec.Name, s.inflightBatches.Load(), s.inflightBytes.Load())
			}
			// Once a pause: the sinks' groups may be what holds the batches
			// in flight (pressed, caughtup.go).
			if !s.poller.pressed && !s.eof.Load() {
				s.poller.pressed = true
				if !s.rt.pressed(hardCtx, s, s.inflightBatches.Load()) {
					return
				}
			}
			select {
			case <-s.credit:
			case <-s.rewinds.sig:
				signal(s.rewinds.sig) // for doRewinds, at the top of the loop
			case <-pollCtx.Done():
				return
			}
			continue
		}
		b := s.poller.batches.get()
		rctx := s.poller.rewindCtx // only the poller replaces it
		err := s.src.Poll(rctx, b)
		switch pollstep.AfterPoll(pollstep.PollView{Err: err != nil, EndOfInput: errors.Is(err, connector.ErrEndOfInput),
			Stopped: pollCtx.Err() != nil, Rewound: rctx.Err() != nil}) {
		case pollstep.EndOfInput:
			s.putBatch(b)
			s.eof.Store(true)
			signal(s.notify)
			s.rt.flushSinks(s)
			continue
		case pollstep.Stop:
			s.putBatch(b)
			return
		case pollstep.Again:
			// A rewind interrupted the Poll: no batch, rewind at the top of
			// the loop.
			s.putBatch(b)
			continue
		case pollstep.Fail:
			s.putBatch(b)
			s.rt.fail(fmt.Errorf("pipeline: source %s: poll: %w", s.spec.Name, err))
			return
		}
		// A Poll that returns a batch although a rewind cancelled it is
		// issued like any other: it belongs to the epoch before the rewind,
		// so its acknowledgements are stale once doRewinds starts the new one.
		s.poller.pressed = false
		ref, name, gen, err := s.checkAndIssue(b)
		if err != nil {
			s.putBatch(b)
			s.rt.fail(err)
			return
		}
		s.issue(b, ref, name)
		caughtUp := b.CaughtUp
		if !s.rt.dispatch(hardCtx, s, b, gen) {
			return
		}
		if caughtUp && !s.rt.caughtUp(hardCtx, s) {
			return
		}
	}
}

// open opens the source, or reattaches it when the run before handed it on
// (handover.go); it reports whether the source is open.
func (s *sourceRunner) open(pollCtx context.Context) bool {
	if d, ok := s.src.(connector.Detacher); ok && s.reattach {
		// Handed on by the run before (handover.go): its read-ahead limit
		// is the same, and it is open already.
		if err := d.Reattach(pollCtx, s); err != nil {
			if pollCtx.Err() == nil {
				s.rt.fail(fmt.Errorf("pipeline: source %s: reattach: %w", s.spec.Name, err))
			}
			return false
		}
	} else {
		if l, ok := s.src.(connector.ReadAheadLimiter); ok {
			l.LimitReadAhead(s.spec.MaxInFlightBytes)
		}
		if err := s.src.Open(pollCtx, s); err != nil {
			if pollCtx.Err() == nil {
				s.rt.fail(fmt.Errorf("pipeline: source %s: open: %w", s.spec.Name, err))
			}
			return false
		}
	}
	return true
}

// checkPositions checks that b's records carry their own positions: offsets
// from where the batch begins, in order (see connector.Position). Everything
// that skips records a sink already holds relies on it (see sinkprogress.go):
// a record whose offset lies below where its batch begins would be skipped
// on a replay as already written. A source that breaks the rule stops the
// run at once. An offset at or above the batch's End is allowed: a sink's
// progress only ever reaches a batch's End, so such a record is never
// skipped before a later batch claims it.
func (s *sourceRunner) checkPositions(b *connector.Batch) error {
	start := s.host.starts[b.Partition]
	if b.End < start {
		return fmt.Errorf("pipeline: source %s: partition %s: a batch ends at %d, before where it begins (%d): positions must not go back (see connector.Position)",
			s.spec.Name, s.host.names[b.Partition], b.End, start)
	}
	last := start
	for i := range b.Records {
		off := checkpoint.Position(b.Records[i].Origin.Offset)
		if off < last {
			return fmt.Errorf("pipeline: source %s: partition %s: record %d of a batch has offset %d, before where the batch begins (%d) or before the record ahead of it: set each record's Origin.Offset to its own position (see connector.Position)",
				s.spec.Name, s.host.names[b.Partition], i, off, start)
		}
		last = off
	}
	s.host.starts[b.Partition] = b.End
	s.host.readTo[b.Partition] = max(s.host.readTo[b.Partition], b.End)
	return nil
}

// checkAndIssue checks b (its partition is assigned, its records carry their
// positions) and issues its reference, under the one lock per batch the Host
// takes. It returns the partition's name and assignment generation.
func (s *sourceRunner) checkAndIssue(b *connector.Batch) (checkpoint.AckRef, string, uint64, error) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if int(b.Partition) >= len(s.host.names) || s.host.iss.Epoch(b.Partition) == 0 {
		return checkpoint.AckRef{}, "", 0, fmt.Errorf("pipeline: source %s: poll returned a batch of partition %d, which it never assigned (call Host.Assign first)", s.spec.Name, b.Partition)
	}
	if err := s.checkPositions(b); err != nil {
		return checkpoint.AckRef{}, "", 0, err
	}
	return s.host.iss.Issue(b.Partition, b.End), s.host.names[b.Partition], s.host.gens[b.Partition], nil
}

// issue gives b's records their references: ref, the batch's, and a clone per
// record, the first reference to the last record.
func (s *sourceRunner) issue(b *connector.Batch, ref checkpoint.AckRef, name string) {
	n := len(b.Records)
	// One atomic add for the batch, not one a record: the last record takes
	// ref itself, the others a copy each of the n-1 references CloneN adds.
	// No reference is released before the table entry below exists: the
	// records are not handed on yet.
	var c checkpoint.AckRef
	if n > 1 {
		c = ref.CloneN(n - 1)
	}
	var bytes int64
	for i := range b.Records {
		r := &b.Records[i]
		bytes += int64(r.Size())
		if r.Origin.Source == "" {
			r.Origin.Source = s.spec.Name
		}
		if r.Origin.Partition == "" {
			r.Origin.Partition = name
		}
		if i < n-1 {
			*refOf(r) = c
		} else {
			*refOf(r) = ref
		}
	}
	// The table entry must exist before any reference is released: the
	// checkpointer looks it up when it drains the resolution.
	ib := issuedBatch{id: ref.Batch(), batchInfo: batchInfo{bytes: bytes, issued: s.rt.now()}}
	s.issued.send(ib, s.notify)
	s.inflightBatches.Add(1)
	s.inflightBytes.Add(bytes)
	s.mIssued.Inc()
	s.mRecordsOut.Add(float64(n))
	s.rt.totalIn.Add(int64(n))
	s.poller.read += int64(n)
	if n == 0 {
		ref.Release(checkpoint.Delivered)
	}
}

// doRewinds seeks every partition the checkpointer asked to replay back to
// its watermark and starts a new epoch there. Batches polled before are of the
// old epoch: their acknowledgements are stale. It gives the next Poll a fresh
// context if a request cancelled the last one.
func (s *sourceRunner) doRewinds(pollCtx, ctx context.Context) error {
	select {
	case <-s.rewinds.sig:
	default:
		// The request cancels before it signals: a Poll may have seen the
		// cancellation first.
		if s.poller.rewindCtx.Err() == nil {
			return nil
		}
	}
	// A fresh context first, then the requests: a request pushed after the
	// take cancels the fresh context, so the next Poll returns for it.
	if s.poller.rewindCtx.Err() != nil && pollCtx.Err() == nil {
		s.poller.rewindCtx = s.rewinds.newContext(pollCtx)
	}
	v := pollstep.RewindView{Requests: s.rewinds.take()}
	if len(v.Requests) == 0 {
		return nil
	}
	v.Epochs = s.epochs(v.Requests)
	rd := pollstep.Rewinds(v)
	if rd.ClearEOF {
		s.eof.Store(false)
	}
	for _, r := range rd.Seeks {
		if err := s.src.Seek(ctx, r.Partition, r.Position); err != nil {
			return fmt.Errorf("pipeline: source %s: seek partition %s to %d for a rewind: %w", s.spec.Name, s.partName(r.Partition), r.Position, err)
		}
		s.restart(r.Partition, r.Epoch, r.Position)
		if h := s.rt.o.hooks.rewound; h != nil {
			h(s, func() { signal(s.notify) })
		}
		s.rt.m.rewinds.WithLabelValues(s.spec.Name).Inc()
	}
	return nil
}

// epochs returns the current epoch of each request's partition.
func (s *sourceRunner) epochs(rs []policy.Rewind) []checkpoint.Epoch {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	es := make([]checkpoint.Epoch, len(rs))
	for i, r := range rs {
		es[i] = s.host.iss.Epoch(r.Partition)
	}
	return es
}

// restart starts a new epoch of p at pos after a rewind's Seek, unless p was
// revoked or assigned again since the rewind was asked for.
func (s *sourceRunner) restart(p checkpoint.Partition, e checkpoint.Epoch, pos checkpoint.Position) {
	s.hostMu.Lock()
	defer s.hostMu.Unlock()
	if s.host.iss.Epoch(p) != e {
		return
	}
	s.host.iss.Assign(p, pos)
	s.host.starts[p] = pos
}
