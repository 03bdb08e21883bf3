// Package pollstep holds the decisions of a source's polling goroutine as
// pure steps, in the style of the commit policy (pipeline/internal/policy):
// whether to poll or wait, what a Poll's outcome means, and which rewind
// requests to carry out. The goroutine does the I/O (Poll, Seek) and the
// issuing.
package pollstep

import (
	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

// PauseView is what the poller knows before a Poll.
type PauseView struct {
	EOF                  bool  // the source reached its end of input
	Batches, Bytes       int64 // in flight
	MaxBatches, MaxBytes int64 // the source's limits
}

// Pause reports whether the poller waits (for credit, a rewind or the stop)
// instead of polling: at the end of input, or when the batches or bytes in
// flight reached their limit. The limit is checked before polling, so it can
// be passed by one batch.
func Pause(v PauseView) bool {
	return v.EOF || v.Batches >= v.MaxBatches || v.Bytes >= v.MaxBytes
}

// Outcome is what a Poll's result means.
type Outcome uint8

// The outcomes of a Poll.
const (
	Issue      Outcome = iota // a batch: check and issue it (even if a rewind cancelled the Poll: it belongs to the old epoch)
	EndOfInput                // the source read everything: note it, flush the sinks, poll again (for a rewind)
	Stop                      // polling stopped
	Again                     // a rewind interrupted the Poll: no batch; rewind, then poll again
	Fail                      // the source failed: stop the run
)

func (o Outcome) String() string {
	return [...]string{"issue", "end of input", "stop", "again", "fail"}[o]
}

// PollView is the result of a Poll.
type PollView struct {
	Err        bool // Poll returned an error
	EndOfInput bool // the error is connector.ErrEndOfInput
	Stopped    bool // the poll context is done
	Rewound    bool // a rewind request cancelled the Poll's context
}

// AfterPoll decides what the result of a Poll means. An error that comes
// with a rewind's cancellation is taken for the interruption: if it was
// another one, the next Poll returns it again.
func AfterPoll(v PollView) Outcome {
	switch {
	case !v.Err:
		return Issue
	case v.EndOfInput:
		return EndOfInput
	case v.Stopped:
		return Stop
	case v.Rewound:
		return Again
	}
	return Fail
}

// RewindView is the requests taken, in the order they were made, and for
// each the current epoch of its partition (0: not assigned).
type RewindView struct {
	Requests []policy.Rewind
	Epochs   []checkpoint.Epoch
}

// RewindReady is what to carry out, in order: Seek each of Seeks, and start
// its new epoch. ClearEOF says the source is no longer at its end of input,
// to be noted before the first new epoch starts: the checkpointer goroutine,
// seeing a partition unblocked and nothing in flight, would otherwise take a
// source still marked at its end for finished, and end the run with the
// replay unread.
type RewindReady struct {
	Seeks    []policy.Rewind
	ClearEOF bool
}

// Rewinds decides which requests to carry out: a request of an epoch that
// ended (the partition was revoked, assigned again, or rewound by an earlier
// request) is dropped.
func Rewinds(v RewindView) RewindReady {
	var r RewindReady
	done := map[checkpoint.Partition]bool{}
	for i, q := range v.Requests {
		if i >= len(v.Epochs) || v.Epochs[i] != q.Epoch || done[q.Partition] {
			continue
		}
		done[q.Partition] = true
		r.Seeks = append(r.Seeks, q)
	}
	r.ClearEOF = len(r.Seeks) > 0
	return r
}
