package postgres

import (
	"errors"
	"sync"
)

// chain keeps sealed groups from becoming durable out of turn.
//
// The positions the runtime gives a group claim that every earlier record of
// the partition is in that group or an earlier one. A sealed group is
// committed only after the groups sealed before it (the runtime persists them
// in order), so its claim holds once it commits, unless an earlier group
// failed: its records are then not in the table, and committing the later
// group's positions would make the sink skip them when they come again. So
// once a Persist fails, every Persist of a group sealed after it fails too,
// and a synchronous Flush waits for the sealed groups to be settled, until
// the runtime has every failed group back: it then calls Abort with nothing
// sealed outstanding, and writes the failed records again in a Flush, under
// positions given anew.
type chain struct {
	mu       sync.Mutex
	failedAt uint64 // sequence number of the first failed group since the last reset; 0 for none
	done     uint64 // the highest sequence number whose Persist has returned
}

var (
	errEarlierFailed  = errors.New("a group sealed earlier failed; this one is written again after it")
	errEarlierPending = errors.New("groups sealed earlier are not settled yet")
)

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
	c.done = max(c.done, seq)
	if err != nil && c.failedAt == 0 {
		c.failedAt = seq
	}
}

// flushable reports whether a synchronous Flush may commit, sealed being the
// last sequence number handed out.
func (c *chain) flushable(sealed uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.done < sealed:
		return errEarlierPending
	case c.failedAt != 0:
		return errEarlierFailed
	}
	return nil
}

// abort forgets a failure once every sealed group has returned from Persist:
// the runtime then holds all the failed groups' records and writes them again.
func (c *chain) abort(sealed uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done >= sealed {
		c.failedAt = 0
	}
}
