package postgres

import (
	"errors"
	"sync"
)

// chain keeps a sealed group from committing after an earlier one failed.
//
// The positions the runtime gives a group claim that every earlier record of
// the partition is in that group or an earlier one. A sealed group commits
// after the groups sealed before it (the runtime persists them in order), so
// its claim holds once it commits, unless an earlier group failed: its
// records are then not in the table, and committing the later group's
// positions would make the sink skip them when they come again. The runtime
// persists nothing more of a round after a failed Persist and writes the
// failed groups again, in order, itself; the chain is the sink's own guard
// for the same rule, so that the rule does not rest on the caller alone:
// once a Persist failed, the Persist of every group sealed after it fails
// without writing, until Abort (which the runtime calls before it writes the
// failed records again, under positions given anew).
type chain struct {
	mu       sync.Mutex
	failedAt uint64 // sequence number of the first failed group since the last Abort; 0 for none
}

var errEarlierFailed = errors.New("a group sealed earlier failed; this one is written again after it")

// begin reports whether the sealed group seq may commit.
func (c *chain) begin(seq uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failedAt != 0 && seq > c.failedAt {
		return errEarlierFailed
	}
	return nil
}

// end records the outcome of group seq's Persist.
func (c *chain) end(seq uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && (c.failedAt == 0 || seq < c.failedAt) {
		c.failedAt = seq
	}
}

// abort forgets a failure: the runtime writes the failed records again.
func (c *chain) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failedAt = 0
}
