package pollstep

import (
	"fmt"
	"slices"
	"testing"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

func TestPause(t *testing.T) {
	for _, tc := range []struct {
		v    PauseView
		want bool
	}{
		{PauseView{Batches: 3, Bytes: 100, MaxBatches: 4, MaxBytes: 1000}, false},
		{PauseView{Batches: 4, Bytes: 100, MaxBatches: 4, MaxBytes: 1000}, true},
		{PauseView{Batches: 0, Bytes: 1000, MaxBatches: 4, MaxBytes: 1000}, true},
		{PauseView{Batches: 0, Bytes: 5000, MaxBatches: 4, MaxBytes: 1000}, true}, // passed by one batch
		{PauseView{EOF: true, MaxBatches: 4, MaxBytes: 1000}, true},
	} {
		if got := Pause(tc.v); got != tc.want {
			t.Errorf("Pause(%+v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestAfterPoll(t *testing.T) {
	for _, tc := range []struct {
		v    PollView
		want Outcome
	}{
		{PollView{}, Issue},
		{PollView{Rewound: true}, Issue}, // a batch despite the cancellation: the old epoch's
		{PollView{Err: true, EndOfInput: true}, EndOfInput},
		{PollView{Err: true, EndOfInput: true, Stopped: true}, EndOfInput},
		{PollView{Err: true, Stopped: true, Rewound: true}, Stop},
		{PollView{Err: true, Rewound: true}, Again},
		{PollView{Err: true}, Fail},
	} {
		if got := AfterPoll(tc.v); got != tc.want {
			t.Errorf("AfterPoll(%+v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestRewinds(t *testing.T) {
	rw := func(p, e, pos int) policy.Rewind {
		return policy.Rewind{Partition: checkpoint.Partition(p), Epoch: checkpoint.Epoch(e), Position: checkpoint.Position(pos)}
	}
	for _, tc := range []struct {
		name string
		v    RewindView
		want []policy.Rewind
	}{
		{"none", RewindView{}, nil},
		{"one, current", RewindView{Requests: []policy.Rewind{rw(0, 1, 10)}, Epochs: []checkpoint.Epoch{1}}, []policy.Rewind{rw(0, 1, 10)}},
		{"of an epoch that ended", RewindView{Requests: []policy.Rewind{rw(0, 1, 10)}, Epochs: []checkpoint.Epoch{2}}, nil},
		{"of a partition revoked", RewindView{Requests: []policy.Rewind{rw(0, 1, 10)}, Epochs: []checkpoint.Epoch{0}}, nil},
		{"twice for one epoch: the first", RewindView{Requests: []policy.Rewind{rw(0, 1, 10), rw(0, 1, 20)}, Epochs: []checkpoint.Epoch{1, 1}}, []policy.Rewind{rw(0, 1, 10)}},
		{"in order, stale ones dropped", RewindView{Requests: []policy.Rewind{rw(2, 3, 5), rw(0, 1, 10), rw(1, 1, 7)}, Epochs: []checkpoint.Epoch{3, 2, 1}},
			[]policy.Rewind{rw(2, 3, 5), rw(1, 1, 7)}},
		{"epochs missing: nothing", RewindView{Requests: []policy.Rewind{rw(0, 1, 10)}}, nil},
	} {
		got := Rewinds(tc.v)
		if !slices.Equal(got.Seeks, tc.want) || got.ClearEOF != (len(tc.want) > 0) {
			t.Errorf("%s: Rewinds = %s, want seeks %v and ClearEOF %v", tc.name, fmt.Sprintf("%+v", got), tc.want, len(tc.want) > 0)
		}
	}
}
