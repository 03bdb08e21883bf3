package kafka

import (
	"fmt"
	"strconv"

	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

type tp struct {
	topic string
	part  int32
}

func (t tp) name() string { return t.topic + "/" + strconv.Itoa(int(t.part)) }

// hostID is the runtime's id of a partition, known once the partition's first
// batch was handed out (Host.Assign returns it). The runtime numbers
// partitions from 0, so no connector.Partition value can stand for "not
// handed out yet": the zero id is the runtime's first real partition. A
// partition that was never handed out has the zero hostID, whose ok is false.
type hostID struct {
	p  connector.Partition
	ok bool
}

// partState is one partition this member owns.
type partState struct {
	t tp
	// start is where the assignment starts reading: the committed offset, or
	// -1 when there is none and the first record read decides.
	start int64
	// id is the runtime's id, once the partition was handed out.
	id hostID
	// next is the offset after the last record handed out; records below it
	// (a fetch that raced a seek) are never handed out again.
	next int64
	// committed is the highest offset this member committed for the
	// partition in this assignment; Commit never sends a lower one.
	committed int64
	// name is the partition's name for Origin ("orders/3"), and meta the
	// metadata every record of it carries, shared by all of them (capacity
	// 1, so an append copies), so that a batch allocates neither.
	name string
	meta []record.Meta
}

// owned is the source's bookkeeping of the partitions the member holds: by
// topic and partition from the moment the group assigns them, and by the
// runtime's id from the moment their first batch is handed out. It has no
// locks (the Source guards it with its mu), no I/O and no calls out.
//
// Every removal goes through drop, which removes a partition's id entry only
// when the partition has one and the entry is that very assignment's: a
// partition never handed out has no id to remove, and must not remove the
// entry of the partition the runtime numbered 0.
type owned struct {
	byTP map[tp]*partState
	byID map[connector.Partition]*partState
	// seen holds every partition ever handed out, by id, for error
	// messages: the runtime keeps a partition's id for the whole run, so a
	// commit or seek of a partition this member gave up can name it.
	seen map[connector.Partition]tp
}

func newOwned() owned {
	return owned{byTP: map[tp]*partState{}, byID: map[connector.Partition]*partState{}, seen: map[connector.Partition]tp{}}
}

// assign records a new assignment of t starting at start (-1: the first
// record read decides) and returns it. An assignment of t still held
// replaces it.
func (o *owned) assign(t tp, start int64) *partState {
	o.drop(t)
	st := &partState{t: t, start: start, next: start, committed: start,
		name: t.name(), meta: []record.Meta{{Key: "topic", Value: t.topic}}}
	o.byTP[t] = st
	return st
}

// handOut records that st's first batch was handed out under the runtime's
// id p.
func (o *owned) handOut(st *partState, p connector.Partition) {
	if o.byTP[st.t] != st {
		panic(fmt.Sprintf("kafka: handing out %s, which is not a current assignment", st.name))
	}
	if other, ok := o.byID[p]; ok && other != st {
		panic(fmt.Sprintf("kafka: the runtime gave %s the id %d of %s, which this member still holds", st.name, p, other.name))
	}
	st.id = hostID{p: p, ok: true}
	o.byID[p] = st
	o.seen[p] = st.t
}

// takeBack forgets every id the runtime gave, for a new run: the partitions
// stay owned, and are handed out again under the new run's ids.
func (o *owned) takeBack() {
	for _, st := range o.byTP {
		st.id = hostID{}
	}
	clear(o.byID)
	clear(o.seen)
}

// get returns the current assignment of t, or nil.
func (o *owned) get(t tp) *partState { return o.byTP[t] }

// byHost returns the handed-out partition the runtime calls p, or nil.
func (o *owned) byHost(p connector.Partition) *partState { return o.byID[p] }

// drop forgets the current assignment of t and returns it (nil if t is not
// held).
func (o *owned) drop(t tp) *partState {
	st := o.byTP[t]
	if st == nil {
		return nil
	}
	delete(o.byTP, t)
	if st.id.ok && o.byID[st.id.p] == st {
		delete(o.byID, st.id.p)
	}
	return st
}

// dropIf forgets st if it is still t's current assignment.
func (o *owned) dropIf(st *partState) {
	if o.byTP[st.t] == st {
		o.drop(st.t)
	}
}

// describe names the runtime's partition p for an error.
func (o *owned) describe(p connector.Partition) string {
	if t, ok := o.seen[p]; ok {
		return fmt.Sprintf("%s (partition %d)", t.name(), p)
	}
	return fmt.Sprintf("partition %d", p)
}
