package file

import (
	"github.com/weir-etl/weir/internal/deadletter"
	"github.com/weir-etl/weir/record"
)

// decodeDeadLetter turns one line of a dead letter file (format dead_letter)
// back into the record that failed: its value, key, headers and time as they
// were, and where and why it failed in meta (dead_letter.*, see
// deadletter.Replay), after the file's own meta. Its origin is this file's
// (set by the caller), so that the replay's progress is this file's
// position. A line that is not an envelope is a bad record: on_invalid
// decides.
func decodeDeadLetter(f *file, line []byte, rec *record.Record) (bool, error) {
	if len(line) == 0 {
		return false, nil // blank lines hold no record
	}
	env, err := deadletter.Decode(line)
	if err != nil {
		return false, &badRecord{err}
	}
	*rec = deadletter.Replay(&env, f.meta)
	return true, nil
}
