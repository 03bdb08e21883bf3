package pipeline

import (
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/record"
)

// Poll batches and the chunks that carry records to sinks are reused through
// bounded free lists rather than sync.Pools. A sync.Pool is emptied by every
// second garbage collection, and a pipeline moving small records collects
// often: each slice then started again at a small capacity and was regrown by
// doubling to the size of a poll batch (thousands of records), which was a
// large part of the pipeline's garbage. A free list keeps the slices and their
// capacity. It is bounded, so a burst of large batches does not pin its memory
// forever: a slice put back into a full list is left to the collector.
//
// Batches and chunks trade slices: a worker that hands a whole batch to one
// sink gives the sink the batch's slice and the batch an empty one (see
// worker.batch), so both lists end up holding slices of batch size.

// freeListSize bounds each free list. Batches and chunks in use at once are
// bounded by the channels between the stages (capacity 4 each); a list only
// needs to cover their turnover.
const freeListSize = 32

// batchList is a free list of poll batches.
type batchList chan *connector.Batch

func (l batchList) get() *connector.Batch {
	select {
	case b := <-l:
		return b
	default:
		return new(connector.Batch)
	}
}

// put empties b and keeps it for reuse.
func (l batchList) put(b *connector.Batch) {
	b.Reset()
	select {
	case l <- b:
	default:
	}
}

// chunkList is a free list of the record slices chunks carry.
type chunkList chan *[]record.Record

func (l chunkList) get() *[]record.Record {
	select {
	case p := <-l:
		return p
	default:
		s := make([]record.Record, 0, 64)
		return &s
	}
}

// put empties *p, keeping its capacity, and keeps it for reuse.
func (l chunkList) put(p *[]record.Record) {
	clear(*p)
	*p = (*p)[:0]
	select {
	case l <- p:
	default:
	}
}
