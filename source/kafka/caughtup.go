package kafka

// A batch is marked connector.Batch.CaughtUp, so that the sinks flush now
// rather than at their max_age, when the source has read everything the
// brokers had when they answered:
//
//   - the last poll of the client left nothing in the client's buffer
//     (kgo.Client.BufferedFetchRecords); and
//   - no partition is behind: in the last fetch that returned records of a
//     partition, its last record was at the partition's high watermark
//     (the offset after the newest record the brokers hold);
//
// and the batch is the last one the source holds from that poll. A poll cut
// short by max_poll_records, or a partition that a fetch's size limit left
// behind, keeps the source from claiming it caught up while a backlog
// drains. (A fetch that arrives between the poll and the check counts as
// more to read: the claim waits for the next poll.) What goes wrong is cheap either way: a claim made too early
// flushes a group early (the runtime honours a claim at most once per
// max_age), one missed leaves the group to max_age, as without the claim.
// A partition whose newest offsets are transaction markers, which the
// client does not hand out as records, looks behind until a record follows
// them; its groups wait for max_age. A partition not fetched yet does not
// count as behind (an idle partition is never fetched with records), so a
// claim can come before a partition's first fetch; since the runtime
// honours one claim per max_age, that partition's first group may then wait
// for max_age.

import "github.com/weir-etl/weir/connector"

// noteFetched records where a partition stands after a fetch that returned
// records up to last: behind its high watermark hw, or caught up with it.
func (s *Source) noteFetched(t tp, last, hw int64) {
	if last+1 < hw {
		s.behind[t] = struct{}{}
	} else {
		delete(s.behind, t)
	}
}

// isCaughtUp reports whether the poll of the client just made leaves the
// source caught up. Partitions no longer held stop counting as behind.
func (s *Source) isCaughtUp() bool {
	if len(s.behind) > 0 {
		s.mu.Lock()
		for t := range s.behind {
			if s.parts.get(t) == nil {
				delete(s.behind, t)
			}
		}
		s.mu.Unlock()
	}
	return len(s.behind) == 0 && s.cl.BufferedFetchRecords() == 0
}

// noteEnd keeps t's high-water mark from its last fetch: where the next
// record appended to the partition will be, its end for Ends.
func (s *Source) noteEnd(t tp, hw int64) {
	s.endsMu.Lock()
	if s.ends == nil {
		s.ends = map[string]connector.Position{}
	}
	s.ends[t.name()] = connector.Position(hw)
	s.endsMu.Unlock()
}

// Ends implements connector.LagReporter: by partition name, the high-water
// mark of the partition's last fetch, as a copy. The lag the runtime derives
// (the high-water mark minus the committed offset) is the records of the
// partition not yet delivered, as of that fetch; a partition caught up and
// idle keeps the mark of its last fetch that returned it. Partitions this
// member no longer owns may still be named: the runtime ignores them.
func (s *Source) Ends() map[string]connector.Position {
	s.endsMu.Lock()
	defer s.endsMu.Unlock()
	out := make(map[string]connector.Position, len(s.ends))
	for name, end := range s.ends {
		out[name] = end
	}
	return out
}
