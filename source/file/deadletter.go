package file

import (
	"time"

	"github.com/weir-etl/weir/internal/deadletter"
	"github.com/weir-etl/weir/record"
)

// readDeadLetter turns one line of a dead letter file (format dead_letter)
// back into the record that failed: its value, key, headers and time as they
// were, and where and why it failed in meta (dead_letter.*, see
// deadletter.Replay). Its origin is this file's, so that the replay's
// progress is this file's position. A line that is not an envelope follows
// on_invalid: an error (a *LineError) with error, skipped with a warning
// (ok false, no error) with skip.
func (s *Source) readDeadLetter(f *file, line []byte, start int64, now time.Time) (record.Record, bool, error) {
	env, err := deadletter.Decode(line)
	if err != nil {
		if s.cfg.OnInvalid == "skip" {
			s.skipped.Add(1)
			s.log.Warn("source/file: dropped a line that is not a dead letter envelope (on_invalid: skip)", "path", f.path, "offset", start, "error", err)
			return record.Record{}, false, nil
		}
		return record.Record{}, false, &LineError{Path: f.path, Offset: start, Err: err}
	}
	rec := deadletter.Replay(&env, f.meta)
	rec.Origin = record.Origin{Source: s.name, Partition: f.name, Offset: start}
	if rec.Time.IsZero() {
		rec.Time = now
	}
	return rec, true, nil
}
