package pipeline

import (
	"context"
	"time"
)

// lingering reports whether the linger check applies: MaxAge would flush no
// later otherwise.
func (s *sinkRunner) lingering() bool {
	return s.spec.Batch.Linger > 0 && s.spec.Batch.Linger < s.spec.Batch.MaxAge
}

// noteInput records the arrival of records and makes sure the linger timer
// runs while the group holds any.
func (s *sinkRunner) noteInput() {
	if !s.lingering() {
		return
	}
	s.lastIn = s.rt.now()
	if len(s.group) > 0 && !s.lingerOn {
		s.linger.Reset(s.spec.Batch.Linger)
		s.lingerOn = true
	}
}

// checkLinger flushes the group if no records arrived for Linger; otherwise
// it waits for the rest of the idle time.
func (s *sinkRunner) checkLinger(ctx context.Context) {
	if len(s.group) == 0 || !s.lingering() {
		return
	}
	idle := s.rt.now().Sub(s.lastIn)
	if idle >= s.spec.Batch.Linger {
		s.flush(ctx)
		return
	}
	s.linger.Reset(s.spec.Batch.Linger - idle)
	s.lingerOn = true
}

// The group size, adapted (batch.max_records left to its default).
//
// A group's fixed cost (a transaction's round trips and commit, a file's
// fsync, a hand-off between goroutines) is paid once per group, so that a
// sink behind a backlog goes faster with larger groups, while a sink that
// keeps up gains nothing from them but memory and latency. A fixed record
// count is right for one of the two only. So, unless batch.max_records is
// set, the count at which a group closes follows the sink's pace: it doubles
// while making a group durable takes at least as long as filling one (the
// sink is what the pipeline waits for: with batch.overlap, a sink that is
// faster than that already makes groups durable while the next ones fill,
// and larger groups would gain it nothing), and it shrinks by a quarter
// when that takes less than a quarter (the sink keeps up, as with a
// trickling source, whose groups close on max_age). It stays between
// DefaultBatchMaxRecords and DefaultBatchMaxRecordsCeiling, and below what
// fits in three fifths of batch.max_bytes counting each record's size in
// memory (its struct beside its bytes, record.Record.Size), so that small
// records do not make a group of many megabytes of record structs. Three
// fifths, since a sink holds up to three groups at once (one filling, one
// sealed, one being made durable): Kafka → file with groups up to the whole
// of max_bytes peaked at 198-205 MB of RSS (the process's own VmHWM) against
// 163-198 MB, at 0.98-1.11 of the pace (three interleaved pairs): over the
// 200 MB the defaults are held to, for a few percent.

// nextGroupTarget returns the record count at which the next group closes,
// from the current one (cur), how long the last group took to fill and to
// become durable, the mean size of a record in it (avg: record.Record.Size,
// its struct and its key's, headers' and value's bytes, what the group's
// bytes count), and the batch settings' byte limit.
func nextGroupTarget(cur int, fill, durable time.Duration, avg int64, maxBytes int64) int {
	lo, hi := DefaultBatchMaxRecords, DefaultBatchMaxRecordsCeiling
	if fit := maxBytes * 3 / 5 / max(avg, 1); fit < int64(hi) {
		hi = max(int(fit), lo)
	}
	next := cur
	switch {
	case durable >= fill:
		next = cur * 2
	case durable < fill/4:
		next = cur - cur/4
	}
	return min(max(next, lo), hi)
}

// groupSizer keeps a sink's adapted group size.
type groupSizer struct {
	adapt  bool      // batch.max_records left to its default
	target int       // the record count at which the current group closes
	since  time.Time // when the current group began to fill: the last flush
}

func newGroupSizer(b BatchSettings, now time.Time) groupSizer {
	return groupSizer{adapt: b.AdaptRecords, target: b.MaxRecords, since: now}
}

// sealed notes that a group closed at now, and returns how long it took to
// fill.
func (g *groupSizer) sealed(now time.Time) time.Duration {
	fill := now.Sub(g.since)
	g.since = now
	return fill
}

// observe adapts the target to a group of n records of bytes bytes (the
// sum of their record.Record.Size) that took fill to fill and durable to
// become durable.
func (g *groupSizer) observe(n int, bytes int64, fill, durable time.Duration, maxBytes int64) {
	if !g.adapt || n == 0 {
		return
	}
	g.target = nextGroupTarget(g.target, fill, durable, bytes/int64(n), maxBytes)
}

// groupMax is the record count at which the current group closes.
func (s *sinkRunner) groupMax() int {
	if s.size.target > 0 {
		return s.size.target
	}
	return s.spec.Batch.MaxRecords
}
