package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline/internal/policy"
)

// sourceRunner runs one source: a polling goroutine (poll), which owns the
// AckIssuer and is the source's connector.Host, and a checkpointer goroutine
// (checkpoint), which owns the Checkpointer and calls Commit.
type sourceRunner struct {
	rt   *runtime
	idx  int
	spec SourceSpec
	src  connector.Source
	// reattach: src was handed on by the run before, open and detached
	// (handover.go); poll reattaches it instead of opening it.
	reattach bool
	log      *slog.Logger
	cp       *checkpoint.Checkpointer
	pol      *policy.Policy // the checkpointer goroutine's
	// reach lists the sinks the source's records can reach (stalls.go); the
	// checkpointer goroutine's.
	reach []int

	// hostMu guards the issuer and the partition tables below, so that the
	// Host's methods may be called from any goroutine (a Kafka client's
	// rebalance callbacks run on its own). The poller takes it once per
	// batch, to check and issue it: uncontended, the lock costs about 10 ns
	// of the 0.5-1 µs a batch spends there (BenchmarkIssueLock), where the
	// name lookup it replaced took one lock per batch already.
	hostMu sync.Mutex
	iss    *checkpoint.AckIssuer
	names  []string // partition names by id
	byName map[string]checkpoint.Partition
	// gens counts the assignments of each partition id (Host.Assign, not a
	// rewind): a sink's progress in a partition belongs to one assignment,
	// since another process may have written the partition in between, and
	// an id forgotten is given to the next new name.
	gens []uint64
	// starts is where each partition's next batch begins: the Assign's
	// start, a rewind's watermark, or the last batch's end. readTo is the
	// furthest end issued in the assignment: what was read, rewinds or not.
	starts []checkpoint.Position
	readTo []checkpoint.Position
	// free lists the ids of forgotten partitions, for reuse: a tail-mode file
	// source retires a partition per rotated file, and the tables must not
	// grow with them.
	free []checkpoint.Partition

	// committedPos is every partition's last committed position, published
	// by the checkpointer goroutine for the sinks (see partProgress.holds).
	committedMu  sync.RWMutex
	committedPos []checkpoint.Position

	// In-flight accounting. The poller adds when it issues a batch; the
	// checkpointer goroutine subtracts when Drain reports the batch resolved,
	// and then signals credit. Nothing on the ack path touches these.
	inflightBatches atomic.Int64
	inflightBytes   atomic.Int64
	credit          chan struct{} // capacity 1
	tableMu         sync.Mutex
	table           map[checkpoint.BatchID]batchInfo

	// Rewind requests from the checkpointer goroutine to the poller, which
	// owns the issuer and so must Seek and Assign itself. A request also
	// cancels rewindCtx, the context of the Poll in progress: a Poll blocked
	// on an idle partition would otherwise hold the rewind until new data
	// arrived. The poller replaces a cancelled rewindCtx (under rewindMu,
	// after taking the requests), so a request made after that cancels the
	// new one; an uncancelled one is reused, so polling allocates no context.
	rewindMu     sync.Mutex
	rewinds      []policy.Rewind
	rewindSig    chan struct{} // capacity 1
	rewindCtx    context.Context
	rewindCancel context.CancelCauseFunc
	pollCtx      context.Context // set before Open; the poller's stop

	reqs   chan hostReq  // Revoke and Lost, poller to checkpointer
	notify chan struct{} // capacity 1: the poller reached or left the end of input
	eof    atomic.Bool
	opened atomic.Bool   // Open returned nil
	cpDone chan struct{} // closed when the checkpointer goroutine returns

	batches batchList

	// Caught-up flush requests (caughtup.go). dispatched marks the workers
	// the poller sent batches to since its last request, and caughtSeq
	// numbers the requests; both are the poller's. caughtSent is, per
	// worker, the number of the last request sent through it: written by
	// the poller, read by the sinks.
	dispatched []bool
	caughtSeq  uint64
	caughtSent []atomic.Uint64

	// The source's metric children, looked up once: issue runs per batch.
	mIssued, mRecordsOut prometheus.Counter

	// For the Report: read is written by the poller, finalParts and finalPos
	// by the checkpointer goroutine at its final commit; both are read only
	// after those goroutines returned.
	read       int64
	finalParts int
	finalPos   int64
	skips      skipCounts
	// What the final commit left behind, for IncompleteError: partitions
	// blocked by a failure or not committed to their watermark, and batches
	// still unresolved.
	leftBehind   []string
	leftInFlight int64
}

func newSourceRunner(rt *runtime, idx int, spec SourceSpec) *sourceRunner {
	s := &sourceRunner{
		rt: rt, idx: idx, spec: spec, src: spec.Source,
		log:       rt.log.With("source", spec.Name),
		cp:        checkpoint.New(),
		byName:    map[string]checkpoint.Partition{},
		credit:    make(chan struct{}, 1),
		table:     map[checkpoint.BatchID]batchInfo{},
		rewindSig: make(chan struct{}, 1),
		reqs:      make(chan hostReq),
		notify:    make(chan struct{}, 1),
		cpDone:    make(chan struct{}),
	}
	s.iss = s.cp.NewIssuer()
	s.mIssued = rt.m.issued.WithLabelValues(spec.Name)
	s.mRecordsOut = rt.m.recordsOut.WithLabelValues(spec.Name)
	s.batches = make(batchList, freeListSize)
	return s
}
